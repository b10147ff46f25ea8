"""Chaos: the PostgreSQL server crashes under a writer (issue 15, "Prove it").

A writer process (``tests/support/store_writer.py chaos``) appends receipts in a loop while this
test stops the server with ``pg_ctl stop -m immediate`` — every backend killed at once, no
checkpoint, crash recovery on the next start — at a random moment, waits until the writer has
seen it down, and restarts it: ≥ 20 times in the ci profile. The server is a DEDICATED one,
started here and destroyed at the end whatever happens (stopping the session's shared server
would break other tests' stores). It runs with ``synchronous_commit=off`` like every test
server (tests/support/postgres.py): an acknowledged append survives only because the store
asks for a durable commit itself.

- While the server is down the writer sees ``UnavailableError`` (exit 6), and so does the real
  ``tht session status`` on a ``store: {kind: postgres}`` workspace; no message, stdout or
  stderr ever holds the URL or the password.
- Afterwards every acknowledged append is present at the seq and head it was told, none is
  there twice (an append whose acknowledgement died with the connection is looked for, never
  repeated), nothing unexpected is there, the chain verifies byte by byte, the kernel folds it
  and ``tht ledger verify`` passes.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from kernel.clock import FixedClock, SeededIds
from kernel.ledger_verify import line_hash
from kernel.store.postgres import PostgresStore
from kernel.workflow_kernel import WorkflowKernel
from tests.kernel.store.postgres_support import fresh_database
from tests.support.postgres import PostgresServer, PostgresUnavailable, running_server
from tests.support.store_writer import (
    URL_ENV,
    ChainWatcher,
    ack_rows,
    launch,
    started_session,
    wait_until,
)

WORKSPACE = "w-chaos"
#: crashes per run: ≥ 20 under ci (`make test`), many more with --hypothesis-profile=explore
CYCLES = {"ci": 24, "explore": 120}.get(settings.get_current_profile_name(), 8)
CLI_DURING = {0, CYCLES // 2}  # the outages in which the CLI is asked too


@pytest.fixture
def chaos_server() -> Iterator[PostgresServer]:
    try:
        with running_server() as server:  # destroyed (stopped, folder removed) on the way out
            yield server
    except PostgresUnavailable as err:
        pytest.fail(str(err), pytrace=False)


class Cli:
    """``tht`` on a workspace whose sessions live in the chaos server."""

    def __init__(self, folder: Path, dsn: str) -> None:
        from kernel.workspace import init_workspace

        self.root = folder / "ws"
        init_workspace(self.root)
        with (self.root / "workspace.yaml").open("a", encoding="utf-8") as fh:
            fh.write(f"\nstore: {{kind: postgres, url_env: {URL_ENV}, workspace: {WORKSPACE}}}\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
        self.env.update({"THT_HOME": str(self.root / ".home"), URL_ENV: dsn})

    def __call__(self, *args: str) -> tuple[int, dict[str, object], str]:
        done = subprocess.run(
            [sys.executable, "-m", "tht", *args, "--workspace", str(self.root), "--json"],
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
            timeout=60,
        )
        return done.returncode, json.loads(done.stdout), done.stdout + done.stderr


def _no_secret(server: PostgresServer, text: str) -> None:
    assert server.password not in text and "postgresql://" not in text, text
    assert f"@{server.host}" not in text, text


class Chaos:
    """One crash: wait for a new acknowledged append, stop the server at a random moment, wait
    until the writer has seen it down, optionally ask the CLI, restart."""

    def __init__(self, server: PostgresServer, writer: subprocess.Popen[str], folder: Path) -> None:
        self.server, self.writer = server, writer
        self.acks, self.down = folder / "acks.txt", folder / "unavailable.txt"
        self.errors = folder / "writer.err"
        self.rng = random.Random(15)
        self.port = server.port

    def alive(self) -> None:
        assert self.writer.poll() is None, self.errors.read_text()

    def crash(self, cycle: int, during: Callable[[], object] | None = None) -> None:
        acked, outages = len(ack_rows(self.acks)), len(ack_rows(self.down))
        wait_until(
            lambda: len(ack_rows(self.acks)) > acked or self.writer.poll() is not None,
            30,
            f"cycle {cycle}: no acknowledged append after the restart",
        )
        self.alive()
        time.sleep(self.rng.uniform(0, 0.05))  # let the crash land in any phase of an append
        stopped = self.server.pg_ctl("stop", "-m", "immediate", "-w", "-t", "30")
        assert stopped.returncode == 0, stopped.stderr
        wait_until(
            lambda: len(ack_rows(self.down)) > outages or self.writer.poll() is not None,
            30,
            f"cycle {cycle}: the writer never saw the server down",
        )
        self.alive()
        if during is not None:
            during()
        time.sleep(self.rng.uniform(0, 0.1))
        self.server.start()
        assert self.server.port == self.port, "the server came back on another port"


def test_server_crashes_under_a_writer_lose_no_acknowledged_append(
    chaos_server: PostgresServer, tmp_path: Path
) -> None:
    server = chaos_server
    dsn = fresh_database(server, "chaos")
    store = PostgresStore(dsn, workspace=WORKSPACE)
    kernel = WorkflowKernel(store, clock=FixedClock(), ids=SeededIds(1), workflow_cache=tmp_path)
    session = started_session(kernel)
    start = store.ledger(session).tail()
    store.close()
    cli = Cli(tmp_path, dsn)
    stop = tmp_path / "stop"
    with (tmp_path / "writer.err").open("w") as err:
        writer = launch(
            dsn,
            *("chaos", WORKSPACE, session),
            *(str(tmp_path / name) for name in ("acks.txt", "unavailable.txt", "stop")),
            stdout=subprocess.PIPE,
            stderr=err,
        )
    chaos = Chaos(server, writer, tmp_path)
    down_cli: list[tuple[int, dict[str, object], str]] = []

    def ask_cli() -> None:
        down_cli.append(cli("session", "status", session))

    try:
        for cycle in range(CYCLES):
            chaos.crash(cycle, ask_cli if cycle in CLI_DURING else None)
        stop.touch()
        out, _ = writer.communicate(timeout=60)
        assert writer.returncode == 0, chaos.errors.read_text()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    result = json.loads(out)
    assert result["unavailable"] >= CYCLES and result["conflicts"] == 0, result
    for message in set(chaos.down.read_text(encoding="utf-8").splitlines()):
        _no_secret(server, message)
    assert len(down_cli) == len(CLI_DURING)
    for code, body, text in down_cli:
        assert code == 6 and body["error"]["code"] == "unavailable", text  # type: ignore[index]
        _no_secret(server, text)

    store = PostgresStore(dsn, workspace=WORKSPACE)
    ledger = store.ledger(session)
    report = ledger.verify()
    assert report.ok, report.problems
    watcher = ChainWatcher(ledger, start)
    watcher.step()  # every line after the start, byte by byte
    count = result["acked"] + result["recovered"]
    assert watcher.subjects() == [f"c-{n}" for n in range(count)], "lost, twice or extra"
    acked = ack_rows(chaos.acks)
    assert len(acked) == result["acked"] >= CYCLES
    for n, seq, head in acked:
        line = watcher.lines.get(int(seq), b"")
        assert line_hash(line) == head, f"acknowledged c-{n} at seq {seq} is missing or changed"
    kernel = WorkflowKernel(store, clock=FixedClock(), ids=SeededIds(1), workflow_cache=tmp_path)
    state = kernel.load(session).state
    assert state.last_seq == watcher.seq and not state.integrity
    store.close()
    code, body, text = cli("ledger", "verify", session)
    assert code == 0 and body["ok"], text
    print(f"{CYCLES} crashes: {result}")
