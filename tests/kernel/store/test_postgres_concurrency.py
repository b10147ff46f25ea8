"""The PostgreSQL store under real concurrency (issue 15, "Prove it").

- **Race**: 8 writer processes (``tests/support/store_writer.py race``) × 200 appends on ONE
  session, each chaining onto the tail it read and retrying on ``ConflictError``, while this
  process follows the ledger (:class:`ChainWatcher`) and checks every line it sees: never a
  gap, a line that vanishes or a broken link, even mid-race. Afterwards: every acknowledged
  append is at the seq and head it was told, no seq twice, count == acknowledged, every lost
  attempt got ``ConflictError`` (exit 4) and left nothing, the chain verifies, the kernel folds.
- **Stale writers** (Hypothesis): three stores (three connections) on one session; an append
  succeeds exactly when its expected last seq is the real one, every connection sees every
  commit at once (no cached tail), and a loser writes nothing.
- **CLI race**: real ``tht propose`` processes on a ``store: {kind: postgres}`` workspace, with
  the session's head row locked by this test until every one of them has loaded its state and
  is waiting to append: exactly one wins, every loser exits 4 with a ``conflict`` error object
  and writes nothing (the fs store's ``tests/kernel/test_concurrency.py``, on PostgreSQL).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.clock import FixedClock, SeededIds
from kernel.errors import ConflictError
from kernel.events import decode_event
from kernel.ledger_verify import line_hash
from kernel.store.postgres import PostgresStore
from kernel.workflow_kernel import WorkflowKernel
from tests.kernel.store.postgres_support import fresh_database
from tests.support.postgres import PostgresServer
from tests.support.store_writer import (
    URL_ENV,
    ChainWatcher,
    ack_rows,
    launch,
    receipt,
    started_session,
    wait_until,
)

WRITERS = 8
APPENDS = 200
RACERS = 4
CI = settings.get_current_profile_name() == "ci"


def _kernel(dsn: str, workspace: str, cache: Path) -> tuple[WorkflowKernel, PostgresStore]:
    store = PostgresStore(dsn, workspace=workspace)
    kernel = WorkflowKernel(store, clock=FixedClock(), ids=SeededIds(1), workflow_cache=cache)
    return kernel, store


# --------------------------------------------------------------------------- race


def _race(
    dsn: str, workspace: str, session: str, folder: Path, watcher: ChainWatcher
) -> list[dict[str, Any]]:
    go, acks = folder / "go", folder / "acks.txt"
    writers = [
        launch(
            dsn,
            *("race", workspace, session, f"w{i}", str(APPENDS), str(go), str(acks)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(WRITERS)
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None
            assert writer.stdout.readline() == "ready\n", writer.communicate()[1]
        go.touch()
        while any(w.poll() is None for w in writers):
            watcher.step()  # a reader during the race: never a gap, never a torn chain
            time.sleep(0.002)
        results = []
        for writer in writers:
            out, err = writer.communicate(timeout=30)
            assert writer.returncode == 0, err
            results.append(json.loads(out))
        return results
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()


def test_eight_processes_racing_on_one_session_leave_no_gap_or_duplicate(
    pg_dsn: str, workspace_id: str, tmp_path: Path
) -> None:
    kernel, store = _kernel(pg_dsn, workspace_id, tmp_path / "cache")
    session = started_session(kernel)
    ledger = store.ledger(session)
    watcher = ChainWatcher(ledger)
    initial = watcher.seq
    results = _race(pg_dsn, workspace_id, session, tmp_path, watcher)
    watcher.step()
    total = WRITERS * APPENDS
    assert watcher.seq == initial + total, f"{watcher.seq - initial} events for {total} acks"
    acked = ack_rows(tmp_path / "acks.txt")
    assert len(acked) == total
    seqs = sorted(int(row[3]) for row in acked)
    assert seqs == list(range(initial + 1, initial + total + 1)), "a seq acknowledged twice"
    per_writer: dict[str, list[tuple[int, int]]] = {}
    for writer_id, n, attempt, seq, head in acked:
        line = watcher.lines[int(seq)]
        assert line_hash(line) == head, f"acknowledged seq {seq} is not what {writer_id} wrote"
        assert decode_event(line).subject == f"{writer_id}-{n}-a{attempt}"
        per_writer.setdefault(writer_id, []).append((int(n), int(seq)))
    for writer_id, rows in per_writer.items():
        assert [n for n, _ in rows] == list(range(APPENDS)), writer_id
        assert [s for _, s in rows] == sorted(s for _, s in rows), "commit order != seq order"
    lost = [subject for result in results for subject in result["lost"]]
    assert len(lost) >= WRITERS - 1, "the first append of every writer but one must lose"
    assert not set(watcher.subjects()) & set(lost), "an attempt that got ConflictError landed"
    assert {code for result in results for code in result["exit_codes"]} == {4}
    report = ledger.verify()
    assert report.ok, report.problems
    state = kernel.load(session).state
    assert state.last_seq == initial + total and not state.integrity
    store.close()
    print(f"{len(lost)} lost races retried")


# --------------------------------------------------------------------------- stale writers


@pytest.fixture(scope="module")
def stale_session(
    pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    kernel, store = _kernel(pg_dsn, "w-stale", tmp_path_factory.mktemp("cache"))
    yield pg_dsn, started_session(kernel)
    store.close()


@settings(
    max_examples=40 if CI else 15, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=12))
def test_only_an_append_on_the_real_tail_succeeds_on_any_connection(
    stale_session: tuple[str, str], steps: list[tuple[int, int]]
) -> None:
    dsn, session = stale_session
    stores = [PostgresStore(dsn, workspace="w-stale") for _ in range(3)]
    try:
        ledgers = [store.ledger(session) for store in stores]
        clock = FixedClock()
        for i, (who, behind) in enumerate(steps):
            last = ledgers[(who + 1) % 3].tail().last_seq  # another connection's view
            assert {ledger.tail().last_seq for ledger in ledgers} == {last}
            draft = receipt(f"stale-{last}-{i}")
            if behind == 0:
                done = ledgers[who].append([draft], expected_last_seq=last, clock=clock)
                assert done.events[-1].seq == last + 1
                continue
            expected = last - behind if i % 2 else last + behind  # stale, or from the future
            with pytest.raises(ConflictError) as lost:
                ledgers[who].append([draft], expected_last_seq=expected, clock=clock)
            assert lost.value.exit_code == 4
            assert ledgers[(who + 2) % 3].tail().last_seq == last, "a loser wrote something"
        assert ledgers[0].verify().ok
    finally:
        for store in stores:
            store.close()


# --------------------------------------------------------------------------- CLI race


def _cli_workspace(folder: Path, workspace_id: str) -> Path:
    from kernel.workspace import init_workspace

    root = folder / "ws"
    init_workspace(root)
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"\nstore: {{kind: postgres, url_env: {URL_ENV}, workspace: {workspace_id}}}\n")
    return root


def _cli_env(root: Path, dsn: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update({"THT_HOME": str(root / ".home"), URL_ENV: dsn})
    return env


def _waiting_on_locks(server: PostgresServer, dbname: str) -> int:
    """How many store connections (``application_name`` tht) wait on a lock: the head row."""
    rows = server.execute(
        "postgres",
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"
        " AND application_name = 'tht'",
        (dbname,),
    )
    return int(rows[0][0])


def test_every_loser_of_a_cli_append_race_on_postgres_exits_4_and_writes_nothing(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    import psycopg

    dsn = fresh_database(postgres_server, "cli_race")
    dbname = dsn.rsplit("/", 1)[1]
    root = _cli_workspace(tmp_path, "w-cli-race")
    kernel, store = _kernel(dsn, "w-cli-race", tmp_path / "cache")
    session = started_session(kernel)
    before = store.ledger(session).tail().last_seq
    proposal = tmp_path / "confirm.json"
    proposal.write_text(json.dumps({"kind": "confirm", "prompt": "Approve the clarifications?"}))
    argv = ["propose", "disambiguation", "--file", str(proposal), session]
    with psycopg.connect(dsn) as holder:  # one transaction: the head row stays locked
        holder.execute(
            "SELECT 1 FROM tht_ledgers WHERE workspace = %s AND ledger = %s FOR UPDATE",
            ("w-cli-race", f"session:{session}"),
        )
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tht", *argv, "--workspace", str(root), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_cli_env(root, dsn),
            )
            for _ in range(RACERS)
        ]

        def all_waiting() -> bool:
            early = [p for p in procs if p.poll() is not None]
            assert not early, f"exited before reaching the lock: {early[0].communicate()}"
            return _waiting_on_locks(postgres_server, dbname) == RACERS

        wait_until(all_waiting, 60, "the racers never all waited on the head row")
        holder.rollback()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        results.append((proc.returncode, json.loads(out), err))
    codes = sorted(code for code, _, _ in results)
    assert codes == [0] + [4] * (RACERS - 1), [(c, e) for c, _, e in results]
    for code, body, stderr in results:
        if code == 4:
            assert body["error"]["code"] == "conflict" and body["error"]["exit_code"] == 4
            assert stderr.startswith("error: ") and "Traceback" not in stderr
    ((winner, _),) = [(body, err) for code, body, err in results if code == 0]
    ledger = store.ledger(session)
    assert winner["events"] and ledger.tail().last_seq == before + len(winner["events"])
    assert ledger.verify().ok
    store.close()
