"""Module outcomes (glossary "Module outcome") and their validation against the workflow.

A module never writes the ledger. It returns a :class:`ModuleOutcome` — typed events, artifact
changes, an optional human review request, an optional :class:`RevisionRequest`, a status — and
the kernel checks it against ``workflow.yaml`` and the event schemas, then applies it atomically or
rejects it whole. :func:`plan_outcome` is that check: a pure function from (workflow, folded state,
stage, outcome) to the exact event drafts to append, or an error naming what is wrong.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

import msgspec

from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState, StageView
from kernel.workflow import StepSpec, WorkflowSpec

__all__ = [
    "ArtifactChange",
    "Failure",
    "ModuleOutcome",
    "OutcomeStatus",
    "ReviewRequest",
    "RevisionRequest",
    "check_artifact_name",
    "invocation_id",
    "plan_outcome",
    "validate_proposed_event",
]

_MODULE_ACTOR = re.compile(r"^module:[a-z][a-z0-9_]*$")

OutcomeStatus = Literal["applied", "completed", "awaiting_review", "revision_requested", "failed"]


class ArtifactChange(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    content: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


class ReviewRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A typed question to a human: ``select`` one option, ``decide`` any subset, ``confirm``."""

    kind: Literal["select", "decide", "confirm"]
    prompt: str
    options: tuple[ev.ReviewOptionPayload, ...] = ()
    artifacts: tuple[str, ...] = ()
    #: answering it completes the stage (``select``/``decide`` of the step's own module only):
    #: the chosen options are the stage's decision, the others' ``unchosen`` events are recorded
    closes: bool = False


class RevisionRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A module's typed signal that this or an earlier stage must run again (glossary)."""

    target: str
    reason: str


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


class ModuleOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a module proposes for one invocation of one stage.

    ``status`` says what the outcome is:
    - ``applied``: ``events`` are appended without review (receipts anywhere; decisions only on
      ``automatic`` stages); the stage stays open;
    - ``completed``: ``events`` are appended and the stage completes (``automatic`` stages only);
    - ``awaiting_review``: ``review`` is requested; its options carry the events a human may choose;
    - ``revision_requested``: ``revision`` asks a human to reopen this or an earlier stage;
    - ``failed``: ``failure`` is recorded (after ``events``, e.g. ``question_refused``).
    """

    status: OutcomeStatus
    invocation: str | None = None
    events: tuple[ev.ProposedEvent, ...] = ()
    artifacts: tuple[ArtifactChange, ...] = ()
    review: ReviewRequest | None = None
    revision: RevisionRequest | None = None
    failure: Failure | None = None


def invocation_id(step: StepSpec, view: StageView) -> str:
    """Deterministic invocation identity: ``<stage>#<epoch>`` (retries are attempts of it)."""
    return f"{step.id}#{view.epoch}"


def check_artifact_name(name: str) -> None:
    """A relative, portable file name, checked before anything is written (exit 2).

    Refused: empty, absolute, ``.``/``..``/empty components, backslashes; any component over 200
    UTF-8 bytes or a name over 1000 (the store adds a temporary suffix to a component and the
    session folder to the path: past the file system's 255-byte component limit the write fails
    *after* the ledger append); control, format (bidi overrides, zero-width) and separator
    characters; names not in Unicode NFC (``cafe\u0301`` and ``café`` would be two artifacts
    that look — and on some file systems are — the same file).
    """
    import unicodedata

    parts = name.split("/")
    if (
        not name
        or name.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or "\\" in name
        or "\x00" in name
    ):
        raise UsageError(f"artifact name {name!r} is not a relative file name")
    shown = repr(name if len(name) <= 80 else name[:80] + "…")
    longest = max(len(p.encode("utf-8", errors="surrogatepass")) for p in parts)
    if longest > 200:
        raise UsageError(
            f"artifact name {shown}: a path component is {longest} UTF-8 bytes (at most 200)"
        )
    total = len(name.encode("utf-8", errors="surrogatepass"))
    if total > 1000:
        raise UsageError(f"artifact name {shown}: {total} UTF-8 bytes (at most 1000)")
    bad = next(
        (
            ch
            for ch in name
            if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        ),
        None,
    )
    if bad is not None:
        raise UsageError(
            f"artifact name {shown}: contains the control or invisible character U+{ord(bad):04X}"
        )
    if unicodedata.normalize("NFC", name) != name:
        raise UsageError(
            f"artifact name {shown} is not in Unicode NFC; use "
            f"{unicodedata.normalize('NFC', name)!r}"
        )


