"""Schema version 3 of the PostgreSQL store (kernel/store/postgres_schema.py): the rules an
append writes against are kept — as a foreign key and domains, not CHECK constraints the server
re-plans on every append —, a version-2 database is refused until ``tht store init`` upgrades
it, and the upgrade keeps every ledger byte for byte. Also the append statements' four texts
(kernel/store/postgres_statements.py): a ledger's first append and the appends after it."""

from __future__ import annotations

import itertools
from typing import Any

import psycopg
import pytest

from kernel.clock import FixedClock
from kernel.errors import ConflictError, UsageError
from kernel.ledger import genesis_hash
from kernel.store import postgres as postgres_store
from kernel.store import postgres_schema
from kernel.store import postgres_statements as statements
from kernel.store.postgres import PostgresStore, init_schema, schema_version
from kernel.store.postgres_schema import LATEST, MIGRATIONS
from tests.kernel.store import postgres_support as pg
from tests.support.postgres import PostgresServer
from tests.support.store_drafts import SESSION
from tests.support.store_drafts import created as _created
from tests.support.store_drafts import receipt as _receipt

_numbers = itertools.count()


def _database(server: PostgresServer) -> tuple[str, str]:
    name = server.create_database(f"tht_store_schema3_{next(_numbers)}")
    return name, server.dsn(name)


def _started(store: PostgresStore, receipts: int = 3) -> Any:
    store.create_session(SESSION, b"workflow: yes\n")
    ledger = store.ledger(SESSION)
    ledger.append([_created()], expected_last_seq=0, clock=FixedClock())
    for i in range(receipts):
        ledger.append([_receipt(f"r{i}")], expected_last_seq=1 + i, clock=FixedClock())
    return ledger


def _refused(dsn: str, sql: str, *params: object) -> str:
    """The SQLSTATE of a statement the database refuses (nothing written)."""
    with psycopg.connect(dsn, autocommit=True) as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute(sql, params)
    return str(caught.value.sqlstate)


def test_version_3_keeps_every_rule_without_a_check_constraint_on_the_append_path(
    postgres_server: PostgresServer,
) -> None:
    _, dsn = _database(postgres_server)
    assert init_schema(dsn)[-1] == "0003_write_rules" and LATEST == 3
    with psycopg.connect(dsn, autocommit=True) as conn:
        checks = conn.execute(
            "SELECT conrelid::regclass::text FROM pg_constraint WHERE contype = 'c' "
            "AND conrelid IN ('tht_ledgers'::regclass, 'tht_ledger_events'::regclass)"
        ).fetchall()
        conn.execute(
            "INSERT INTO tht_ledgers (workspace, ledger, kind, ledger_id) "
            "VALUES ('w', 'session:S', 'session', 'S')"
        )
    assert checks == []  # the server would re-plan them on every append
    foreign_key, check = "23503", "23514"
    insert = (
        "INSERT INTO tht_ledgers (workspace, ledger, kind, ledger_id) VALUES ('w', %s, %s, 'x')"
    )
    assert _refused(dsn, insert, "bogus:x", "bogus") == foreign_key
    assert _refused(dsn, "UPDATE tht_ledgers SET kind = 'other'") == foreign_key
    assert _refused(dsn, "UPDATE tht_ledgers SET last_seq = -1") == check
    line = (
        "INSERT INTO tht_ledger_events (workspace, ledger, seq, type, actor, ts, prev, line) "
        "VALUES ('w', 'session:S', %s, 't', 'agent', 'ts', 'p', 'x')"
    )
    assert _refused(dsn, line, 0) == check
    assert _refused(dsn, line, -5) == check
    with psycopg.connect(dsn, autocommit=True) as conn:  # the rules let the valid rows in
        conn.execute(line, (1,))
        conn.execute("UPDATE tht_ledgers SET last_seq = 0")
        conn.execute(insert, ("memory", "memory"))


