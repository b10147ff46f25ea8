"""Kernel benchmarks (``make bench`` / ``python -m benchmarks kernel``), each a ratio against a
baseline measured in the same run, on the same machine and filesystem:

1. **fold**: read + decode + fold (which replays every event, kernel/replay.py) of a
   100,000-event legal ledger vs read + decode (msgspec typed ``kernel.events.decode_lines``) of
   the same file. Target ≤ 2.0× (set before the fold became a replay).
2. **append**: durable single-event appends (``Ledger.append``: lock, expected-seq check, one
   ``write``, ``fsync``, head anchor) vs a raw ``write`` + ``fsync`` loop in the same folder, in
   alternating blocks. Target rate ≥ 0.8×.
3. **status**: wall time of ``tht session status --json`` on a 10,000-event session with a warm
   status cache vs ``tht --version``. Target ≤ 1.5×. A cold run (no status cache) is reported.

The ledgers are legal, command-shaped sessions (benchmarks/legal_ledger.py): admission, then
review cycles — a select review, the answer choosing it (a decision), a receipt, a retraction.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.legal_ledger import write_legal_ledger
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.fold import fold
from kernel.ledger import Ledger
from kernel.workflow import default_workflow_path, load_workflow

FOLD_EVENTS = 100_000
STATUS_EVENTS = 10_000
APPEND_BLOCK = 25
APPEND_PAIRS = 24
STATUS_RUNS = 15
_Q = "How many K-12 schools in Alameda county had an eligible free meal rate above 50%?"


# --------------------------------------------------------------------------- sessions
# Legal, command-shaped histories (benchmarks/legal_ledger.py): the fold replays every event
# (kernel/replay.py), so a synthetic stream no command could write would measure the cost of
# reporting thousands of integrity issues, not of folding a real session.


# --------------------------------------------------------------------------- measuring


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _report(name: str, measured: str, baseline: str, ratio: float, target: str, ok: bool) -> None:
    verdict = "ok" if ok else "MISSED"
    sys.stdout.write(f"{name}: {measured} vs {baseline}: ratio {ratio:.2f} ({target}) {verdict}\n")
    sys.stdout.flush()


def bench_fold(folder: Path) -> float:
    workflow = load_workflow()
    session = "01BENCHFOLD000000000000000"
    write_legal_ledger(folder / "fold", workflow, session, FOLD_EVENTS)
    path = folder / "fold" / "ledger.jsonl"
    events = ev.decode_lines(path.read_bytes())
    assert len(events) >= FOLD_EVENTS
    state = fold(workflow, events)
    assert state.last_seq == len(events) and state.session and not state.integrity

    def decode_only() -> object:
        return ev.decode_lines(path.read_bytes())

    def decode_and_fold() -> object:
        return fold(workflow, ev.decode_lines(path.read_bytes()))

    base = _best(decode_only, 5)
    full = _best(decode_and_fold, 5)
    ratio = full / base
    size = path.stat().st_size / 1e6
    _report(
        f"fold + replay {len(events):,} events ({size:.1f} MB, {len(state.decisions):,} decisions)",
        f"read+decode+fold {full * 1000:.0f} ms",
        f"read+decode {base * 1000:.0f} ms",
        ratio,
        "target <= 2.0",
        ratio <= 2.0,
    )
    return ratio


def bench_append(
    folder: Path,
    *,
    signer: Callable[[ev.Event], str | None] | None = None,
    target_ratio: float = 0.8,
) -> float:
    """Blocks of appends, raw and kernel alternating (fsync latency on a shared disk drifts by
    10x within seconds): the ratio is the median of the per-pair ratios. With ``signer``, each
    appended event is a human decision signed with a reviewer's key (signed mode)."""
    target = folder / ("append-signed" if signer else "append")
    target.mkdir()
    draft = ev.EventDraft(
        type="evidence_consulted",
        actor="human:ann" if signer else "agent",
        stage="disambiguation",
        subject="consulted",
        payload=ev.EvidenceConsultedPayload(
            purpose="schema_linking", generation="g1", returned=("evidence:a", "evidence:b")
        ),
    )
    line = ev.encode_event(ev.stamp(draft, seq=1, ts="2026-01-01T00:00:00.000Z", prev="0" * 64))
    raw_line = line + b"\n"
    raw_fd = os.open(target / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    ledger = Ledger(target / "session" / "ledger.jsonl", "01BENCHAPPEND0000000000000")
    clock = FixedClock()
    ledger.append([draft], expected_last_seq=0, clock=clock)  # creates the file and folder
    seq = 1

    def raw() -> float:
        start = time.perf_counter()
        for _ in range(APPEND_BLOCK):
            os.write(raw_fd, raw_line)
            os.fsync(raw_fd)
        return time.perf_counter() - start

    def kernel() -> float:
        nonlocal seq
        start = time.perf_counter()
        for _ in range(APPEND_BLOCK):
            ledger.append([draft], expected_last_seq=seq, clock=clock, signer=signer)
            seq += 1
        return time.perf_counter() - start

    ratios, raw_times, kernel_times = [], [], []
    try:
        for block in range(APPEND_PAIRS):
            if block % 2:
                k, r = kernel(), raw()
            else:
                r, k = raw(), kernel()
            raw_times.append(r)
            kernel_times.append(k)
            ratios.append(r / k)  # kernel rate / raw rate
    finally:
        os.close(raw_fd)
    ratio = statistics.median(ratios)
    raw_rate = APPEND_BLOCK * len(raw_times) / sum(raw_times)
    kernel_rate = APPEND_BLOCK * len(kernel_times) / sum(kernel_times)
    overhead = statistics.median(k - r for k, r in zip(kernel_times, raw_times, strict=True))
    _report(
        f"durable append{', signed (Ed25519)' if signer else ''}, single-event batches "
        f"({len(raw_line)} B lines, {APPEND_PAIRS} x {APPEND_BLOCK} each)",
        f"Ledger.append {kernel_rate:,.0f}/s (+{overhead / APPEND_BLOCK * 1e6:.0f} us each)",
        f"write+fsync {raw_rate:,.0f}/s ({1e6 / raw_rate:.0f} us each)",
        ratio,
        f"median of paired blocks; target >= {target_ratio}",
        ratio >= target_ratio,
    )
    return ratio


def _tht_bin() -> list[str]:
    script = Path(sys.executable).with_name("tht")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tht"]


def _wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed


def bench_status(folder: Path) -> float:
    from kernel.workspace import init_workspace

    workspace = folder / "ws"
    init_workspace(workspace)
    session = "01BENCHSTATUS0000000000000"
    sessions = workspace / "sessions" / session
    sessions.mkdir(parents=True)
    raw = default_workflow_path().read_bytes()
    (sessions / "workflow.yaml").write_bytes(raw)
    write_legal_ledger(sessions, load_workflow(), session, STATUS_EVENTS)
    # An installed tht runs from compiled bytecode: let both commands write and reuse theirs
    # (in the benchmark's folder, not the source tree), whatever the caller's environment says.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("THT_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["THT_HOME"] = str(folder / "home")
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    tht = _tht_bin()
    _wall([*tht, "--version"], env)  # compile once
    status = [*tht, "session", "status", session, "--json", "--workspace", str(workspace)]
    version = [*tht, "--version"]
    cache = workspace / ".tht" / "cache" / "status" / f"{session}.msgpack"
    cold = []
    for _ in range(3):
        cache.unlink(missing_ok=True)
        cold.append(_wall(status, env))
    _wall(status, env)  # warm the status cache
    warm, base = [], []
    for _ in range(STATUS_RUNS):  # interleaved
        warm.append(_wall(status, env))
        base.append(_wall(version, env))
    warm_s, base_s, cold_s = (statistics.median(x) for x in (warm, base, cold))
    ratio = warm_s / base_s
    _report(
        f"tht session status --json, {STATUS_EVENTS:,} events",
        f"warm {warm_s * 1000:.0f} ms (cold, no status cache: {cold_s * 1000:.0f} ms, "
        f"{cold_s / base_s:.2f}x)",
        f"tht --version {base_s * 1000:.0f} ms",
        ratio,
        "target <= 1.5",
        ratio <= 1.5,
    )
    return ratio


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tht-bench-", dir=os.environ.get("THT_BENCH_DIR")))
    try:
        bench_fold(folder)
        bench_append(folder)
        bench_status(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
