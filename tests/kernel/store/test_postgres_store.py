"""What only the PostgreSQL store has (the shared contract is tests/contract/): NOTIFY on append,
workspaces that never see each other, the head row as the anchor of the append's fast path,
reconnection, durable commits, the query columns beside the exact line bytes, fork safety."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any

import psycopg
import pytest

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from kernel.ledger import genesis_hash, line_hash
from kernel.store.postgres import (
    PostgresStore,
    init_schema,
    listen,
    schema_version,
)
from kernel.store.postgres_ledger import PostgresLedger
from kernel.store.postgres_libpq import PgError
from kernel.store.postgres_listen import parse_notice
from kernel.store.postgres_schema import LATEST
from tests.kernel.store import postgres_support as pg
from tests.support.postgres import PostgresServer
from tests.support.store_drafts import SESSION
from tests.support.store_drafts import created as _created
from tests.support.store_drafts import receipt as _receipt

OTHER = "01KDVDNA01V3RS3DTR98H6BCFN"


def _started(store: PostgresStore, session: str = SESSION, receipts: int = 2) -> PostgresLedger:
    store.create_session(session, b"workflow: yes\n")
    ledger = store.ledger(session)
    ledger.append([_created(session)], expected_last_seq=0, clock=FixedClock())
    for i in range(receipts):
        ledger.append([_receipt(f"r{i}")], expected_last_seq=1 + i, clock=FixedClock())
    return ledger


def _sql(store: PostgresStore, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    def work(conn: Any) -> list[tuple[Any, ...]]:
        return conn.execute(sql, params).fetchall()

    return store.database.run("test SQL", work)


# --------------------------------------------------------------------------- NOTIFY


def test_every_commit_notifies_its_workspace_once_with_its_last_seq(
    pg_store: PostgresStore, pg_dsn: str
) -> None:
    elsewhere = PostgresStore(pg_dsn, workspace=pg_store.workspace + "-other")
    with listen(pg_dsn, workspace=pg_store.workspace) as notices:
        assert notices.wait(timeout=0.05) == []
        ledger = _started(pg_store, receipts=0)
        ledger.append(
            [_receipt("a"), _receipt("b"), _receipt("c")], expected_last_seq=1, clock=FixedClock()
        )
        _started(elsewhere)  # another workspace on the same server: not ours
        pg_store.workspace_ledger("catalog").append_lines([], expected_last_seq=0)  # no commit
        with pytest.raises(ConflictError):
            ledger.append([_receipt("d")], expected_last_seq=1, clock=FixedClock())
        got = []
        while len(got) < 2:
            more = notices.wait(timeout=5)
            assert more, f"only {got} arrived"
            got += more
        assert [(n.ledger, n.seq, n.session_id) for n in got] == [
            (f"session:{SESSION}", 1, SESSION),
            (f"session:{SESSION}", 4, SESSION),
        ]
        ledger.repair(cut_seq=3)  # a repair moves the ledger too
        assert [n.seq for n in notices.wait(timeout=5)] == [1]
        assert notices.wait(timeout=0.05) == []
    elsewhere.close()


def test_a_notice_is_parsed_only_when_tht_sent_it() -> None:
    notice = parse_notice(f"team:session:{SESSION}:12")
    assert notice is not None and (notice.workspace, notice.seq) == ("team", 12)
    assert notice.session_id == SESSION
    catalog = parse_notice("team:catalog:3")
    assert catalog is not None and catalog.session_id is None and catalog.ledger == "catalog"
    for junk in ("", "x", "team:catalog:", "team::3", ":catalog:3", "team:catalog:-1"):
        assert parse_notice(junk) is None, junk


# --------------------------------------------------------------------------- workspaces


def test_two_workspaces_on_one_database_never_see_each_other(
    pg_dsn: str, workspace_id: str
) -> None:
    one = PostgresStore(pg_dsn, workspace=f"{workspace_id}-one")
    two = PostgresStore(pg_dsn, workspace=f"{workspace_id}-two")
    try:
        _started(one, receipts=3)
        assert one.session_ids() == [SESSION] and two.session_ids() == []
        assert SESSION not in two.session_ids() and not two.exists(SESSION)
        with pytest.raises(NotFoundError):
            two.ledger(SESSION)
        with pytest.raises(NotFoundError):
            two.put_object(SESSION, b"x")
        two.create_session(SESSION, b"another workflow")  # the same id, another workspace
        assert two.ledger(SESSION).read().events == []
        assert two.workflow_bytes(SESSION) == b"another workflow"
        assert one.workflow_bytes(SESSION) == b"workflow: yes\n"
        digest = one.put_object(SESSION, b"secret of one")
        with pytest.raises(NotFoundError):
            two.get_object(SESSION, digest)
        one.write_cache(SESSION, b"one's cache")
        assert two.read_cache(SESSION) is None
        one.put_workspace_object("catalog", b"one's snapshot")
        assert two.workspace_object_ids("catalog") == []
        assert len(one.ledger(SESSION).read().events) == 4
        assert one.session_ids() == two.session_ids() == [SESSION]
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("bad", ["", "a:b", "white space", "x" * 65, "-leading", "é"])
def test_a_workspace_id_is_checked(pg_dsn: str, bad: str) -> None:
    with pytest.raises(UsageError):
        PostgresStore(pg_dsn, workspace=bad)


# --------------------------------------------------------------------------- the head row


def test_an_append_never_lands_on_a_line_edited_behind_the_store(pg_store: PostgresStore) -> None:
    """The fast path (the ledger remembers the head it wrote) checks the last line itself."""
    ledger = _started(pg_store)
    lines = pg.lines(pg_store, f"session:{SESSION}")
    pg.damage_line(pg_store, f"session:{SESSION}", 3, lines[2].replace(b'"r1"', b'"zz"'))
    damaged = pg.dump(pg_store, f"session:{SESSION}")
    with pytest.raises(IntegrityError, match="head row"):
        ledger.append([_receipt("c")], expected_last_seq=3, clock=FixedClock())
    assert pg.dump(pg_store, f"session:{SESSION}") == damaged
    assert [p.code for p in ledger.verify().problems] == ["head_anchor"]


def test_rows_removed_behind_the_store_are_found_and_never_appended_to(
    pg_store: PostgresStore,
) -> None:
    ledger = _started(pg_store)
    _sql(
        pg_store,
        "DELETE FROM tht_ledger_events WHERE workspace = %s AND ledger = %s AND seq = 3",
        pg_store.workspace,
        f"session:{SESSION}",
    )
    report = ledger.verify()
    assert [p.code for p in report.problems] == ["head_anchor"]  # seq 3 was acknowledged
    for expected in (2, 3):
        with pytest.raises((IntegrityError, ConflictError)):
            ledger.append([_receipt("c")], expected_last_seq=expected, clock=FixedClock())
    assert len(pg.lines(pg_store, f"session:{SESSION}")) == 2
    done = ledger.repair()
    assert done.missing == (3, 3) and done.moved == b""
    assert ledger.verify().ok
    assert ledger.append([_receipt("c")], expected_last_seq=2, clock=FixedClock()).head


def test_a_repair_keeps_what_it_cuts_in_the_quarantine_table(pg_store: PostgresStore) -> None:
    ledger = _started(pg_store, receipts=3)
    lines = pg.lines(pg_store, f"session:{SESSION}")
    done = ledger.repair(cut_seq=3)
    assert done.moved == lines[2] + b"\n" + lines[3] + b"\n"
    assert done.last_seq == 2 and done.missing == (3, 4)
    rows = pg.dump(pg_store, f"session:{SESSION}")["quarantine"]
    assert rows == [(3, lines[2]), (4, lines[3])]
    assert ledger.read_anchor() == (2, line_hash(lines[1]))
    assert ledger.verify().ok


def test_a_workspace_ledger_has_no_head_row_until_written(pg_store: PostgresStore) -> None:
    ledger = pg_store.workspace_ledger("catalog")
    assert ledger.read_anchor() is None and not ledger.exists()
    assert ledger.tail().head == genesis_hash("workspace-catalog")
    digest = pg_store.put_workspace_object("catalog", b"snapshot")  # its row, not its events
    assert ledger.read_anchor() is None and not ledger.exists()
    assert pg_store.get_workspace_object("catalog", digest) == b"snapshot"


# --------------------------------------------------------------------------- connections


def test_a_broken_connection_is_reopened_once_and_an_append_lands_once(
    pg_store: PostgresStore,
) -> None:
    ledger = _started(pg_store)
    killer = psycopg.connect(pg_store.database.dsn, autocommit=True)

    def kill() -> None:
        pid = pg_store.database.run("pid", lambda conn: conn.backend_pid)
        killer.execute("SELECT pg_terminate_backend(%s)", (pid,))

    kill()
    assert len(ledger.read().events) == 3  # a read reconnects
    kill()
    done = ledger.append([_receipt("after")], expected_last_seq=3, clock=FixedClock())
    assert done.events[0].seq == 4
    kill()
    ledger.close()  # the slow path (row lock in a transaction) reconnects too
    done = ledger.append([_receipt("again")], expected_last_seq=4, clock=FixedClock())
    assert [e.seq for e in ledger.read().events] == [1, 2, 3, 4, 5] and ledger.verify().ok
    killer.close()


def test_an_append_whose_acknowledgement_was_lost_is_not_written_twice(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit happened, then the connection broke before the answer: the ledger looks on
    a new connection, finds its exact lines and acknowledges them (no duplicate, no conflict)."""
    ledger = _started(pg_store)
    original = PostgresLedger._insert
    calls = []

    def committed_then_lost(self: PostgresLedger, conn: Any, *args: Any) -> bool:
        done = original(self, conn, *args)
        calls.append(done)
        conn.close()
        raise PgError("server closed the connection unexpectedly", lost=True)

    monkeypatch.setattr(PostgresLedger, "_insert", committed_then_lost)
    result = ledger.append([_receipt("once")], expected_last_seq=3, clock=FixedClock())
    monkeypatch.undo()
    assert calls == [(True, False)]  # the head moved; no view listens
    events = ledger.read().events
    assert [e.seq for e in events] == [1, 2, 3, 4] and events[-1] == result.events[0]
    assert ledger.verify().ok


