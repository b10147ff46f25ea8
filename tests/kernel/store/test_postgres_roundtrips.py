"""How many statements the PostgreSQL store sends for what the kernel asks (counted on the
driver's connection, never timed), that the lines it reads beside another answer are handed
out exactly when a fresh read would give the same bytes, and that ``tht session status`` on
this store never imports psycopg (its import alone costs more than the status may)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.clock import FixedClock, SeededIds
from kernel.store.postgres import PostgresStore
from kernel.store.postgres_driver import Connection
from kernel.workflow_kernel import WorkflowKernel
from tests.support.kernel_env import receipt_outcome
from tests.support.store_writer import receipt, started_session

REPO = Path(__file__).resolve().parents[3]
Fixture = tuple[str, str, int]  # the workspace id, the session, its last seq


class _Counter:
    """Every statement a connection sends (executed or posted), in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        execute, post = Connection.execute, Connection.post

        def counted_execute(conn: Connection, sql: str, params: Any = None) -> Any:
            self.sent.append(" ".join(sql.split()))
            return execute(conn, sql, params)

        def counted_post(conn: Connection, sql: str, params: Any = None) -> None:
            self.sent.append("posted: " + " ".join(sql.split()))
            post(conn, sql, params)

        monkeypatch.setattr(Connection, "execute", counted_execute)
        monkeypatch.setattr(Connection, "post", counted_post)

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return sent


@pytest.fixture
def session_store(pg_dsn: str, workspace_id: str, tmp_path: Path) -> Iterator[Fixture]:
    """A session with a few receipts and a warm status cache (written by a first display), and
    its last seq."""
    store = PostgresStore(pg_dsn, workspace=workspace_id)
    kernel = WorkflowKernel(store, clock=FixedClock(), ids=SeededIds(1), workflow_cache=tmp_path)
    session = started_session(kernel)
    for n in range(3):
        kernel.apply_outcome(session, "disambiguation", receipt_outcome(f"r{n}"), actor="agent")
    loaded, _ = kernel.load_for_display(session)
    store.close()
    yield workspace_id, session, loaded.state.last_seq


def _kernel(dsn: str, workspace: str, cache: Path) -> tuple[WorkflowKernel, PostgresStore]:
    store = PostgresStore(dsn, workspace=workspace)
    return WorkflowKernel(store, clock=FixedClock(), ids=SeededIds(1), workflow_cache=cache), store


def test_status_with_a_warm_cache_is_five_statements_on_a_new_connection(
    pg_dsn: str, session_store: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, session, last = session_store
    counter = _Counter(monkeypatch)
    kernel, store = _kernel(pg_dsn, workspace, tmp_path)
    store.connect()
    assert len(counter.take()) == 1  # durability and the schema version, at once
    loaded, problems = kernel.load_for_display(session)
    sent = counter.take()
    assert not problems and loaded.state.last_seq == last
    assert len(sent) <= 4, sent  # the session, its cache, the rows after the cache, the head
    again, _ = kernel.load_for_display(session)  # a server's view: the session is known,
    assert len(counter.take()) <= 5 and again.state == loaded.state  # its first line read again
    store.close()


def test_status_after_new_events_reads_only_them_in_a_bounded_number_of_statements(
    pg_dsn: str, session_store: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, session, last = session_store
    writer = PostgresStore(pg_dsn, workspace=workspace)  # appends, never touching the cache
    writer.ledger(session).append(
        [receipt("new-1"), receipt("new-2")], expected_last_seq=last, clock=FixedClock()
    )
    writer.close()
    counter = _Counter(monkeypatch)
    kernel, store = _kernel(pg_dsn, workspace, tmp_path)
    loaded, problems = kernel.load_for_display(session)
    sent = counter.take()
    assert not problems and loaded.state.last_seq == last + 2
    after = [s for s in sent if "seq > %(after)s" in s]
    assert len(after) == 1, sent  # the new rows, once: never the whole ledger
    assert len(sent) <= 8, sent  # set-up, session, cache, its line, the rows, cache, tail, head
    store.close()


def test_lines_read_beside_another_answer_are_the_ones_a_fresh_read_gives(
    pg_dsn: str, session_store: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, session, _ = session_store
    fresh = PostgresStore(pg_dsn, workspace=workspace)
    truth = fresh.ledger(session)
    first, tail = truth.read().events[0], truth.tail()
    truth_line = fresh.ledger(session).lines_after(tail.last_seq - 1, tail.last_seq - 1)
    fresh.close()
    counter = _Counter(monkeypatch)
    store = PostgresStore(pg_dsn, workspace=workspace)
    ledger = store.ledger(session)  # its existence, workflow and first line: one statement
    assert ledger.first_event() == first and len(counter.take()) == 2  # set-up + that one
    assert ledger.first_event() == first and len(counter.take()) == 1  # handed out once
    assert store.read_cache(session) is not None and len(counter.take()) == 1
    assert [ledger.line_at(tail.last_seq, tail.last_seq)] == truth_line
    assert counter.take() == []  # the last line came with the cache ...
    assert [ledger.line_at(tail.last_seq, tail.last_seq)] == truth_line
    assert len(counter.take()) == 1  # ... once
    store.read_cache(session)
    assert ledger.line_at(tail.last_seq - 1, tail.last_seq - 1) is not None  # another line
    assert len(counter.take()) == 2
    store.close()


def test_a_repair_forgets_the_lines_it_read_beside(pg_dsn: str, session_store: Fixture) -> None:
    workspace, session, _ = session_store
    store = PostgresStore(pg_dsn, workspace=workspace)
    ledger = store.ledger(session)
    tail = ledger.tail()
    assert store.read_cache(session) is not None  # the last line, seen
    ledger.repair(cut_seq=tail.last_seq)  # that line goes to the quarantine
    assert ledger.line_at(tail.last_seq, tail.last_seq) is None  # read afresh: it is gone
    store.close()


def test_session_status_on_postgres_never_imports_psycopg(
    pg_dsn: str, session_store: Fixture, tmp_path: Path
) -> None:
    workspace, session, _ = session_store
    root = tmp_path / "ws"
    from kernel.workspace import init_workspace

    init_workspace(root)
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"\nstore: {{kind: postgres, url_env: THT_P15_URL, workspace: {workspace}}}\n")
    probe = (
        "import sys\n"
        "from tht.cli import main\n"
        f"sys.argv = ['tht', 'session', 'status', '{session}', '--json', '--workspace', "
        f"{str(root)!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\n"
        "heavy = ('psycopg', 'pydantic', 'cryptography')  # an unsigned workspace: no signing\n"
        "drivers = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print('MODULES', code, ','.join(drivers))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_P15_URL=pg_dsn, THT_HOME=str(tmp_path / "home"))
    for _ in range(2):  # the first compiles the workflow snapshot into .tht/cache (pydantic)
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True
        )
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("MODULES")]
    assert line == ["MODULES 0 "] or line == ["MODULES None "], (done.stdout, done.stderr)
    assert f'"session":"{session}"' in done.stdout.replace(" ", "")
