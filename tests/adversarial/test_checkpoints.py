"""Signed checkpoints (kernel/checkpoint.py): a policy load starts from the last one only when
every check passes; anything forged or stale falls back to the full verified fold."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from kernel import events as ev
from kernel.checkpoint import encode_checkpoint
from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.fold import fold
from kernel.ledger_verify import line_hash
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import SigningKey, generate_signing_key
from kernel.trust import Trust
from kernel.workflow_kernel import WorkflowKernel
from tests.golden import scenarios

REVIEWER = "human:ann"


def _signed_run(tmp_path: Path) -> tuple[scenarios.Run, SigningKey]:
    run = scenarios.make_kernel(tmp_path / "ws")
    key = generate_signing_key(REVIEWER)
    registry = ReviewerRegistry(run.workspace.reviewers_dir)
    registry.add_reviewer(key, by=None, clock=FixedClock())
    state = registry.state()
    run.kernel._trust = Trust(
        signed=True,
        human_check=state.check_human_event,
        check_signature=state.signature_valid,
        unlock=lambda reviewer: key,
    )
    return run, key


def _checkpoint(run: scenarios.Run) -> Path:
    return run.workspace.cache_dir / "checkpoint" / f"{run.session}.msgpack"


def _spy(kernel: WorkflowKernel) -> list[str]:
    """Which path each load took."""
    taken: list[str] = []
    original = kernel._load_from_checkpoint

    def spied(session: str, workflow: object) -> object:
        try:
            loaded = original(session, workflow)  # type: ignore[arg-type]
        except IntegrityError:
            taken.append("checkpoint")  # it continued the checkpoint and found the forgery
            raise
        taken.append("checkpoint" if loaded is not None else "full")
        return loaded

    kernel._load_from_checkpoint = spied  # type: ignore[method-assign]
    return taken


def _full_fold(run: scenarios.Run) -> object:
    ledger = run.kernel.store.ledger(run.session)
    return fold(run.kernel.session_workflow(run.session), ledger.read().events)


def test_a_signed_command_writes_a_checkpoint_the_next_load_starts_from(tmp_path: Path) -> None:
    run, _ = _signed_run(tmp_path)
    scenarios.start(run)
    scenarios.f1(run)  # the reviewer answers: signed, checkpointed
    assert _checkpoint(run).is_file()
    taken = _spy(run.kernel)
    loaded = run.kernel.load(run.session)
    assert taken == ["checkpoint"]
    assert loaded.state == _full_fold(run)
    assert run.kernel.verify(run.session).ok


def test_agent_events_after_a_checkpoint_are_replayed_and_a_forged_one_is_caught(
    tmp_path: Path,
) -> None:
    run, _ = _signed_run(tmp_path)
    scenarios.start(run)
    scenarios.f1(run)
    ledger = run.kernel.store.ledger(run.session)
    state = run.kernel.load(run.session).state
    # the agent forges an unsigned human pause after the checkpoint, chained and anchored
    forged = ev.stamp(
        ev.EventDraft(type="session_paused", actor=REVIEWER, payload=ev.OptionalReasonPayload()),
        seq=state.last_seq + 1,
        ts="2026-01-01T01:00:00.000Z",
        prev=ledger.tail().head,
    )
    line = ev.encode_event(forged)
    with ledger.path.open("ab") as fh:
        fh.write(line + b"\n")
    record = b'{"seq": %d, "head": "%s"}' % (forged.seq, line_hash(line).encode())
    ledger.head_path.write_bytes(record.ljust(127) + b"\n")
    ledger.close()
    taken = _spy(run.kernel)
    with pytest.raises(IntegrityError, match="signature"):
        run.kernel.load(run.session)
    assert taken == ["checkpoint"]


@pytest.mark.parametrize("attack", ["random", "other_key", "state_edited", "line_edited"])
def test_a_forged_checkpoint_is_never_used(tmp_path: Path, attack: str) -> None:
    run, key = _signed_run(tmp_path)
    scenarios.start(run)
    scenarios.f1(run)
    path = _checkpoint(run)
    truth = run.kernel.load(run.session).state
    ledger = run.kernel.store.ledger(run.session)
    tail = ledger.tail()
    lying = msgspec.structs.replace(truth, lifecycle="finalized", finalized_seq=truth.last_seq)
    state_bytes = msgspec.msgpack.encode(lying)
    if attack == "random":
        path.write_bytes(os.urandom(300))
    elif attack in ("other_key", "state_edited"):
        signer = generate_signing_key(REVIEWER) if attack == "other_key" else key
        blob = encode_checkpoint(
            session=run.session,
            seq=tail.last_seq,
            head=tail.head,
            hint=tail.hint,
            workflow=run.kernel.session_workflow(run.session).sha256,
            state=state_bytes,
            signer=REVIEWER,
            ts=truth.last_ts or "",
            sign=signer.sign,
        )
        if attack == "state_edited":  # a genuine signature, then the state swapped under it
            decoded = msgspec.msgpack.decode(blob)
            decoded["state"] = msgspec.msgpack.encode(
                msgspec.structs.replace(truth, question="something else")
            )
            blob = msgspec.msgpack.encode(decoded)
        path.write_bytes(blob)
    else:  # the checkpoint is genuine, the ledger line it names was edited (and re-chained)
        path = run.workspace.sessions_dir / run.session / "ledger.jsonl"
        data = path.read_bytes()
        start = data.rfind(b"\n", 0, len(data) - 1) + 1
        edited = data[:start] + data[start:].replace(b'"choice":["', b'"choice":["x', 1)
        if edited == data:
            edited = data[:-3] + b" }\n"
        path.write_bytes(edited)
    taken = _spy(run.kernel)
    try:
        loaded = run.kernel.load(run.session)
    except IntegrityError:
        assert attack == "line_edited"  # the full verify then names the damage
    else:
        assert loaded.state == truth and loaded.state.lifecycle != "finalized"
    assert taken == ["full"]
