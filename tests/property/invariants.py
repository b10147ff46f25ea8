"""The invariants the kernel machine checks after every step, as plain functions of the ledger's
events and the folded state (tests/property/test_kernel_invariants.py drives the kernel)."""

from __future__ import annotations

from pathlib import Path

from kernel import events as ev
from kernel.fold import SessionState
from kernel.workflow import load_workflow

__all__ = [
    "INDEX",
    "STEP_IDS",
    "WORKFLOW",
    "check_completion_order",
    "check_completion_policy",
    "check_decisions",
    "check_stage_views",
    "done",
    "snapshot",
]

WORKFLOW = load_workflow()
STEP_IDS = list(WORKFLOW.ids)
INDEX = {step_id: i for i, step_id in enumerate(STEP_IDS)}


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of a session folder that an operation could change."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def done(state: SessionState, i: int) -> bool:
    view = state.stages[i]
    return view.activity in ("completed", "skipped") or (
        view.activity == "failed" and WORKFLOW.steps[i].policy == "best_effort"
    )


def check_completion_policy(events: list[ev.Event], event: ev.Event) -> None:
    """How a step completes (workflow.yaml ``completion``): a ``review_required`` step when a
    human approves a confirm review of it, or answers a *closing* select/decide of its own
    module; a step that emits a module decision (F7's ``result_verified``, F2's
    ``memory_nothing_recalled``) also when that module's own run records it in the same batch;
    an ``automatic`` step with such a decision only that way."""
    if not isinstance(event, ev.StageCompleted) or event.stage not in INDEX:
        return
    step = WORKFLOW.step(event.stage)
    owned = {t for t in step.emits if t in ev.MODULE_DECISION_TYPES}
    batch, j = [], event.seq - 2  # the lines batched before it (batch_left > 0)
    while j >= 0 and events[j].batch_left:
        batch.append(events[j])
        j -= 1
    recorded = [
        e
        for e in batch
        if ev.info_of(e).type in owned
        and e.invocation == event.invocation
        and e.actor == ev.MODULE_DECISION_TYPES[ev.info_of(e).type]
        and getattr(e.payload, "ok", True) is not False
    ]
    if event.payload.via == "auto":
        if step.completion == "review_required" or owned:
            assert recorded, f"seq {event.seq} closes {step.id} without its module's decision"
        return
    assert step.completion == "review_required", f"seq {event.seq}: {step.id} is automatic"
    assert event.payload.via == "review", f"seq {event.seq} closes {step.id} without a review"
    answer = batch[-1] if batch else None  # an answer opens its own batch
    assert isinstance(answer, ev.ReviewAnswered), f"seq {event.seq}: not a human's answer"
    assert answer.actor.startswith("human:") and answer.causation == event.causation
    request = events[answer.causation - 1] if answer.causation else None
    assert isinstance(request, ev.ReviewRequested), f"seq {event.seq}: not caused by a review"
    assert request.stage == step.id
    if request.payload.kind == "confirm":
        assert answer.payload.approved is True
    else:
        assert request.payload.closes is True and answer.payload.choice
        assert request.actor == f"module:{step.owner}", "only the module closes by choice"


def check_completion_order(before: SessionState, event: ev.Event) -> None:
    """A step completes or is skipped only when every earlier step is completed or skipped."""
    if isinstance(event, ev.StageCompleted | ev.StageSkipped) and event.stage in INDEX:
        i = INDEX[event.stage]
    elif isinstance(event, ev.SessionFinalized):
        i = len(STEP_IDS) - 1
    else:
        return
    pending = [STEP_IDS[j] for j in range(i) if not done(before, j)]
    assert not pending, f"seq {event.seq} closes {STEP_IDS[i]} before {pending}"


def check_stage_views(state: SessionState) -> None:
    for i, view in enumerate(state.stages):
        if view.state in ("completed", "skipped"):
            pending = [STEP_IDS[j] for j in range(i) if not done(state, j)]
            assert not pending, f"{view.id} is {view.state} while {pending} are not done"
    if state.current_stage is not None:
        current = INDEX[state.current_stage]
        assert all(done(state, j) for j in range(current))
        assert not done(state, current)


def check_decisions(events: list[ev.Event], state: SessionState) -> None:
    """Retracted and stale decisions are never effective; every other decision is."""
    decisions: dict[int, ev.Event] = {}
    retracted: set[int] = set()
    stale: set[int] = set()
    for event in events:
        kind = ev.info_of(event).type
        if kind in ev.DECISION_TYPES:
            decisions[event.seq] = event
        elif isinstance(event, ev.DecisionRetracted) and event.retracts is not None:
            if event.retracts in decisions and event.retracts not in stale:
                retracted.add(event.retracts)
        elif isinstance(event, ev.StageReopened) and event.stage in INDEX:
            start = INDEX[event.stage]
            stale.update(
                seq
                for seq, d in decisions.items()
                if INDEX.get(d.stage or "", -1) >= start and seq not in retracted
            )
        elif isinstance(event, ev.QuestionRephrased):
            # the new question's admission replaces the old verdict, which stays, stale
            stale.update(
                seq
                for seq, d in decisions.items()
                if d.stage == event.stage and seq not in retracted
            )
    effective = {d.seq for d in state.effective_decisions()}
    assert not effective & retracted, f"retracted decisions are effective: {effective & retracted}"
    assert not effective & stale, f"stale decisions are effective: {effective & stale}"
    assert effective == set(decisions) - retracted - stale
    assert {d.seq for d in state.decisions} == set(decisions)