def test_commits_are_durable_whatever_the_server_default(pg_store: PostgresStore) -> None:
    """The test server runs with synchronous_commit=off; the store's session turns it on."""
    _started(pg_store, receipts=0)
    assert _sql(pg_store, "SHOW synchronous_commit") == [("on",)]
    other = psycopg.connect(pg_store.database.dsn, autocommit=True)
    assert other.execute("SHOW synchronous_commit").fetchone() == ("off",)
    other.close()


def test_a_forked_child_opens_its_own_connection(pg_store: PostgresStore) -> None:
    ledger = _started(pg_store)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            child = pg_store.ledger(SESSION)
            child.append([_receipt("child")], expected_last_seq=3, clock=FixedClock())
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(ledger.read().events) == 4  # the parent's connection still works
    assert ledger.verify().ok


def test_threads_share_one_connection_without_interleaving(pg_store: PostgresStore) -> None:
    """Slow-path appends (a transaction each) from several threads on one store."""
    _started(pg_store, receipts=0)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        ledger = pg_store.ledger(SESSION)
        try:
            for n in range(10):
                while True:
                    ledger.close()  # forget the head: take the row-lock path every time
                    last = ledger.tail().last_seq
                    try:
                        ledger.append(
                            [_receipt(f"{w}-{n}")], expected_last_seq=last, clock=FixedClock()
                        )
                        break
                    except ConflictError:
                        continue
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    ledger = pg_store.ledger(SESSION)
    assert [e.seq for e in ledger.read().events] == list(range(1, 32)) and ledger.verify().ok


