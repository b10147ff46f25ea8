"""Reviewer web UI benchmarks (``python -m benchmarks web``; issue 16 "Performance"), on a
10,000-event legal session (benchmarks/legal_ledger.py) of a filesystem workspace, served by a
real ``tht serve`` (uvicorn on 127.0.0.1) that this benchmark starts and stops:

1. **page**: p50 of ``GET /sessions/{id}`` by a signed-in client (the whole HTML read) vs p50 of
   ``tht session status --json`` (a new process, warm status cache) on the same session, measured
   interleaved in the same run. Target ≤ 2×. Reported beside it: the page's size.
2. **live**: the delay from a CLI append (``tht session pause | resume``, a new process) to the
   ``ledger`` event on a stream of that session connected before: from the ledger file's
   modification time (the append's moment) to the event's arrival. p50 and p95; target p95 ≤ 1 s
   (the stream re-reads the ledger's tail every ``tht.web.live.POLL_SECONDS``).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.bench_kernel import _report, _tht_bin, _wall
from benchmarks.legal_ledger import write_legal_ledger
from kernel.workflow import default_workflow_path, load_workflow

EVENTS = 10_000
PAGE_RUNS = 15
APPENDS = 20
SESSION = "01BENCHWEB0000000000000000"


def _workspace(folder: Path) -> tuple[Path, str]:
    """A workspace holding the legal session, and a sign-in token of ``human:bench``."""
    from kernel.workspace import init_workspace, open_workspace
    from tht.web.tokens import TokenStore

    root = folder / "ws"
    init_workspace(root)
    home = root / "sessions" / SESSION
    home.mkdir(parents=True)
    (home / "workflow.yaml").write_bytes(default_workflow_path().read_bytes())
    write_legal_ledger(home, load_workflow(), SESSION, EVENTS)
    _, token = TokenStore(open_workspace(root).state_dir).add("human:bench", created="bench")
    return root, token


class _Served:
    """``tht serve --port 0`` on the workspace; its URL from the first line it prints."""

    def __init__(self, tht: list[str], root: Path, env: dict[str, str]) -> None:
        argv = [*tht, "serve", "--port", "0", "--json", "--workspace", str(root)]
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            stderr = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"tht serve did not start: {stderr}")
        self.url = str(json.loads(line)["url"]).rstrip("/")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _signed_in(url: str, token: str) -> httpx.Client:
    import re

    client = httpx.Client(base_url=url, timeout=60, follow_redirects=False)
    form = client.get("/signin").text
    found = re.search(r'name="pre" value="([^"]+)"', form)
    assert found is not None
    done = client.post("/signin", data={"pre": found.group(1), "token": token})
    if done.status_code != 303:
        raise RuntimeError(f"sign-in refused: {done.status_code}")
    return client


def bench_page(client: httpx.Client, status: list[str], env: dict[str, str]) -> float:
    path = f"/sessions/{SESSION}"
    size = len(client.get(path).content)  # warm: imports, templates, the status cache
    _wall(status, env)
    page_runs, cli_runs = [], []
    for _ in range(PAGE_RUNS):  # interleaved, so load on the machine hits both alike
        start = time.perf_counter()
        response = client.get(path)
        page_runs.append(time.perf_counter() - start)
        response.raise_for_status()
        cli_runs.append(_wall(status, env))
    page_s, cli_s = statistics.median(page_runs), statistics.median(cli_runs)
    ratio = page_s / cli_s
    _report(
        f"GET /sessions/{{id}}, {EVENTS:,} events ({size / 1024:.0f} KiB of HTML)",
        f"p50 {page_s * 1000:.0f} ms",
        f"tht session status --json p50 {cli_s * 1000:.0f} ms",
        ratio,
        "target <= 2",
        ratio <= 2,
    )
    return ratio


def _follow(client: httpx.Client, arrived: queue.Queue[Any], ready: threading.Event) -> None:
    """Read the session's stream, each ``ledger`` event with its arrival time."""
    try:
        with client.stream("GET", f"/sessions/{SESSION}/events", timeout=None) as stream:
            for line in stream.iter_lines():
                if line.startswith("retry:"):
                    ready.set()
                elif line.startswith("data: "):
                    arrived.put((time.time(), json.loads(line[len("data: ") :])))
    except httpx.HTTPError:  # the server stopped: the benchmark is over
        return


def bench_live(
    client: httpx.Client, tht: list[str], root: Path, env: dict[str, str]
) -> tuple[float, float]:
    from tht.web.live import POLL_SECONDS

    arrived: queue.Queue[Any] = queue.Queue()
    ready = threading.Event()
    threading.Thread(target=_follow, args=(client, arrived, ready), daemon=True).start()
    if not ready.wait(30):
        raise RuntimeError("the event stream did not start")
    ledger = root / "sessions" / SESSION / "ledger.jsonl"
    delays = []
    for i in range(APPENDS):
        verb = "pause" if i % 2 == 0 else "resume"
        argv = [*tht, "session", verb, SESSION, "--reason", "bench", "--as", "human:bench",
                "--json", "--workspace", str(root)]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, check=True)
        seq = int(json.loads(done.stdout)["seq"])
        appended = ledger.stat().st_mtime_ns / 1e9
        while True:
            when, data = arrived.get(timeout=30)
            if data["session"] == SESSION and data["last_seq"] >= seq:
                break
        delays.append(max(0.0, when - appended))
    delays.sort()
    p50 = statistics.median(delays)
    p95 = delays[min(len(delays) - 1, round(0.95 * (len(delays) - 1)))]
    _report(
        f"live: CLI append -> SSE ledger event, {APPENDS} appends",
        f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms",
        f"1 s target (poll every {POLL_SECONDS * 1000:.0f} ms)",
        p95 / 1.0,
        "target p95 <= 1 s",
        p95 <= 1.0,
    )
    return p50, p95


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tht-bench-", dir=os.environ.get("THT_BENCH_DIR")))
    server: _Served | None = None
    try:
        root, token = _workspace(folder)
        # an installed tht runs from compiled bytecode: both sides write and reuse theirs
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("THT_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(THT_HOME=str(folder / "home"), PYTHONPYCACHEPREFIX=str(folder / "pycache"))
        tht = _tht_bin()
        status = [*tht, "session", "status", SESSION, "--json", "--workspace", str(root)]
        server = _Served(tht, root, env)
        page, live = _signed_in(server.url, token), _signed_in(server.url, token)
        try:
            bench_page(page, status, env)
            bench_live(live, tht, root, env)
        finally:
            page.close()
            live.close()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