def test_a_version_2_database_is_refused_until_init_upgrades_it_keeping_every_line(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, dsn = _database(postgres_server)
    with monkeypatch.context() as patch:  # the database of the previous tht: versions 1 and 2
        patch.setattr(postgres_schema, "MIGRATIONS", MIGRATIONS[:2])
        assert init_schema(dsn) == ["0001_ledgers_objects_caches", "0002_outbox"]
        patch.setattr(postgres_store, "LATEST", 2)
        old = PostgresStore(dsn, workspace="w")
        ledger = _started(old)
        before = pg.dump(old, f"session:{SESSION}")
        head = ledger.tail()
        old.close()
    assert schema_version(dsn) == 2
    with pytest.raises(
        UsageError, match=r"schema version 2, this tht needs 3: run `tht store init`"
    ):
        PostgresStore(dsn, workspace="w").session_ids()
    assert init_schema(dsn) == ["0003_write_rules"]
    assert init_schema(dsn) == []
    store = PostgresStore(dsn, workspace="w")
    try:
        assert pg.dump(store, f"session:{SESSION}") == before
        ledger = store.ledger(SESSION)
        assert ledger.tail() == head and ledger.verify().ok
        with pytest.raises(ConflictError):
            ledger.append([_receipt("late")], expected_last_seq=3, clock=FixedClock())
        ledger.append([_receipt("r3")], expected_last_seq=4, clock=FixedClock())
        assert ledger.tail().last_seq == 5 and ledger.verify().ok
    finally:
        store.close()


def test_the_first_append_and_the_appends_after_it_have_their_own_statements() -> None:
    after = (statements.APPEND_ONE, statements.APPEND)
    first = (statements.APPEND_ONE_FIRST, statements.APPEND_FIRST)
    assert all("NOT EXISTS" not in sql and "sha256(line)" in sql for sql in after)
    assert all("NOT EXISTS" in sql and "sha256(line)" not in sql for sql in first)
    assert all("last_seq = 0 AND (head IS NULL OR head = %(prev)s)" in sql for sql in first)
    assert all("pg_try_advisory_lock" in sql for sql in after + first)
    assert "RETURNING CASE WHEN pg_try_advisory_lock" in statements.APPEND_ONE


def test_a_ledger_cut_to_nothing_starts_again_with_a_first_append(pg_store: PostgresStore) -> None:
    ledger = _started(pg_store, receipts=1)
    done = ledger.repair(cut_seq=1)
    assert done.last_seq == 0 and ledger.read_anchor() == (0, genesis_hash(SESSION))
    with pytest.raises(ConflictError):  # the head is genesis now: an append after 2 is stale
        ledger.append([_receipt("x")], expected_last_seq=2, clock=FixedClock())
    ledger.append([_created()], expected_last_seq=0, clock=FixedClock())  # one line, first
    ledger.append([_receipt("a"), _receipt("b")], expected_last_seq=1, clock=FixedClock())
    lines = pg.lines(pg_store, f"session:{SESSION}")
    assert len(lines) == 3 and ledger.verify().ok
    other = PostgresStore(pg_store.database.dsn, workspace=f"{pg_store.workspace}-copy")
    try:  # the same session in another workspace: the very same lines chain there
        other.create_session(SESSION, b"workflow: yes\n")
        copy = other.ledger(SESSION)
        with pytest.raises(ConflictError):  # nothing there yet: a copy after line 1 is stale
            copy.append_lines(lines[1:], expected_last_seq=1)
        assert pg.lines(other, f"session:{SESSION}") == []
        copy.append_lines(lines, expected_last_seq=0)  # a batch, first
        ledger.append([_receipt("c")], expected_last_seq=3, clock=FixedClock())
        lines = pg.lines(pg_store, f"session:{SESSION}")
        copy.append_lines(lines[3:], expected_last_seq=3)  # one line, after
        assert pg.lines(other, f"session:{SESSION}") == lines and copy.verify().ok
        assert copy.tail() == ledger.tail()
    finally:
        other.close()
