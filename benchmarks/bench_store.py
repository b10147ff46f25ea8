"""PostgreSQL store benchmarks (``python -m benchmarks store``), each a ratio against a baseline
measured in the same run, on a PostgreSQL server this benchmark starts for itself (initdb in a
temporary folder, tests/support/postgres.py) with a deployment's durability settings — ``fsync``
and ``synchronous_commit`` on — and removes at the end (issue 15, "Performance"):

1. **append**: durable single-event appends through ``PostgresStore`` (expected-seq check,
   chain, commit) vs a bare psycopg ``INSERT`` + ``COMMIT`` loop of the same line bytes and
   payload into a table of the same shape, on the same server, in alternating blocks. Target
   rate ≥ 0.8×.
2. **status**: ``tht session status --json`` (a new process: it connects, checks the schema
   version, reads the rows after the cached seq) on a 10,000-event session with a warm status
   cache, on a ``store: {kind: postgres}`` workspace vs the same session on the filesystem
   store. Target ≤ 1.5×. Beside it, reported: ``WorkflowKernel.load_for_display`` in one
   process on a store connected once (a server's view: the cost of the store itself), with 0
   and with 10 events new since the cache (incremental: only those rows are read).
3. **writers**: 8 writer processes on 8 sessions at once (tests/support/store_writer.py) vs one
   writer process alone: aggregate appends/s and the ratio (reported, no target; group commit
   and the machine's cores decide it).
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from benchmarks.bench_kernel import _report, _tht_bin, _wall
from benchmarks.legal_ledger import write_legal_ledger
from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.store.base import SessionStore
from kernel.workflow import default_workflow_path, load_workflow
from kernel.workflow_kernel import WorkflowKernel
from tests.support.postgres import PostgresServer, PostgresUnavailable, find_bindir
from tests.support.store_writer import URL_ENV, receipt

REPO = Path(__file__).resolve().parents[1]
WORKSPACE = "ws-bench"
APPEND_BLOCK = 25
APPEND_PAIRS = 24
STATUS_EVENTS = 10_000
STATUS_RUNS = 15
NEW_EVENTS = 10
WRITERS = 8
WRITER_APPENDS = 300
_SESSION = "01BENCHSTORE{:014d}"


class DurableServer(PostgresServer):
    """The test server (tests/support/postgres.py) without its speed-ups: ``fsync``,
    ``synchronous_commit`` and ``full_page_writes`` keep PostgreSQL's defaults (on), so a
    commit waits for its WAL flush as it does in a deployment."""

    def start(self, attempts: int = 3) -> None:
        problems = []
        for _ in range(attempts):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = int(probe.getsockname()[1])
            options = (
                f"-c listen_addresses={self.host} -p {self.port} -c unix_socket_directories='' "
                "-c max_connections=60 -c shared_buffers=128MB"
            )
            done = self.pg_ctl("start", "-w", "-t", "60", "-l", str(self.logfile), "-o", options)
            if done.returncode == 0:
                self._running = True
                self._wait_ready()
                return
            problems.append(f"pg_ctl start ({done.returncode}): {done.stderr.strip()}")
        raise PostgresUnavailable("the benchmark's server did not start: " + " | ".join(problems))


def _store(dsn: str) -> SessionStore:
    from kernel.store.postgres import PostgresStore

    return PostgresStore(dsn, workspace=WORKSPACE)


def _close(store: SessionStore) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()


# --------------------------------------------------------------------------- 1. append


def bench_append(dsn: str, workflow_bytes: bytes) -> float:
    import psycopg

    store = _store(dsn)
    session = _SESSION.format(1)
    store.create_session(session, workflow_bytes)
    ledger = store.ledger(session)
    clock = FixedClock()
    draft = receipt("consulted")
    line = ev.encode_event(ev.stamp(draft, seq=1, ts="2026-01-01T00:00:00.000Z", prev="0" * 64))
    payload = msgspec.json.encode(draft.payload).decode()
    bare = psycopg.connect(dsn)
    with bare.cursor() as cur:
        settings = [
            cur.execute(f"SHOW {name}").fetchone() for name in ("synchronous_commit", "fsync")
        ]
        cur.execute(
            "CREATE TABLE bench_bare (ledger text, seq bigint, line bytea NOT NULL,"
            " payload jsonb NOT NULL, PRIMARY KEY (ledger, seq))"
        )
    bare.commit()
    assert settings == [("on",), ("on",)], f"not a durable server: {settings}"
    seq = bare_seq = 0

    def raw() -> float:
        nonlocal bare_seq
        start = time.perf_counter()
        for _ in range(APPEND_BLOCK):
            bare_seq += 1
            bare.execute(
                "INSERT INTO bench_bare (ledger, seq, line, payload) VALUES (%s, %s, %s, %s)",
                (session, bare_seq, line, payload),
            )
            bare.commit()
        return time.perf_counter() - start

    def through_store() -> float:
        nonlocal seq
        start = time.perf_counter()
        for _ in range(APPEND_BLOCK):
            ledger.append([draft], expected_last_seq=seq, clock=clock)
            seq += 1
        return time.perf_counter() - start

    ratios, raw_times, store_times = [], [], []
    try:
        raw(), through_store()  # warm: statements prepared, pages cached
        for block in range(APPEND_PAIRS):
            if block % 2:
                s, r = through_store(), raw()
            else:
                r, s = raw(), through_store()
            raw_times.append(r)
            store_times.append(s)
            ratios.append(r / s)  # store rate / bare rate
    finally:
        bare.close()
        _close(store)
    ratio = statistics.median(ratios)
    raw_rate = APPEND_BLOCK * len(raw_times) / sum(raw_times)
    store_rate = APPEND_BLOCK * len(store_times) / sum(store_times)
    _report(
        f"durable append to PostgreSQL (synchronous_commit on), single-event batches "
        f"({len(line)} B lines, {APPEND_PAIRS} x {APPEND_BLOCK} each)",
        f"PostgresStore append {store_rate:,.0f}/s ({1e6 / store_rate:.0f} us each)",
        f"bare INSERT+COMMIT {raw_rate:,.0f}/s ({1e6 / raw_rate:.0f} us each)",
        ratio,
        "median of paired blocks; target >= 0.8",
        ratio >= 0.8,
    )
    return ratio


# --------------------------------------------------------------------------- 2. status


def _status_workspaces(dsn: str, folder: Path, workflow_bytes: bytes) -> tuple[str, Path, Path]:
    """The same 10,000-event legal session in an fs workspace and in a postgres one."""
    from kernel.workspace import init_workspace

    session = _SESSION.format(2)
    fs_ws, pg_ws = folder / "ws-fs", folder / "ws-pg"
    for root in (fs_ws, pg_ws):
        init_workspace(root)
    home = fs_ws / "sessions" / session
    write_legal_ledger(home, load_workflow(), session, STATUS_EVENTS)
    (home / "workflow.yaml").write_bytes(workflow_bytes)
    with (pg_ws / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"\nstore: {{kind: postgres, url_env: {URL_ENV}, workspace: {WORKSPACE}}}\n")
    store = _store(dsn)
    store.create_session(session, workflow_bytes)
    lines = (home / "ledger.jsonl").read_bytes().split(b"\n")[:-1]
    store.ledger(session).append_lines(lines, expected_last_seq=0)
    _close(store)
    return session, fs_ws, pg_ws


def bench_status_cli(dsn: str, folder: Path, session: str, fs_ws: Path, pg_ws: Path) -> float:
    """Wall time of ``tht session status --json`` with a warm status cache, each a new
    process (the PostgreSQL one connects, checks the schema, reads the rows after the cache)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("THT_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(THT_HOME=str(folder / "home"), PYTHONPYCACHEPREFIX=str(folder / "pycache"))
    env[URL_ENV] = dsn
    tht = _tht_bin()
    argv = {kind: [*tht, "session", "status", session, "--json", "--workspace", str(ws)]
            for kind, ws in (("fs", fs_ws), ("postgres", pg_ws))}  # fmt: skip
    for kind in argv:
        _wall(argv[kind], env)  # compile, and write the status cache
    runs: dict[str, list[float]] = {kind: [] for kind in argv}
    for _ in range(STATUS_RUNS):  # interleaved, so load on the machine hits both alike
        for kind in argv:
            runs[kind].append(_wall(argv[kind], env))
    fs_s, pg_s = statistics.median(runs["fs"]), statistics.median(runs["postgres"])
    ratio = pg_s / fs_s
    _report(
        f"tht session status --json, {STATUS_EVENTS:,} events, warm status cache",
        f"postgres store {pg_s * 1000:.0f} ms",
        f"fs store {fs_s * 1000:.0f} ms",
        ratio,
        "target <= 1.5",
        ratio <= 1.5,
    )
    return ratio


def bench_status_load(dsn: str, folder: Path, session: str, fs_ws: Path) -> float:
    """``load_for_display`` on one long-lived store each (a server process: connected once):
    the cached fold plus the rows after the cached seq, with 0 and 10 new events."""
    from kernel.store.fs import FileSystemStore
    from kernel.workspace import open_workspace

    fs = open_workspace(fs_ws)  # the CLI's store and caches: both start warm
    stores: dict[str, SessionStore] = {
        "fs": FileSystemStore(fs.sessions_dir, fs.cache_dir, fs.root),
        "postgres": _store(dsn),
    }
    kernels = {
        kind: WorkflowKernel(
            store, clock=FixedClock(), ids=SeededIds(1), workflow_cache=folder / f"wf-{kind}"
        )
        for kind, store in stores.items()
    }

    def display(kind: str) -> float:
        start = time.perf_counter()
        loaded, problems = kernels[kind].load_for_display(session)
        elapsed = time.perf_counter() - start
        assert not problems and loaded.state.last_seq >= STATUS_EVENTS, problems
        return elapsed

    def add_events(kind: str) -> None:
        ledger = stores[kind].ledger(session)
        last = ledger.tail().last_seq
        drafts = [receipt(f"new-{last}-{i}") for i in range(NEW_EVENTS)]
        ledger.append(drafts, expected_last_seq=last, clock=FixedClock())

    for kind in stores:
        display(kind)  # connect, compile the workflow
    warm: dict[str, list[float]] = {kind: [] for kind in stores}
    fresh: dict[str, list[float]] = {kind: [] for kind in stores}
    for _ in range(STATUS_RUNS):
        for kind in stores:
            warm[kind].append(display(kind))
            add_events(kind)
            fresh[kind].append(display(kind))
    for store in stores.values():
        _close(store)
    fs_s, pg_s = statistics.median(warm["fs"]), statistics.median(warm["postgres"])
    fs_new, pg_new = statistics.median(fresh["fs"]), statistics.median(fresh["postgres"])
    ratio = pg_s / fs_s
    _report(
        f"load_for_display in one process (store connected once), {STATUS_EVENTS:,} events",
        f"postgres {pg_s * 1000:.2f} ms ({NEW_EVENTS} new events: {pg_new * 1000:.2f} ms)",
        f"fs {fs_s * 1000:.2f} ms ({NEW_EVENTS} new events: {fs_new * 1000:.2f} ms)",
        ratio,
        f"reported; with {NEW_EVENTS} new events {pg_new / fs_new:.2f}",
        True,
    )
    return ratio


# --------------------------------------------------------------------------- 3. writers


def _writers(dsn: str, sessions: list[str], folder: Path) -> float:
    """Aggregate appends/s of one writer process per session, all released at once."""
    go = folder / f"go-{len(sessions)}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env[URL_ENV] = dsn
    argv = [sys.executable, "-m", "tests.support.store_writer", "bench", WORKSPACE]
    procs = [
        subprocess.Popen(
            [*argv, session, str(WRITER_APPENDS), str(go)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for session in sessions
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    start = time.perf_counter()
    go.touch()
    for proc in procs:
        proc.communicate(timeout=600)
        assert proc.returncode == 0, f"a benchmark writer exited {proc.returncode}"
    return len(sessions) * WRITER_APPENDS / (time.perf_counter() - start)


def bench_writers(dsn: str, folder: Path, workflow_bytes: bytes) -> float:
    store = _store(dsn)
    sessions = [_SESSION.format(100 + i) for i in range(WRITERS + 1)]
    for session in sessions:
        store.create_session(session, workflow_bytes)
    _close(store)
    single = _writers(dsn, sessions[:1], folder)
    many = _writers(dsn, sessions[1:], folder)
    ratio = many / single
    _report(
        f"{WRITERS} writer processes on {WRITERS} sessions, {WRITER_APPENDS} appends each "
        f"({os.cpu_count()} CPUs)",
        f"{many:,.0f} appends/s together",
        f"1 writer {single:,.0f} appends/s",
        ratio,
        "reported; no target",
        True,
    )
    return ratio


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tht-bench-", dir=os.environ.get("THT_BENCH_DIR")))
    server = DurableServer(find_bindir())
    try:
        server.initdb()
        server.start()
        dsn = server.dsn(server.create_database("tht_bench"))
        from kernel.store.postgres import init_schema

        init_schema(dsn)
        workflow_bytes = default_workflow_path().read_bytes()
        bench_append(dsn, workflow_bytes)
        session, fs_ws, pg_ws = _status_workspaces(dsn, folder, workflow_bytes)
        bench_status_cli(dsn, folder, session, fs_ws, pg_ws)
        bench_status_load(dsn, folder, session, fs_ws)
        bench_writers(dsn, folder, workflow_bytes)
    finally:
        server.destroy()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
