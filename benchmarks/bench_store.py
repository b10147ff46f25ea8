"""PostgreSQL store benchmarks (``python -m benchmarks store``), each a ratio against a baseline
measured in the same run, on a PostgreSQL server this benchmark starts for itself (initdb in a
temporary folder, tests/support/postgres.py) with a deployment's durability settings — ``fsync``
and ``synchronous_commit`` on — and removes at the end (issue 15, "Performance"):

1. **append**: durable single-event appends through ``PostgresStore`` (expected-seq check,
   chain, commit) vs a bare psycopg ``INSERT`` + ``COMMIT`` loop of the same line bytes and
   payload into a table of the same shape, on the same server, in short alternating blocks
   (ABBA: each pair of blocks sees the same load on the machine; the ratio is the median of
   the pairs'), :data:`APPEND_RUNS` runs (``--runs N``), their min/median/max reported. Target
   rate ≥ 0.8×. With ``--ram`` (or ``THT_BENCH_STORE_RAM=1``) the same again on a second
   throwaway server whose data directory is in ``/dev/shm`` (``fsync`` and
   ``synchronous_commit`` still on: a flush costs next to nothing, so what is compared is the
   CPU each side spends per append — the store's own work shows undiluted). Beside it,
   reported: the same with a live listener (every append then also sends its notice, in a
   transaction of its own). ``--append-only`` runs this one alone.
2. **status**: ``tht session status --json`` (a new process: it loads libpq, connects, reads the
   schema version, then the session in four statements) on a 10,000-event session with a warm
   status cache, on a ``store: {kind: postgres}`` workspace vs the same session on the
   filesystem store. Target ≤ 1.5×. Beside it, reported: ``WorkflowKernel.load_for_display`` in
   one process on a store connected once (a server's view: the cost of the store itself), with
   0 and with 10 events new since the cache (incremental: only those rows are read).
3. **writers**: 8 writer processes on 8 sessions at once (tests/support/store_writer.py) vs one
   writer process alone: aggregate appends/s and the ratio, without and with a live listener
   (reported, no target; group commit and the machine's cores decide it).
4. **notices**: where an append's NOTIFY goes, measured with pgbench (C clients: the server's
   side only) on an append-shaped statement (lock and move the ledger's own head row, insert
   the line, durable commit): 8 clients on 8 ledgers vs 1 client, with the notice inside the
   append's transaction and with it in a transaction of its own right after. PostgreSQL
   serializes the commits of notifying transactions server-wide; this is the measurement behind
   kernel/store/postgres_write.py's choice (reported, no target).
"""

from __future__ import annotations

import itertools
import os
import re
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
APPEND_BLOCK = 5  # appends per timed block; blocks alternate store / bare (ABBA)
APPEND_PAIRS = 160  # per run; the ratio is the median of the pairs' ratios
APPEND_RUNS = 3  # runs on the make-test server (--runs N); each a new pair of ledgers
RAM_FOLDER = Path("/dev/shm")
STATUS_EVENTS = 10_000
STATUS_RUNS = 15
NEW_EVENTS = 10
WRITERS = 8
WRITER_APPENDS = 300
_SESSION = "01BENCHSTORE{:014d}"


class DurableServer(PostgresServer):
    """The test server (tests/support/postgres.py) without its speed-ups: ``fsync``,
    ``synchronous_commit`` and ``full_page_writes`` keep PostgreSQL's defaults (on), so a
    commit waits for its WAL flush as it does in a deployment. ``under``: the folder its data
    directory goes in (``/dev/shm`` for the RAM-backed one: a flush then costs next to nothing,
    and what is left is the CPU each side spends)."""

    def __init__(self, bindir: Path, *, under: Path | None = None) -> None:
        super().__init__(bindir)
        if under is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = Path(tempfile.mkdtemp(prefix="tht-pg-", dir=under))
            self.datadir, self.logfile = self.root / "data", self.root / "server.log"

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


