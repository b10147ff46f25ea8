"""Human decisions and lifecycle transitions, as pure planning functions.

Each ``plan_*`` function takes the workflow, the folded state at the seq the command will append
after, and the command's arguments; it returns the event drafts to append or raises the error the
user must see (and nothing is written). The kernel appends with ``expected_last_seq =
state.last_seq``, so a precondition is always decided on the state the append follows: two
concurrent pauses never both succeed.
"""

from __future__ import annotations

import re
import unicodedata

import msgspec

from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.fold import OpenReview, SessionState
from kernel.outcomes import invocation_id
from kernel.workflow import WorkflowSpec, compiled_sha256

__all__ = [
    "MAX_QUESTION_CHARS",
    "check_human",
    "check_question",
    "immutable_refusal",
    "plan_abandon",
    "plan_answer",
    "plan_create",
    "plan_finalize",
    "plan_pause",
    "plan_reopen",
    "plan_resume",
    "plan_retract",
    "plan_skip",
]

_HUMAN = re.compile(r"^human:[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
#: The one limit on a question's length, in characters of its NFC form without surrounding
#: whitespace: ``session new`` refuses a longer one before anything is written (exit 2), and
#: Question Admission (modules/disambiguation) measures it the same way.
MAX_QUESTION_CHARS = 4000


def question_length(question: str) -> int:
    """The length the limit applies to (what Question Admission reads)."""
    return len(unicodedata.normalize("NFC", question).strip())


def check_question(question: str) -> str:
    """The question a session is created for, or the usage error (exit 2) that a command must
    raise before it writes anything."""
    text = question.strip()
    if not text:
        raise UsageError("the question is empty")
    if question_length(text) > MAX_QUESTION_CHARS:
        raise UsageError(
            f"the question is {question_length(text)} characters long; the limit is "
            f"{MAX_QUESTION_CHARS}"
        )
    return text


def check_human(actor: str | None, *, label: str = "--as") -> str:
    """Human-only decisions need ``--as human:<id>``; anything else is refused (exit 5).
    ``label`` names where the id was given in the error (``--as``, or an argument)."""
    if actor is None:
        raise UsageError("this decision is human-only: pass --as human:<id>")
    if actor == "agent" or actor.startswith(("module:", "kernel")):
        raise PolicyError(f"{actor} may not take a human-only decision")
    if not _HUMAN.match(actor):
        raise UsageError(f"{label} {actor!r}: expected human:<id> (letters, digits, . _ @ + -)")
    return actor


def immutable_refusal(state: SessionState) -> PolicyError | None:
    """The refusal (exit 5) of any append to a finalized or abandoned session, else None."""
    if state.lifecycle in ("finalized", "abandoned"):
        return PolicyError(
            f"session {state.session} is {state.lifecycle} and accepts nothing; "
            "use `tht session derive` to start again from its question"
        )
    return None


def _check_active(state: SessionState) -> None:
    if not state.session:
        raise NotFoundError("the session has no events")
    refusal = immutable_refusal(state)
    if refusal is not None:
        raise refusal
    if state.lifecycle == "paused":
        raise PolicyError(f"session {state.session} is paused; resume it first")


def _check_reason(reason: str | None) -> str:
    if reason is None or not reason.strip():
        raise UsageError("a reason is required (--reason TEXT)")
    return reason.strip()


def plan_create(
    workflow: WorkflowSpec,
    session_id: str,
    question: str,
    *,
    actor: str,
    derived_from: str | None = None,
    from_head: str | None = None,
    reason: str = "",
    signed: bool = False,
    admission_attempts: int | msgspec.UnsetType = msgspec.UNSET,
) -> list[ev.EventDraft]:
    """``admission_attempts``: the attempts policy's limit as ``session_created`` records it
    (kernel/admission_attempts.py ``check_attempts``: UNSET for the default)."""
    text = check_question(question)
    drafts = [
        ev.EventDraft(
            type="session_created",
            actor=actor,
            subject=session_id,
            payload=ev.SessionCreatedPayload(
                question=text,
                workflow=ev.WorkflowRef(
                    name=workflow.name,
                    version=workflow.version,
                    sha256=workflow.sha256,
                    compiled=compiled_sha256(workflow),
                ),
                derived_from=derived_from,
                human_decisions="signed" if signed else "unsigned",
                admission_attempts=admission_attempts,
            ),
        )
    ]
    if derived_from is not None:
        drafts.append(
            ev.EventDraft(
                type="session_derived",
                actor=actor,
                subject=derived_from,
                payload=ev.SessionDerivedPayload(
                    from_session=derived_from, from_head=from_head or "", reason=reason
                ),
            )
        )
    return drafts


def _open_review(state: SessionState, seq: int) -> OpenReview:
    review = state.review(seq)
    if review is not None:
        return review
    if seq < 1 or seq > state.last_seq:
        raise NotFoundError(f"seq {seq} does not exist (last seq is {state.last_seq})")
    raise PolicyError(f"seq {seq} is not an open review request (answered, stale, or not a review)")


def _check_last_review(state: SessionState, stage: str, seq: int) -> None:
    """A review that completes its stage is answered after every other open review of it."""
    others = [r.seq for r in state.open_reviews if r.stage == stage and r.seq != seq]
    if others:
        raise PolicyError(
            f"answer the other open reviews of {stage} first: " + ", ".join(str(s) for s in others)
        )


def plan_answer(
    workflow: WorkflowSpec,
    state: SessionState,
    seq: int,
    *,
    actor: str,
    choose: tuple[str, ...] = (),
    approve: bool = False,
    reject: bool = False,
    rationale: str = "",
) -> list[ev.EventDraft]:
    """A human answers review ``seq``: chosen options' events, approval or rejection."""
    check_human(actor)
    _check_active(state)
    review = _open_review(state, seq)
    given = sum((bool(choose), approve, reject))
    if given != 1:
        raise UsageError("answer with exactly one of --choose ID…, --approve or --reject")
    step = workflow.step(review.stage)
    view = state.stage(review.stage)
    assert view is not None
    invocation = view.invocation or invocation_id(step, view)

    def draft(kind: str, payload: ev.Payload, **envelope: object) -> ev.EventDraft:
        fields: dict[str, object] = {
            "type": kind,
            "actor": actor,
            "payload": payload,
            "stage": review.stage,
            "invocation": invocation,
            "causation": seq,
        }
        fields.update(envelope)
        return ev.EventDraft(**fields)  # type: ignore[arg-type]

    drafts: list[ev.EventDraft] = []
    if review.kind in ("select", "decide"):
        if not choose:
            raise UsageError(f"a {review.kind} review is answered with --choose ID…")
        known = {option.id: option for option in review.options}
        unknown = [c for c in choose if c not in known]
        if unknown:
            raise UsageError(f"unknown option(s) {', '.join(unknown)}; options: {', '.join(known)}")
        if len(set(choose)) != len(choose):
            raise UsageError("an option is chosen twice")
        if review.kind == "select" and len(choose) != 1:
            raise UsageError("a select review takes exactly one option")
        if review.closes:
            _check_last_review(state, review.stage, seq)
        drafts.append(
            draft(
                "review_answered",
                ev.ReviewAnsweredPayload(choice=tuple(choose), rationale=rationale),
            )
        )
        for option_id in choose:
            for proposed in known[option_id].events:
                payload = ev.payload_from_builtins(proposed.type, proposed.payload)
                drafts.append(draft(proposed.type, payload, subject=proposed.subject))
        if review.closes:
            for option in review.options:
                unchosen = option.unchosen
                if option.id in choose or isinstance(unchosen, msgspec.UnsetType):
                    continue
                for proposed in unchosen:
                    payload = ev.payload_from_builtins(proposed.type, proposed.payload)
                    drafts.append(draft(proposed.type, payload, subject=proposed.subject))
            drafts.append(
                draft("stage_completed", ev.StageCompletedPayload(via="review"), actor="kernel")
            )
        return drafts
    if choose:
        raise UsageError(f"a {review.kind} review is answered with --approve or --reject")
    drafts.append(
        draft("review_answered", ev.ReviewAnsweredPayload(approved=approve, rationale=rationale))
    )
    if not approve:
        return drafts
    if review.kind == "confirm":
        _check_last_review(state, review.stage, seq)
        drafts.append(
            draft("stage_completed", ev.StageCompletedPayload(via="review"), actor="kernel")
        )
    else:  # revision
        target = review.target or review.stage
        drafts.append(
            draft(
                "stage_reopened",
                ev.ReasonPayload(reason=rationale or review.prompt),
                stage=target,
                invocation=None,
            )
        )
    return drafts


def plan_retract(
    state: SessionState, seq: int, *, actor: str, reason: str | None
) -> list[ev.EventDraft]:
    check_human(actor)
    text = _check_reason(reason)
    _check_active(state)
    record = state.decision(seq)
    if record is None:
        if seq < 1 or seq > state.last_seq:
            raise NotFoundError(f"seq {seq} does not exist (last seq is {state.last_seq})")
        raise PolicyError(f"seq {seq} is not a decision; only decisions can be retracted")
    if record.status != "effective":
        raise PolicyError(f"decision {seq} is already {record.status}")
    if record.stage == "admission":
        raise PolicyError("the admission outcome cannot be retracted; derive a new session")
    return [
        ev.EventDraft(
            type="decision_retracted",
            actor=actor,
            stage=record.stage,
            subject=record.subject,
            retracts=seq,
            payload=ev.ReasonPayload(reason=text),
        )
    ]


def plan_skip(
    workflow: WorkflowSpec, state: SessionState, stage: str, *, actor: str, reason: str | None
) -> list[ev.EventDraft]:
    check_human(actor)
    text = _check_reason(reason)
    step = workflow.step(stage)
    _check_active(state)
    if step.skip != "human":
        raise PolicyError(f"stage {stage} cannot be skipped (its policy is skip: {step.skip})")
    view = state.stage(stage)
    assert view is not None
    if state.current_stage != stage:
        raise PolicyError(
            f"only the current stage can be skipped; {stage} is {view.state}, "
            f"the current stage is {state.current_stage}"
        )
    return [
        ev.EventDraft(
            type="stage_skipped",
            actor=actor,
            stage=stage,
            invocation=view.invocation,
            payload=ev.ReasonPayload(reason=text),
        )
    ]


def plan_reopen(
    workflow: WorkflowSpec, state: SessionState, stage: str, *, actor: str, reason: str | None
) -> list[ev.EventDraft]:
    """Reopen ``stage``: answers an open revision request for it, or is the human's own request."""
    check_human(actor)
    text = _check_reason(reason)
    step = workflow.step(stage)
    _check_active(state)
    if step.kind in ("preflight", "finalize"):
        raise PolicyError(f"{stage} cannot be reopened")
    current = state.current_stage
    if current is not None and workflow.index(stage) > workflow.index(current):
        raise PolicyError(f"{stage} has not been reached yet (the current stage is {current})")
    for review in state.open_reviews:
        if review.kind == "revision" and review.target == stage:
            return plan_answer(
                workflow, state, review.seq, actor=actor, approve=True, rationale=text
            )
    return [
        ev.EventDraft(
            type="stage_reopened", actor=actor, stage=stage, payload=ev.ReasonPayload(reason=text)
        )
    ]


def plan_pause(state: SessionState, *, actor: str, reason: str = "") -> list[ev.EventDraft]:
    check_human(actor)
    if not state.session:
        raise NotFoundError("the session has no events")
    if state.lifecycle != "active":
        raise PolicyError(
            f"session {state.session} is {state.lifecycle}; only an active one pauses"
        )
    return [
        ev.EventDraft(
            type="session_paused", actor=actor, payload=ev.OptionalReasonPayload(reason=reason)
        )
    ]


def plan_resume(state: SessionState, *, actor: str, reason: str = "") -> list[ev.EventDraft]:
    check_human(actor)
    if not state.session:
        raise NotFoundError("the session has no events")
    if state.lifecycle != "paused":
        raise PolicyError(
            f"session {state.session} is {state.lifecycle}; only a paused one resumes"
        )
    return [
        ev.EventDraft(
            type="session_resumed", actor=actor, payload=ev.OptionalReasonPayload(reason=reason)
        )
    ]


def plan_abandon(state: SessionState, *, actor: str, reason: str | None) -> list[ev.EventDraft]:
    """Abandon: the explicit end of a session that will not finalize (refused at admission,
    blocked, or no longer wanted). Like finalization it makes the session immutable; unlike it,
    it needs no finished workflow, only a human and a reason."""
    check_human(actor)
    text = _check_reason(reason)
    if not state.session:
        raise NotFoundError("the session has no events")
    refusal = immutable_refusal(state)
    if refusal is not None:
        raise refusal
    return [
        ev.EventDraft(
            type="session_abandoned",
            actor=actor,
            payload=ev.SessionAbandonedPayload(reason=text),
        )
    ]


def plan_finalize(
    workflow: WorkflowSpec,
    state: SessionState,
    *,
    actor: str,
    report_sha256: str,
    report_size: int,
) -> list[ev.EventDraft]:
    """Finalize: every step done, no open review, not blocked; records ``report.md``."""
    check_human(actor)
    _check_active(state)
    if state.blocked:
        raise PolicyError(f"the workflow is blocked ({state.blocked_reason}); it cannot finalize")
    if state.open_reviews:
        seqs = ", ".join(str(r.seq) for r in state.open_reviews)
        raise PolicyError(f"open reviews must be answered first: {seqs}")
    final = next(step for step in workflow.steps if step.kind == "finalize")
    if state.current_stage != final.id:
        raise PolicyError(
            f"the workflow has not reached finalization (current stage: {state.current_stage})"
        )
    effective = [a.name for a in state.artifacts if a.status == "effective"]
    return [
        ev.EventDraft(
            type="artifact_written",
            actor="kernel",
            stage=final.id,
            subject="report.md",
            payload=ev.ArtifactWrittenPayload(
                name="report.md", sha256=report_sha256, size=report_size
            ),
        ),
        ev.EventDraft(
            type="session_finalized",
            actor=actor,
            stage=final.id,
            payload=ev.SessionFinalizedPayload(
                effective_decisions=len(state.effective_decisions()),
                artifacts=tuple(sorted({*effective, "report.md"})),
            ),
        ),
    ]
