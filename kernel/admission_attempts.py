"""Question Admission's attempts policy (spec 003 §17), as pure planning functions.

A refused question can be asked again in other words, in the same session, until the session
has asked as many questions as it allows (``admission_attempts``, recorded at its creation from
``admission: {attempts: N}`` in workspace.yaml, 3 by default). The refusal of the last one closes
the session in the same batch: the kernel appends ``session_abandoned`` with the reason
``refused N times`` — never a dead session that nothing can move. A closed session is immutable
like any abandoned one; ``tht session derive`` starts again from it.

:func:`plan_rephrase` is one command: ``question_rephrased``, then Question Admission's verdict
on the new question (the preflight owner's outcome, planned on the state the rephrase leaves),
then the closing abandon when it is due (:func:`plan_closing`). The replay
(:mod:`kernel.replay`) accepts exactly these lines and nothing else.
"""

from __future__ import annotations

import msgspec

from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState, fold_from
from kernel.outcomes import ModuleOutcome, plan_outcome
from kernel.signature_rules import is_human_actor
from kernel.transitions import check_question, immutable_refusal
from kernel.workflow import WorkflowSpec

__all__ = ["attempts_left", "check_attempts", "plan_closing", "plan_rephrase"]


def check_attempts(attempts: int | None) -> int | msgspec.UnsetType:
    """What ``session_created`` records for a limit: UNSET for the default (so a session made
    with the default settings keeps the bytes it always had), the number otherwise."""
    if attempts is None or attempts == ev.DEFAULT_ADMISSION_ATTEMPTS:
        return msgspec.UNSET
    if isinstance(attempts, bool) or not 1 <= attempts <= ev.MAX_ADMISSION_ATTEMPTS:
        raise UsageError(
            f"admission attempts must be 1 to {ev.MAX_ADMISSION_ATTEMPTS}, not {attempts!r}"
        )
    return attempts


def attempts_left(state: SessionState) -> int:
    """How many more questions the session may still ask (0 once closed or exhausted)."""
    if state.lifecycle in ("finalized", "abandoned"):
        return 0
    return max(0, state.admission_attempts - state.question_attempt)


def _preflight(workflow: WorkflowSpec, stage: str) -> None:
    step = workflow.step(stage)  # NotFoundError for an unknown stage
    if step.kind != "preflight":
        raise PolicyError(f"{stage} is not the admission preflight; only a question is rephrased")


def plan_rephrase(
    workflow: WorkflowSpec,
    state: SessionState,
    stage: str,
    question: str,
    outcome: ModuleOutcome,
    *,
    actor: str,
) -> list[ev.EventDraft]:
    """The drafts of ``tht session rephrase``: ``question_rephrased`` (``question``: the new
    text as the session keeps it, masked when the SecurityGate refused it), then ``outcome`` —
    Question Admission's verdict on it, completed or failed — and the closing abandon when the
    session's last allowed question is refused. Raises before anything is written."""
    if not isinstance(actor, str) or (actor != "agent" and not is_human_actor(actor)):
        raise PolicyError(f"{actor} cannot rephrase the question: the agent or a person does")
    text = check_question(question)
    if not state.session:
        raise NotFoundError("the session has no events")
    _preflight(workflow, stage)
    view = state.stage(stage)
    assert view is not None
    exhausted = state.question_attempt >= state.admission_attempts
    if state.lifecycle == "abandoned" and view.state == "failed" and exhausted:
        raise PolicyError(
            f"no attempts left: session {state.session} was closed, "
            f"{ev.admission_closed_reason(state.admission_attempts)}; "
            "`tht session derive` starts again from it"
        )
    refusal = immutable_refusal(state)
    if refusal is not None:
        raise refusal
    if state.lifecycle == "paused":
        raise PolicyError(f"session {state.session} is paused; resume it first")
    if view.state == "completed":
        raise PolicyError("the question was admitted; nothing to rephrase")
    if view.state != "failed":
        raise PolicyError(f"{stage} is {view.state}: only a refused question is rephrased")
    if attempts_left(state) < 1:  # pragma: no cover - the last refusal closed the session
        raise PolicyError(f"no attempts left ({state.admission_attempts} questions asked)")
    if outcome.status not in ("completed", "failed"):
        raise UsageError("a rephrased question is followed by admission's verdict")
    rephrased = ev.EventDraft(
        type="question_rephrased",
        actor=actor,
        stage=stage,
        payload=ev.QuestionRephrasedPayload(question=text, attempt=state.question_attempt + 1),
    )
    after = _after(workflow, state, rephrased)
    owner = f"module:{workflow.step(stage).owner}"
    drafts = plan_outcome(workflow, after, stage, outcome, actor=owner)
    return [rephrased, *plan_closing(workflow, after, stage, drafts)]


def plan_closing(
    workflow: WorkflowSpec, state: SessionState, stage: str, drafts: list[ev.EventDraft]
) -> list[ev.EventDraft]:
    """``drafts`` (an outcome of ``stage`` planned on ``state``), plus the kernel's closing
    ``session_abandoned`` when they fail the preflight on the session's last allowed question."""
    if workflow.step(stage).kind != "preflight":
        return drafts
    if not any(d.type == "stage_failed" for d in drafts):
        return drafts
    if state.question_attempt < state.admission_attempts:
        return drafts
    closing = ev.EventDraft(
        type="session_abandoned",
        actor="kernel",
        payload=ev.SessionAbandonedPayload(
            reason=ev.admission_closed_reason(state.admission_attempts)
        ),
    )
    return [*drafts, closing]


def _after(workflow: WorkflowSpec, state: SessionState, draft: ev.EventDraft) -> SessionState:
    """The state the rephrase leaves (its outcome is planned on it): the draft folded as the
    line it will be, mid-batch. A planner and the replay that disagree raise here, before
    anything is written."""
    line = ev.stamp(draft, seq=state.last_seq + 1, ts=state.last_ts or "", prev="", batch_left=1)
    after = fold_from(workflow, state, [line])
    if len(after.integrity) > len(state.integrity):  # pragma: no cover - planner = replay
        issue = after.integrity[-1]
        raise PolicyError(f"the rephrase would not replay: {issue.rule}: {issue.message}")
    return after