# --------------------------------------------------------------------------- rows


def test_the_query_columns_copy_the_line_and_the_line_is_the_truth(
    pg_store: PostgresStore,
) -> None:
    ledger = _started(pg_store, receipts=0)
    done = ledger.append(
        [_receipt("a\x00b", generation="nul \x00 inside")], expected_last_seq=1, clock=FixedClock()
    )
    rows = _sql(
        pg_store,
        "SELECT seq, type, actor, stage, ts, payload, prev, line FROM tht_ledger_events "
        "WHERE workspace = %s AND ledger = %s ORDER BY seq",
        pg_store.workspace,
        f"session:{SESSION}",
    )
    first, second = rows
    assert first[1:5] == ("session_created", "agent", None, done.events[0].ts)
    assert first[5]["question"] == "How many schools?"
    assert second[5] is None  # jsonb cannot hold \u0000; the line can
    assert second[7] == ev.encode_event(done.events[0]) and second[6] == line_hash(first[7])
    assert ledger.read().events[1].subject == "a\x00b"
    assert ledger.verify().ok


# --------------------------------------------------------------------------- schema


def test_the_schema_is_versioned_idempotent_and_required(postgres_server: PostgresServer) -> None:
    dsn = postgres_server.dsn(postgres_server.create_database("tht_store_schema"))
    assert schema_version(dsn) == 0
    with pytest.raises(UsageError, match="tht store init"):
        PostgresStore(dsn, workspace="w").session_ids()
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(init_schema(dsn))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    every = ["0001_ledgers_objects_caches", "0002_outbox", "0003_write_rules"]
    assert sorted(results, key=len) == [[], [], every]
    assert schema_version(dsn) == LATEST == 3
    assert init_schema(dsn) == []
    assert PostgresStore(dsn, workspace="w").session_ids() == []
    postgres_server.execute(
        "tht_store_schema", "INSERT INTO tht_schema_migrations (version, name) VALUES (99, 'x')"
    )
    with pytest.raises(UsageError, match="newer"):
        PostgresStore(dsn, workspace="w").session_ids()


def test_importing_the_store_imports_no_driver() -> None:
    probe = (
        "import sys\n"
        "import kernel.store.postgres as pg\n"
        "pg.PostgresStore('postgresql://u:p@127.0.0.1:1/d', workspace='w')\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
