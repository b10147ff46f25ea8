"""Trust benchmarks (``python -m benchmarks trust``), each a ratio against a baseline measured in
the same run (issue "Trust spine", ARCHITECTURE §3.9):

- durable single-event append of a *signed* human decision vs a raw ``write`` + ``fsync`` loop
  (target ≥ 0.7);
- ``tht ledger verify`` of a 100,000-event signed ledger (file checks, replay, signatures) vs the
  same verify of the same history unsigned (target ≤ 3); the full signature audit
  (``--full``) and the file checks alone are printed beside it;
- a policy command (``tht review list``: the state verified from the reviewer's signed
  checkpoint plus what follows it) on a 10,000-event signed session vs ``tht session status``
  of the same history unsigned (warm status cache; target ≤ 1.5); the same command with no
  checkpoint (a full verified fold with the witness signature check), and the signed session's
  own status (folded the same way as the policy command), are printed beside it.

The ledgers are legal, command-shaped histories (benchmarks/legal_ledger.py) with 60% of their
lines signed.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.bench_kernel import _best, _report, _tht_bin, _wall, bench_append
from benchmarks.legal_ledger import write_legal_ledger
from kernel.clock import FixedClock, SeededIds
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import SigningKey, generate_signing_key
from kernel.store.fs import FileSystemStore
from kernel.trust import Trust
from kernel.workflow import default_workflow_path, load_workflow
from kernel.workflow_kernel import WorkflowKernel

VERIFY_EVENTS = 100_000
POLICY_EVENTS = 10_000
POLICY_RUNS = 11
SESSION = "01BENCHTRUST00000000000000"
REVIEWER = "human:ann"


def _workspace(folder: Path, key: SigningKey | None, count: int) -> tuple[Path, WorkflowKernel]:
    from kernel.workspace import init_workspace

    ws, _ = init_workspace(folder)
    raw = default_workflow_path().read_bytes()
    store = FileSystemStore(ws.sessions_dir, ws.cache_dir)
    store.create_session(SESSION, raw)
    write_legal_ledger(
        ws.sessions_dir / SESSION,
        load_workflow(),
        SESSION,
        count,
        sign=key.sign_event if key else None,
        reviewer=REVIEWER if key else "",
    )
    trust = Trust()
    if key is not None:
        registry = ReviewerRegistry(ws.reviewers_dir)
        registry.add_reviewer(key, by=None, clock=FixedClock())
        state = registry.state()
        trust = Trust(
            signed=True,
            human_check=state.check_human_event,
            check_signature=state.signature_valid,
            unlock=lambda reviewer: key,
        )
    kernel = WorkflowKernel(
        store, clock=FixedClock(), ids=SeededIds(1), trust=trust, workflow_cache=ws.cache_dir
    )
    if key is not None:  # the reviewer's last decision: a signed checkpoint, as in real use
        kernel.pause(SESSION, actor=REVIEWER)
        kernel.resume(SESSION, actor=REVIEWER)
    return ws.root, kernel


def bench_verify(folder: Path, key: SigningKey) -> float:
    _, unsigned = _workspace(folder / "unsigned", None, VERIFY_EVENTS)
    _, signed = _workspace(folder / "signed", key, VERIFY_EVENTS)
    for kernel in (unsigned, signed):
        report = kernel.verify(SESSION)
        assert report.ok, report.problems[:3]
    base = _best(lambda: unsigned.verify(SESSION), 3)
    witnessed = _best(lambda: signed.verify(SESSION), 3)
    audit = _best(lambda: signed.verify(SESSION, full=True), 1)
    file_only = _best(lambda: signed.store.ledger(SESSION).verify(), 3)
    ratio = witnessed / base
    _report(
        f"tht ledger verify, {VERIFY_EVENTS:,} events (60% signed human decisions)",
        f"signed {witnessed * 1000:.0f} ms (--full audit of every signature "
        f"{audit * 1000:.0f} ms = {audit / base:.1f}x; file checks alone "
        f"{file_only * 1000:.0f} ms)",
        f"unsigned {base * 1000:.0f} ms",
        ratio,
        "target <= 3",
        ratio <= 3.0,
    )
    return ratio


def bench_policy(folder: Path, key: SigningKey) -> float:
    root, _ = _workspace(folder / "policy", key, POLICY_EVENTS)
    unsigned_root, _ = _workspace(folder / "policy-unsigned", None, POLICY_EVENTS)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("THT_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["THT_HOME"] = str(folder / "home")
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    tht = _tht_bin()
    common = [SESSION, "--json", "--workspace", str(root)]
    # the baseline: an unsigned session's status from its warm status cache (a signed
    # session's status is folded as a policy command's is: security.md, rule 4)
    status = [*tht, "session", "status", SESSION, "--json", "--workspace", str(unsigned_root)]
    signed_status = [*tht, "session", "status", *common]
    policy = [*tht, "review", "list", *common]
    _wall([*tht, "--version"], env)  # compile once
    _wall(status, env)  # warm the status cache
    _wall(policy, env)
    statuses, policies, signed_statuses = [], [], []
    for _ in range(POLICY_RUNS):  # interleaved
        statuses.append(_wall(status, env))
        policies.append(_wall(policy, env))
        signed_statuses.append(_wall(signed_status, env))
    checkpoint = root / ".tht" / "cache" / "checkpoint" / f"{SESSION}.msgpack"
    saved = checkpoint.read_bytes()
    checkpoint.unlink()
    full = statistics.median(_wall(policy, env) for _ in range(5))
    checkpoint.write_bytes(saved)
    status_s, policy_s = statistics.median(statuses), statistics.median(policies)
    signed_s = statistics.median(signed_statuses)
    ratio = policy_s / status_s
    _report(
        f"policy command (tht review list, from the signed checkpoint), {POLICY_EVENTS:,} "
        "signed events",
        f"{policy_s * 1000:.0f} ms (no checkpoint, full verified fold: {full * 1000:.0f} ms = "
        f"{full / status_s:.2f}x; the signed session's status, from the same checkpoint: "
        f"{signed_s * 1000:.0f} ms = {signed_s / status_s:.2f}x)",
        f"tht session status of the same history unsigned (warm cache) {status_s * 1000:.0f} ms",
        ratio,
        "target <= 1.5",
        ratio <= 1.5,
    )
    return ratio


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tht-bench-trust-", dir=os.environ.get("THT_BENCH_DIR")))
    key = generate_signing_key(REVIEWER)
    try:
        started = time.perf_counter()
        bench_append(folder, signer=key.sign_event, target_ratio=0.7)
        bench_verify(folder, key)
        bench_policy(folder, key)
        print(f"(trust benchmarks: {time.perf_counter() - started:.0f} s)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