def bench_append(dsn: str, workflow_bytes: bytes, *, runs: int = 1, where: str = "") -> float:
    """Median ratio (store rate / bare rate) of ``runs`` runs, each the median of
    :data:`APPEND_PAIRS` paired blocks; the runs' min/median/max are reported."""
    import psycopg

    from kernel.store.postgres import listen

    store = _store(dsn)
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
            "CREATE TABLE IF NOT EXISTS bench_bare (ledger text, seq bigint, line bytea NOT NULL,"
            " payload jsonb NOT NULL, PRIMARY KEY (ledger, seq))"
        )
    bare.commit()
    assert settings == [("on",), ("on",)], f"not a durable server: {settings}"
    made = itertools.count(1)
    bare_seq = 0

    def raw() -> float:
        nonlocal bare_seq
        start = time.perf_counter()
        for _ in range(APPEND_BLOCK):
            bare_seq += 1
            bare.execute(
                "INSERT INTO bench_bare (ledger, seq, line, payload) VALUES (%s, %s, %s, %s)",
                ("bare", bare_seq, line, payload),
            )
            bare.commit()
        return time.perf_counter() - start

    def run(count: int) -> tuple[float, float, float]:
        """One run on a new ledger: (median ratio, store rate, bare rate)."""
        session = _SESSION.format(1000 + next(made))
        store.create_session(session, workflow_bytes)
        ledger, seq = store.ledger(session), 0

        def through_store() -> float:
            nonlocal seq
            start = time.perf_counter()
            for _ in range(APPEND_BLOCK):
                ledger.append([draft], expected_last_seq=seq, clock=clock)
                seq += 1
            return time.perf_counter() - start

        raw(), through_store()  # warm: statements prepared, pages cached
        ratios, raw_times, store_times = [], [], []
        for block in range(count):
            if block % 2:
                s, r = through_store(), raw()
            else:
                r, s = raw(), through_store()
            raw_times.append(r)
            store_times.append(s)
            ratios.append(r / s)  # store rate / bare rate
        done = APPEND_BLOCK * count
        return statistics.median(ratios), done / sum(store_times), done / sum(raw_times)

    try:
        measured = [run(APPEND_PAIRS) for _ in range(runs)]
        with listen(dsn, workspace=WORKSPACE) as notices:
            listened, heard_rate, heard_raw = run(APPEND_PAIRS // 2)
            heard = len(notices.wait(timeout=1.0))
    finally:
        bare.close()
        _close(store)
    assert heard > 0, "the listener heard no notice"
    ratios = sorted(r for r, _, _ in measured)
    ratio = statistics.median(ratios)
    store_rate = statistics.median(m[1] for m in measured)
    raw_rate = statistics.median(m[2] for m in measured)
    spread = f"runs min/median/max {ratios[0]:.2f}/{ratio:.2f}/{ratios[-1]:.2f}"
    _report(
        f"durable append to PostgreSQL{where} (synchronous_commit on), single-event batches "
        f"({len(line)} B lines, {runs} run(s) x {APPEND_PAIRS} x {APPEND_BLOCK} each)",
        f"PostgresStore append {store_rate:,.0f}/s ({1e6 / store_rate:.0f} us each)",
        f"bare INSERT+COMMIT {raw_rate:,.0f}/s ({1e6 / raw_rate:.0f} us each)",
        ratio,
        f"median of paired blocks, {spread}; target >= 0.8",
        ratio >= 0.8,
    )
    _report(
        "  the same with a live listener (each append also sends its notice)",
        f"PostgresStore append {heard_rate:,.0f}/s ({1e6 / heard_rate:.0f} us each)",
        f"bare INSERT+COMMIT {heard_raw:,.0f}/s ({1e6 / heard_raw:.0f} us each)",
        listened,
        "reported",
        True,
    )
    return ratio


def bench_append_ram(workflow_bytes: bytes, *, runs: int) -> float | None:
    """The append benchmark on a throwaway server whose data directory is in RAM
    (:data:`RAM_FOLDER`), ``fsync`` and ``synchronous_commit`` still on."""
    if not RAM_FOLDER.is_dir():
        sys.stdout.write(f"append on a RAM-backed server: no {RAM_FOLDER}: not measured\n")
        return None
    server = DurableServer(find_bindir(), under=RAM_FOLDER)
    try:
        server.initdb()
        server.start()
        dsn = server.dsn(server.create_database("tht_bench_ram"))
        from kernel.store.postgres import init_schema

        init_schema(dsn)
        return bench_append(dsn, workflow_bytes, runs=runs, where=f" on {RAM_FOLDER}")
    finally:
        server.destroy()


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
    from kernel.store.postgres import listen

    store = _store(dsn)
    sessions = [_SESSION.format(100 + i) for i in range(2 * (WRITERS + 1))]
    for session in sessions:
        store.create_session(session, workflow_bytes)
    _close(store)
    single = _writers(dsn, sessions[:1], folder)
    many = _writers(dsn, sessions[1 : WRITERS + 1], folder)
    (folder / "heard").mkdir(exist_ok=True)
    with listen(dsn, workspace=WORKSPACE) as notices:
        heard_single = _writers(dsn, sessions[WRITERS + 1 : WRITERS + 2], folder / "heard")
        heard_many = _writers(dsn, sessions[WRITERS + 2 :], folder / "heard")
        notices.wait(timeout=0.5)
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
    _report(
        "  the same with a live listener (notices sent)",
        f"{heard_many:,.0f} appends/s together",
        f"1 writer {heard_single:,.0f} appends/s",
        heard_many / heard_single,
        "reported; no target",
        True,
    )
    return ratio


# --------------------------------------------------------------------------- 4. notices

# An append's shape (lock and move the ledger's own head row, insert the line; one durable
# commit) with its notice inside the transaction, or in a transaction of its own right after.
_NOTICE_SETUP = """
CREATE TABLE bench_heads (ledger int PRIMARY KEY, last_seq bigint NOT NULL) WITH (fillfactor = 50);
CREATE TABLE bench_events (ledger int, seq bigint, line bytea, PRIMARY KEY (ledger, seq));
INSERT INTO bench_heads SELECT g, 0 FROM generate_series(1, 64) AS g;
"""
_MOVE_ROW = (
    "WITH moved AS (UPDATE bench_heads SET last_seq = last_seq + 1 "
    "WHERE ledger = :client_id + 1 RETURNING last_seq), "
    "added AS (INSERT INTO bench_events SELECT :client_id + 1, last_seq, "
    "decode(repeat('ab', 400), 'hex') FROM moved RETURNING 1)"
)
_NOTICE_SCRIPTS = {
    "inside": _MOVE_ROW + ", told AS (SELECT pg_notify('bench', 'x' || :client_id) FROM moved) "
    "SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM told);\n",
    "after": _MOVE_ROW + " SELECT count(*) FROM added;\n"
    "SELECT pg_notify('bench', 'x' || :client_id);\n",
}
NOTICE_SECONDS = 3


def bench_notices(server: PostgresServer, dbname: str, folder: Path) -> float | None:
    """tps of pgbench with 8 clients vs 1, the notice inside the append or after it."""
    pgbench = server.bindir / "pgbench"
    if not pgbench.is_file():
        sys.stdout.write("notices: pgbench not found beside the server: not measured\n")
        return None
    server.execute(dbname, _NOTICE_SETUP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(PGPASSWORD=server.password, PGHOST=server.host, PGPORT=str(server.port))
    env.update(PGUSER="postgres", PGDATABASE=dbname)
    tps: dict[tuple[str, int], float] = {}
    for mode, script in _NOTICE_SCRIPTS.items():
        path = folder / f"notice-{mode}.sql"
        path.write_text(script, encoding="utf-8")
        for clients in (1, WRITERS):
            argv = [str(pgbench), "-n", "-M", "prepared", "-f", str(path), "-c", str(clients)]
            argv += ["-j", str(min(clients, os.cpu_count() or 1)), "-T", str(NOTICE_SECONDS)]
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            found = re.search(r"^tps = ([0-9.]+)", done.stdout, re.M)
            assert done.returncode == 0 and found, f"pgbench failed: {done.stderr[-500:]}"
            tps[(mode, clients)] = float(found.group(1))
    inside = tps[("inside", WRITERS)] / tps[("inside", 1)]
    after = tps[("after", WRITERS)] / tps[("after", 1)]
    _report(
        f"append-shaped pgbench, {WRITERS} clients on {WRITERS} ledgers vs 1, the NOTIFY in "
        "a transaction of its own after the commit (kept) vs inside the append's",
        f"after: {tps[('after', WRITERS)]:,.0f} tps ({after:.2f}x 1 client's "
        f"{tps[('after', 1)]:,.0f})",
        f"inside: {tps[('inside', WRITERS)]:,.0f} tps ({inside:.2f}x 1 client's "
        f"{tps[('inside', 1)]:,.0f})",
        tps[("after", WRITERS)] / tps[("inside", WRITERS)],
        f"{WRITERS} clients, after / inside; reported",
        True,
    )
    return after / inside


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks store`` (or ``python -m benchmarks.bench_store [--ram]
    [--append-only] [--runs N]``). ``--ram`` (or ``THT_BENCH_STORE_RAM=1``) also runs the
    append benchmark on a RAM-backed server; ``--append-only`` skips the others."""
    args = list(sys.argv[1:] if argv is None and __name__ == "__main__" else argv or [])
    ram = "--ram" in args or os.environ.get("THT_BENCH_STORE_RAM") == "1"
    append_only = "--append-only" in args
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else APPEND_RUNS
    folder = Path(tempfile.mkdtemp(prefix="tht-bench-", dir=os.environ.get("THT_BENCH_DIR")))
    server = DurableServer(find_bindir())
    workflow_bytes = default_workflow_path().read_bytes()
    try:
        server.initdb()
        server.start()
        dsn = server.dsn(server.create_database("tht_bench"))
        from kernel.store.postgres import init_schema

        init_schema(dsn)
        bench_append(dsn, workflow_bytes, runs=runs)
        if ram:
            bench_append_ram(workflow_bytes, runs=runs)
        if not append_only:
            session, fs_ws, pg_ws = _status_workspaces(dsn, folder, workflow_bytes)
            bench_status_cli(dsn, folder, session, fs_ws, pg_ws)
            bench_status_load(dsn, folder, session, fs_ws)
            bench_writers(dsn, folder, workflow_bytes)
            bench_notices(server, "tht_bench", folder)
    finally:
        server.destroy()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