def validate_proposed_event(
    step: StepSpec, workflow: WorkflowSpec, proposed: ev.ProposedEvent
) -> ev.Payload:
    """The event type must be registered and allowed in the step; the payload must match."""
    info = ev.EVENT_TYPES.get(proposed.type)
    if info is None:
        import difflib

        # the stage's own emits first (the likeliest intent), then every registered type
        close = difflib.get_close_matches(
            proposed.type, [*step.emits, *workflow.receipts], n=2, cutoff=0.75
        ) or difflib.get_close_matches(proposed.type, sorted(ev.EVENT_TYPES), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        allowed = ", ".join(step.emits) or "none"
        raise UsageError(
            f"unknown event type {proposed.type!r}{hint} (stage {step.id} emits: {allowed})"
        )
    if info.category in ("kernel", *ev.WORKSPACE_CATEGORIES):
        raise PolicyError(
            f"{proposed.type!r} is a {info.category} event; modules cannot propose it"
        )
    if proposed.type not in step.emits and proposed.type not in workflow.receipts:
        allowed = ", ".join(step.emits) or "none"
        raise PolicyError(f"stage {step.id} may not emit {proposed.type!r} (it emits: {allowed})")
    try:
        return ev.payload_from_builtins(proposed.type, proposed.payload)
    except msgspec.ValidationError as err:
        raise UsageError(f"{proposed.type} payload does not match its schema: {err}") from err


def _require_open_step(
    workflow: WorkflowSpec, state: SessionState, stage: str
) -> tuple[StepSpec, StageView]:
    if not state.session:
        raise NotFoundError("the session has no events")
    step = workflow.step(stage)  # NotFoundError for an unknown stage
    if state.lifecycle in ("finalized", "abandoned"):
        raise PolicyError(
            f"session {state.session} is {state.lifecycle} and accepts nothing; derive a new one"
        )
    if state.lifecycle == "paused":
        raise PolicyError(f"session {state.session} is paused; resume it first")
    if step.kind == "finalize":
        raise PolicyError("finalization is a human decision: use `tht session finalize`")
    view = state.stage(stage)
    assert view is not None
    if state.current_stage != stage:
        current = state.current_stage or "none"
        raise PolicyError(f"stage {stage} is {view.state}; the current stage is {current}")
    if view.state not in ("ready", "running", "awaiting_human", "failed"):
        raise PolicyError(f"stage {stage} is {view.state} and accepts no outcome")
    return step, view


def plan_outcome(
    workflow: WorkflowSpec,
    state: SessionState,
    stage: str,
    outcome: ModuleOutcome,
    *,
    actor: str,
) -> list[ev.EventDraft]:
    """Validate ``outcome`` for ``stage`` and return the drafts to append (pure)."""
    _check_proposer(actor)
    step, view = _require_open_step(workflow, state, stage)
    _check_preflight_owner(step, stage, actor)
    invocation = _check_invocation(step, view, stage, outcome)
    _check_shape(outcome)
    payloads = [validate_proposed_event(step, workflow, e) for e in outcome.events]
    _check_completion(step, stage, outcome)
    _check_module_decisions(step, stage, outcome, payloads, actor)
    written = _check_artifacts(step, stage, outcome.artifacts)
    if outcome.review is not None:
        _check_review(workflow, step, state, outcome.review, written, actor)
    if outcome.revision is not None:
        _check_revision_target(workflow, state, stage, outcome.revision.target)

    out = _Drafts(actor=actor, stage=stage, invocation=invocation)
    if view.activity in ("none", "failed"):
        out.add("stage_started", ev.Empty(), actor="kernel", attempt=view.attempt + 1)
    for change in outcome.artifacts:
        out.add(
            "artifact_written",
            ev.ArtifactWrittenPayload(
                name=change.name, sha256=change.sha256, size=len(change.content)
            ),
            actor="kernel",
            subject=change.name,
        )
    for proposed, payload in zip(outcome.events, payloads, strict=True):
        out.add(proposed.type, payload, subject=proposed.subject)
    _add_status_draft(out, step, outcome)
    return out.drafts


def _check_proposer(actor: str) -> None:
    if actor != "agent" and not _MODULE_ACTOR.match(actor):
        # A human decides by answering reviews (signed, in signed mode), never by submitting a
        # module's outcome; the replay rejects such lines too (kernel/replay.py).
        raise PolicyError(
            f"{actor} cannot submit a module outcome: outcomes come from the agent or a module"
        )


def _check_preflight_owner(step: StepSpec, stage: str, actor: str) -> None:
    if step.kind == "preflight" and actor != f"module:{step.owner}":
        # Question Admission is the owner module's decision: nobody else can admit a question it
        # refused (or refuse one it admitted) by proposing an outcome for the preflight.
        raise PolicyError(f"{stage} is decided by module:{step.owner} only, not by {actor}")


def _check_invocation(step: StepSpec, view: StageView, stage: str, outcome: ModuleOutcome) -> str:
    """The current invocation of the stage; an outcome naming another one is stale."""
    expected = invocation_id(step, view)
    if outcome.invocation is not None and outcome.invocation != expected:
        raise PolicyError(
            f"invocation {outcome.invocation!r} is not the current invocation of {stage} "
            f"({expected!r})"
        )
    return expected


def _check_completion(step: StepSpec, stage: str, outcome: ModuleOutcome) -> None:
    """Without review, only an ``automatic`` stage takes decisions or completes — or a
    review_required step whose own module records its module decision (F2 found nothing to
    recall: ``memory_nothing_recalled``; :func:`_check_module_decisions` checks its owner)."""
    if step.completion == "automatic":
        return
    decisions = any(
        e.type in ev.DECISION_TYPES and e.type not in ev.MODULE_DECISION_TYPES
        for e in outcome.events
    )
    if outcome.status in ("applied", "completed") and decisions:
        raise PolicyError(
            f"stage {stage} is review_required: decisions must be chosen by a human "
            "(propose a select, decide or confirm review)"
        )
    module_decided = any(e.type in ev.MODULE_DECISION_TYPES for e in outcome.events)
    if outcome.status == "completed" and not module_decided:
        raise PolicyError(
            f"stage {stage} is review_required: it completes only when a human approves "
            "a confirm review (propose a confirm)"
        )


def _check_module_decisions(
    step: StepSpec,
    stage: str,
    outcome: ModuleOutcome,
    payloads: list[ev.Payload],
    actor: str,
) -> None:
    """A module decision (``result_verified``) comes from its module's own invocation only, and
    a step that emits one completes only in an outcome that records it with ``ok`` true: an
    agent can neither claim a verification nor close the step without one."""
    owned = [t for t in step.emits if t in ev.MODULE_DECISION_TYPES]
    for proposed, payload in zip(outcome.events, payloads, strict=True):
        owner = ev.MODULE_DECISION_TYPES.get(proposed.type)
        if owner is None:
            continue
        if actor != owner:
            raise PolicyError(
                f"{proposed.type} is recorded by {owner}'s own run (`tht stage run {stage}`), "
                f"not proposed by {actor}"
            )
        if outcome.status == "completed" and not ev.completes_stage(proposed.type, payload):
            raise PolicyError(f"{proposed.type} with ok false fails {stage}; it cannot complete it")
    if owned and outcome.status == "completed":
        recorded = {e.type for e in outcome.events}
        missing = [t for t in owned if t not in recorded]
        if missing:
            raise PolicyError(
                f"stage {stage} completes only with {', '.join(missing)} recorded by "
                f"`tht stage run {stage}`"
            )


def _check_artifacts(step: StepSpec, stage: str, artifacts: tuple[ArtifactChange, ...]) -> set[str]:
    """Each artifact has a valid, declared name, written once; returns the names."""
    names: set[str] = set()
    for change in artifacts:
        check_artifact_name(change.name)
        if not step.allows_artifact(change.name):
            allowed = ", ".join(step.artifacts) or "none"
            raise PolicyError(
                f"stage {stage} may not write artifact {change.name!r} (declared: {allowed})"
            )
        if change.name in names:
            raise UsageError(f"artifact {change.name!r} is written twice in one outcome")
        names.add(change.name)
    return names


class _Drafts:
    """The drafts of one invocation, in order; each carries its stage and invocation."""

    __slots__ = ("actor", "drafts", "invocation", "stage")

    def __init__(self, *, actor: str, stage: str, invocation: str) -> None:
        self.actor = actor
        self.stage = stage
        self.invocation = invocation
        self.drafts: list[ev.EventDraft] = []

    def add(self, kind: str, payload: ev.Payload, **envelope: object) -> None:
        fields: dict[str, object] = {
            "type": kind,
            "actor": self.actor,
            "payload": payload,
            "stage": self.stage,
            "invocation": self.invocation,
            "attempt": None,
        }
        fields.update(envelope)
        self.drafts.append(ev.EventDraft(**fields))  # type: ignore[arg-type]


def _add_status_draft(out: _Drafts, step: StepSpec, outcome: ModuleOutcome) -> None:
    """The event that says what the outcome is (none for ``applied``)."""
    if outcome.status == "completed":
        out.add("stage_completed", ev.StageCompletedPayload(via="auto"), actor="kernel")
    elif outcome.status == "awaiting_review":
        review = outcome.review
        assert review is not None
        out.add(
            "review_requested",
            ev.ReviewRequestedPayload(
                kind=review.kind,
                prompt=review.prompt,
                options=review.options,
                artifacts=review.artifacts,
                closes=True if review.closes else msgspec.UNSET,
            ),
        )
    elif outcome.status == "revision_requested":
        revision = outcome.revision
        assert revision is not None
        out.add(
            "revision_requested",
            ev.RevisionRequestedPayload(target=revision.target, reason=revision.reason),
        )
    elif outcome.status == "failed":
        failure = outcome.failure
        assert failure is not None
        if step.kind == "contribution":
            payload: ev.Payload = ev.ContributionFailedPayload(
                code=failure.code, message=failure.message, policy=step.policy
            )
            out.add("contribution_failed", payload)
        else:
            out.add("stage_failed", ev.FailurePayload(code=failure.code, message=failure.message))


def _check_shape(outcome: ModuleOutcome) -> None:
    status = outcome.status
    if (outcome.review is not None) != (status == "awaiting_review"):
        raise UsageError("a review request goes with status awaiting_review, and only with it")
    if (outcome.revision is not None) != (status == "revision_requested"):
        raise UsageError("a revision request goes with status revision_requested, and only with it")
    if (outcome.failure is not None) != (status == "failed"):
        raise UsageError("a failure goes with status failed, and only with it")
    if status in ("awaiting_review", "revision_requested") and outcome.events:
        raise UsageError(
            f"an outcome with status {status} carries no direct events "
            "(review options carry the events a human may choose)"
        )
    if status == "revision_requested" and not outcome.revision.reason.strip():  # type: ignore[union-attr]
        raise UsageError("a revision request needs a reason")


def _check_review(
    workflow: WorkflowSpec,
    step: StepSpec,
    state: SessionState,
    review: ReviewRequest,
    written: set[str],
    actor: str,
) -> None:
    if not review.prompt.strip():
        raise UsageError("a review needs a prompt")
    own = f"module:{step.owner}"
    if actor != own and any(t in ev.MODULE_DECISION_TYPES for t in step.emits):
        raise PolicyError(
            f"{step.id} is its module's own work: only {own} asks its reviews (`tht stage run "
            f"{step.id}`), not {actor}"
        )
    closing = review.closes or any(o.unchosen for o in review.options)
    if closing and actor != own:
        raise PolicyError(f"only {own} asks a review that closes {step.id}")
    if review.closes and review.kind not in ("select", "decide"):
        raise UsageError("only a select or decide review closes its stage")
    if any(o.unchosen for o in review.options) and not (review.closes and review.kind == "decide"):
        raise UsageError("unchosen events belong to a decide review that closes its stage")
    if review.kind in ("select", "decide"):
        if not review.options:
            raise UsageError(f"a {review.kind} review needs at least one option")
        ids = [option.id for option in review.options]
        if len(set(ids)) != len(ids):
            raise UsageError("review option ids must be unique")
        for option in review.options:
            if not option.id.strip() or not option.label.strip():
                raise UsageError("every review option needs an id and a label")
            unchosen = option.unchosen if option.unchosen is not msgspec.UNSET else ()
            for proposed in (*option.events, *unchosen):
                validate_proposed_event(step, workflow, proposed)
                owner = ev.MODULE_DECISION_TYPES.get(proposed.type)
                if owner is not None:  # never a human's choice either: the module's own run
                    raise PolicyError(
                        f"{proposed.type} is recorded by {owner}'s own run, not offered for review"
                    )
    elif review.options:
        raise UsageError("a confirm review has no options: the reviewer approves or rejects")
    for name in review.artifacts:
        check_artifact_name(name)
        if name not in written and state.effective_artifact(name) is None:
            raise NotFoundError(
                f"artifact {name!r} is neither written now nor recorded in the session"
            )


def _check_revision_target(
    workflow: WorkflowSpec, state: SessionState, stage: str, target: str
) -> None:
    target_step = workflow.step(target)
    if target_step.kind in ("preflight", "finalize"):
        raise PolicyError(f"{target} cannot be reopened")
    if workflow.index(target) > workflow.index(stage):
        raise PolicyError(f"a revision can target {stage} or an earlier stage, not {target}")
