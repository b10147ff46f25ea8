"""Notices of appends (kernel/store/postgres_statements.py, postgres_write.py): sent right after
the commit, in a transaction of their own, only while a tht listener holds its workspace's
listening lock — and then by every way a ledger moves. A plain ``LISTEN`` (without the lock)
stands by as the witness of what was sent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import ConflictError
from kernel.store.postgres import PostgresStore, listen
from kernel.store.postgres_driver import Connection
from kernel.store.postgres_ledger import PostgresLedger
from kernel.store.postgres_libpq import PgError
from kernel.store.postgres_statements import CHANNEL, listening_key
from tests.support.store_drafts import SESSION
from tests.support.store_drafts import created as _created
from tests.support.store_drafts import receipt as _receipt


@pytest.fixture
def witness(pg_dsn: str) -> Iterator[Connection]:
    """A plain LISTEN on the channel: it hears every notice sent, and holds no lock."""
    conn = Connection.open(pg_dsn, timeout_s=10)
    conn.execute(f"LISTEN {CHANNEL}")
    yield conn
    conn.close()


def _heard(witness: Connection, workspace: str, *, expect: int, wait: float = 5.0) -> list[str]:
    """The payloads of ``workspace`` heard: waits for ``expect`` of them, then a moment more
    (so one too many shows)."""
    got: list[str] = []
    deadline = time.monotonic() + wait
    while len(got) < expect and time.monotonic() < deadline:
        got += [p for _, p in witness.notifies(timeout=0.2) if p.startswith(workspace + ":")]
    got += [p for _, p in witness.notifies(timeout=0.2) if p.startswith(workspace + ":")]
    return got


def _started(store: PostgresStore) -> PostgresLedger:
    store.create_session(SESSION, b"workflow\n")
    ledger = store.ledger(SESSION)
    ledger.append([_created()], expected_last_seq=0, clock=FixedClock())
    return ledger


def test_nobody_listening_no_notice_is_sent(pg_store: PostgresStore, witness: Connection) -> None:
    ledger = _started(pg_store)
    for n in range(3):
        ledger.append([_receipt(f"r{n}")], expected_last_seq=1 + n, clock=FixedClock())
    ledger.close()  # the slow path too
    ledger.append([_receipt("slow")], expected_last_seq=4, clock=FixedClock())
    assert _heard(witness, pg_store.workspace, expect=0, wait=0.3) == []


def test_while_a_listener_listens_every_way_a_ledger_moves_is_told_after_its_commit(
    pg_store: PostgresStore, pg_dsn: str, witness: Connection
) -> None:
    ws, key = pg_store.workspace, f"session:{SESSION}"
    with listen(pg_dsn, workspace=ws) as notices:
        ledger = _started(pg_store)  # seq 1 (the fast path of a first append)
        ledger.append(
            [_receipt("a"), _receipt("b")], expected_last_seq=1, clock=FixedClock()
        )  # 3: a batch
        ledger.close()
        ledger.append([_receipt("c")], expected_last_seq=3, clock=FixedClock())  # 4: slow path
        with pytest.raises(ConflictError):  # stale: nothing committed, nothing told
            ledger.append([_receipt("x")], expected_last_seq=3, clock=FixedClock())
        copy = pg_store.workspace_ledger("catalog")
        lines = [ev.encode_event(e) for e in _catalog_events()]
        copy.append_lines(lines, expected_last_seq=0)  # a verbatim copy moves a ledger too
        ledger.repair(cut_seq=4)  # back to 3
        heard = _heard(witness, ws, expect=5)
        got: list[tuple[str, int]] = []
        deadline = time.monotonic() + 5
        while len(got) < 5 and time.monotonic() < deadline:
            got += [(n.ledger, n.seq) for n in notices.wait(timeout=0.5)]
    assert heard == [f"{ws}:{key}:1", f"{ws}:{key}:3", f"{ws}:{key}:4", f"{ws}:catalog:1",
                     f"{ws}:{key}:3"]  # fmt: skip
    assert got == [(key, 1), (key, 3), (key, 4), ("catalog", 1), (key, 3)]


def _catalog_events() -> list[ev.Event]:
    draft = ev.EventDraft(
        type="catalog_sync_started",
        actor="agent",
        subject="run-1",
        payload=cev.CatalogSyncStartedPayload(
            run="run-1", binding="sqlite:///db", dialect="sqlite"
        ),
    )
    return [ev.stamp(draft, seq=1, ts="2026-01-01T00:00:00.000Z", prev=_catalog_genesis())]


def _catalog_genesis() -> str:
    from kernel.ledger_verify import genesis_hash

    return genesis_hash("workspace-catalog")


def test_the_listening_lock_lives_with_the_listener_and_only_for_its_workspace(
    pg_store: PostgresStore, pg_dsn: str, witness: Connection
) -> None:
    ws = pg_store.workspace
    ledger = _started(pg_store)
    with listen(pg_dsn, workspace=ws + "-other"):  # another workspace's listener
        ledger.append([_receipt("a")], expected_last_seq=1, clock=FixedClock())
        assert _heard(witness, ws, expect=0, wait=0.3) == []
    listener = listen(pg_dsn, workspace=ws)
    listener.start()
    key = listening_key(ws) & 0xFFFFFFFFFFFFFFFF  # pg_locks shows a bigint key as two oids

    def held() -> list[tuple[Any, ...]]:
        return witness.execute(
            "SELECT mode, granted FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
            "AND classid::bigint = %s AND objid::bigint = %s",
            (key >> 32, key & 0xFFFFFFFF),
        ).fetchall()

    assert held() == [("ShareLock", True)]
    ledger.append([_receipt("b")], expected_last_seq=2, clock=FixedClock())
    assert _heard(witness, ws, expect=1) == [f"{ws}:session:{SESSION}:3"]
    listener.close()  # its connection ends: the lock with it, once the server saw it end
    deadline = time.monotonic() + 10
    while held() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert held() == []
    ledger.append([_receipt("c")], expected_last_seq=3, clock=FixedClock())
    assert _heard(witness, ws, expect=0, wait=0.3) == []


def test_an_append_found_to_have_landed_after_a_lost_connection_still_tells(
    pg_store: PostgresStore, pg_dsn: str, witness: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = pg_store.workspace
    ledger = _started(pg_store)
    original = PostgresLedger._insert

    def committed_then_lost(self: PostgresLedger, conn: Connection, *args: object) -> object:
        original(self, conn, *args)  # type: ignore[arg-type]
        conn.close()
        raise PgError("server closed the connection unexpectedly", lost=True)

    with listen(pg_dsn, workspace=ws):
        monkeypatch.setattr(PostgresLedger, "_insert", committed_then_lost)
        done = ledger.append([_receipt("once")], expected_last_seq=1, clock=FixedClock())
        monkeypatch.undo()
        assert done.events[0].seq == 2
        assert _heard(witness, ws, expect=1) == [f"{ws}:session:{SESSION}:2"]


def test_listening_keys_differ_by_workspace_and_fit_a_bigint() -> None:
    keys = {listening_key(f"w{n}") for n in range(1000)}
    assert len(keys) == 1000
    assert all(-(2**63) <= k < 2**63 for k in keys)
    assert listening_key("team") == listening_key("team")
