"""Folding is replay (ARCHITECTURE §3.9 rule 2): every event must be one a legal command could
have produced from the state before it, under the session's own workflow snapshot.

The planners (:mod:`kernel.outcomes`, :mod:`kernel.transitions`) decide what a command may
append; this module re-checks, line by line, that the ledger holds nothing else — so a line
written straight into the file (a forged ``review_answered``, a ``stage_completed`` nobody
approved, an event after ``session_finalized``, a decision on a stage that does not emit it) is an
:class:`IntegrityIssue` naming its seq and rule, even when its hash chain is perfect. The fold
keeps folding (it is total: ``status`` still shows the ledger), but every command that appends
refuses a ledger with an issue (exit 7) until a human repairs it.

The checks run on the fold's own mutable accumulator, O(1) per event (a handful of dictionary
look-ups), so a replay costs what a fold costs. A batch (one append) is the unit of a command:
its first line says which command it was; the rest must be what that command writes.

In signed mode the fold is also handed a ``human_check`` (the workspace's reviewer registry):
every event whose actor is ``human:<id>`` must carry a valid signature by that reviewer's key
(the signature rules: :mod:`kernel.signature_rules`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from kernel import events as ev
from kernel.signature_rules import HumanCheck, is_human_actor

if TYPE_CHECKING:
    from kernel.fold import _Builder

__all__ = ["IntegrityIssue", "Replay", "ReplayContext"]

_MODULE = re.compile(r"^module:[a-z][a-z0-9_]*$")


def _is_proposer(actor: str) -> bool:
    """Who may propose outcomes: the agent or a module (never a human, never the kernel)."""
    return actor == "agent" or _MODULE.match(actor) is not None


class IntegrityIssue(msgspec.Struct, frozen=True, kw_only=True):
    """A line no legal command could have written (or an unsigned human decision)."""

    seq: int
    rule: str
    message: str


class ReplayContext(msgspec.Struct, frozen=True, kw_only=True):
    """Where a replay stands inside a batch, so a state folded up to the middle of a batch
    continues exactly (``fold_from(fold(a), b) == fold(a + b)`` at any split). None at a batch
    boundary, which is where every state the kernel keeps is."""

    kind: str
    ended: bool
    outcome_stage: str | None
    previous: ev.AnyEvent | None
    answer_actor: str | None = None
    answer_review: int | None = None
    answer_stage: str | None = None
    answer_target: str | None = None
    expect: tuple[tuple[str, str | None, Any], ...] = ()
    #: the batch recorded a module decision that lets its stage complete (``result_verified``)
    module_decided: bool = False
    #: the batch refused the session's last allowed question: the kernel's closing
    #: ``session_abandoned`` must follow
    closing: bool = False


class _Answer:
    """What the rest of an answer batch must be: the chosen options' events, in order."""

    __slots__ = ("actor", "expect", "review_seq", "stage", "target")

    def __init__(self, actor: str, review_seq: int, stage: str, target: str | None) -> None:
        self.actor = actor
        self.review_seq = review_seq
        self.stage = stage
        self.target = target
        self.expect: list[tuple[str, str | None, object]] = []


class Replay:
    """Per-fold replay state: the batch being read and the issues found so far."""

    def __init__(self, human_check: HumanCheck | None = None) -> None:
        self.human_check = human_check
        self.issues: list[IntegrityIssue] = []
        self._in_batch = False
        self._kind = ""  # the command the current batch is: create/outcome/answer/human/finalize
        self._answer: _Answer | None = None
        self._outcome_stage: str | None = None
        self._previous: ev.Event | None = None
        self._ended = False  # a batch's last line was a terminal event (nothing may follow)
        self._module_decided = False  # the batch recorded e.g. result_verified with ok true
        self._closing = False  # the last allowed question was refused: the kernel closes next

    def snapshot(self) -> ReplayContext | None:
        if not self._in_batch:
            return None
        answer = self._answer
        return ReplayContext(
            kind=self._kind,
            ended=self._ended,
            outcome_stage=self._outcome_stage,
            previous=self._previous,  # type: ignore[arg-type]  # decoded events are AnyEvent
            answer_actor=answer.actor if answer else None,
            answer_review=answer.review_seq if answer else None,
            answer_stage=answer.stage if answer else None,
            answer_target=answer.target if answer else None,
            expect=tuple(answer.expect) if answer else (),
            module_decided=self._module_decided,
            closing=self._closing,
        )

    def restore(self, context: ReplayContext | None, issues: tuple[IntegrityIssue, ...]) -> None:
        self.issues = list(issues)
        if context is None:
            return
        self._in_batch = True
        self._kind = context.kind
        self._ended = context.ended
        self._outcome_stage = context.outcome_stage
        self._previous = context.previous
        self._module_decided = context.module_decided
        self._closing = context.closing
        if context.answer_actor is not None and context.answer_review is not None:
            answer = _Answer(
                context.answer_actor,
                context.answer_review,
                context.answer_stage or "",
                context.answer_target,
            )
            answer.expect = [tuple(e) for e in context.expect]
            self._answer = answer

    # ------------------------------------------------------------------ driving

    def check(self, b: _Builder, event: ev.Event) -> None:
        """Check ``event`` against the state before it (call before the fold applies it).

        The hot path of every fold: one call per event, no allocation unless a rule fails."""
        first = not self._in_batch
        if first:
            self._kind = ""  # each batch's first line names its command (a rule sets it)
            self._answer = None
            self._outcome_stage = None
            self._ended = False
            self._module_decided = False
            self._closing = False
        try:
            self._check(b, event, first)
        except _Violation as violation:
            self._issue(event, violation.rule, violation.message)
        else:
            if self.human_check is not None and event.actor.startswith("human:"):
                reason = self.human_check(event)
                if reason is not None:
                    self._issue(event, "signature", reason)
        self._previous = event
        if event.batch_left:
            self._in_batch = True
            return
        self._in_batch = False
        answer = self._answer
        if answer is not None and answer.expect:
            missing = ", ".join(t for t, _, _ in answer.expect)
            self._issue(
                event, "answer_incomplete", f"the chosen option's events are missing: {missing}"
            )
        if self._kind == "rephrase" and not isinstance(event, _VERDICT_ENDS):
            self._issue(
                event,
                "rephrase_incomplete",
                "a rephrased question ends with admission's verdict (completed or failed)",
            )

    def _issue(self, event: ev.Event, rule: str, message: str) -> None:
        self.issues.append(IntegrityIssue(seq=event.seq, rule=rule, message=message))

    # ------------------------------------------------------------------ rules

    def _check(self, b: _Builder, event: ev.Event, first: bool) -> None:
        info = _INFO[type(event)]
        kind = info.type
        if info.category in ev.WORKSPACE_CATEGORIES:
            owner = {
                "registry": "reviewer registry",
                "catalog": "Metadata Catalog",
                "memory_registry": "Memory registry",
            }[info.category]
            raise _Violation("registry_entry", f"{kind} belongs to the workspace's {owner}")
        if (event.seq == 1 or not b.session) and kind != "session_created":
            raise _Violation("first_event", "a session starts with session_created")
        if not first:
            if self._ended:
                raise _Violation(
                    "batch", f"{kind} follows the end of the command it is batched with"
                )
        elif event.causation is not None and kind != "review_answered":
            raise _Violation("causation", f"{kind} answers no review")
        if event.retracts is not None and kind != "decision_retracted":
            raise _Violation("envelope", f"{kind} retracts nothing")
        if not first and self._answer is None and event.causation is not None:
            raise _Violation("causation", f"{kind} answers no review")
        if not first and self._closing and kind != "session_abandoned":
            raise _Violation("attempts", f"{kind} follows the refusal of the last allowed question")
        rephrased = not first and isinstance(self._previous, ev.QuestionRephrased)
        if rephrased and kind != "stage_started":
            raise _Violation("rephrase", "admission runs again right after a rephrase")
        if kind == "ledger_repaired":
            self._single_human(event, first)
            if event.stage is not None:
                raise _Violation("envelope", "ledger_repaired is session-level")
            return
        lifecycle = b.lifecycle
        if lifecycle != "active":
            if lifecycle == "finalized":
                raise _Violation("after_finalize", f"{kind} after session_finalized")
            if lifecycle == "abandoned":
                raise _Violation("after_abandon", f"{kind} after session_abandoned")
            if kind not in ("session_resumed", "session_abandoned"):
                raise _Violation("while_paused", f"{kind} while the session is paused")
        handler = _RULES.get(kind)
        if handler is not None:
            handler(self, b, event, first)
        elif info.category != "kernel":
            self._domain(b, event, first, info)
        else:  # pragma: no cover - every kernel type has a rule
            raise _Violation("unknown", f"no replay rule for {kind}")

    def _single_human(self, event: ev.Event, first: bool) -> None:
        if not first or event.batch_left:
            raise _Violation("batch", f"{ev.info_of(event).type} is a command of its own")
        _require_human(event)
        self._ended = True

    def _session_created(self, b: _Builder, event: ev.Event, first: bool) -> None:
        if b.session or event.seq != 1:
            raise _Violation("session_created", "session_created again")
        if not (_is_proposer(event.actor) or is_human_actor(event.actor)):
            raise _Violation("actor", f"{event.actor} cannot create a session")
        self._kind = "create"

    def _session_derived(self, b: _Builder, event: ev.Event, first: bool) -> None:
        if first or self._kind != "create" or event.seq != 2:
            raise _Violation("session_derived", "session_derived outside the session's creation")
        previous = self._previous
        assert previous is not None
        if not isinstance(previous, ev.SessionCreated) or previous.actor != event.actor:
            raise _Violation("session_derived", "session_derived outside the session's creation")
        _require_human(event)
        assert isinstance(event, ev.SessionDerived)
        if previous.payload.derived_from != event.payload.from_session:
            raise _Violation("session_derived", "derived_from disagrees with session_created")

    def _current(self, b: _Builder, event: ev.Event) -> int:
        """The index of the event's stage, which must be the current one."""
        i = b._idx(event.stage)
        if i < 0:
            raise _Violation("stage", f"unknown stage {event.stage!r}")
        current = b.current_index()
        if i != current:
            name = b.wf.steps[current].id if current >= 0 else "none"
            raise _Violation("stage", f"stage {event.stage} is not the current stage ({name})")
        return i

    def _outcome(self, b: _Builder, event: ev.Event, first: bool) -> int:
        """An event of a module outcome: proposer actor (kernel for its bookkeeping lines),
        the current stage, open, one stage per batch."""
        if first:
            self._kind = "outcome"
            self._outcome_stage = event.stage
        elif self._kind not in ("outcome", "rephrase") or self._outcome_stage != event.stage:
            raise _Violation("batch", "an outcome's lines belong to one stage")
        i = self._current(b, event)
        step = b.wf.steps[i]
        if step.kind == "finalize":
            raise _Violation("stage", "finalization is a human decision")
        if b.activity[i] in ("completed", "skipped"):
            raise _Violation("stage", f"stage {step.id} is {b.activity[i]}")
        expected = f"{step.id}#{b.epoch[i]}"
        if event.invocation != expected:
            raise _Violation("invocation", f"invocation {event.invocation!r} is not {expected!r}")
        if step.kind == "preflight" and event.actor not in ("kernel", f"module:{step.owner}"):
            raise _Violation("actor", f"{step.id} is decided by module:{step.owner} only")
        return i

    def _stage_started(self, b: _Builder, event: ev.Event, first: bool) -> None:
        _require(event, "kernel")
        if not first and not isinstance(self._previous, ev.QuestionRephrased):
            raise _Violation("batch", "stage_started opens an outcome")
        i = self._outcome(b, event, first)
        if b.activity[i] not in ("none", "failed"):
            raise _Violation("stage_started", f"stage {event.stage} is already running")
        if event.attempt != b.attempt[i] + 1:
            raise _Violation("stage_started", f"attempt {event.attempt} is not {b.attempt[i] + 1}")

    def _artifact_written(self, b: _Builder, event: ev.Event, first: bool) -> None:
        _require(event, "kernel")
        assert isinstance(event, ev.ArtifactWritten)
        i = b._idx(event.stage)
        if i >= 0 and b.wf.steps[i].kind == "finalize":
            if not first or event.payload.name != "report.md" or event.batch_left != 1:
                raise _Violation("finalize", "report.md is written only by finalization")
            self._kind = "finalize"
            return
        i = self._outcome(b, event, first)
        if self._outcome_bookkeeping_started(b, i, first):
            raise _Violation("batch", "an outcome's first line is stage_started")
        if not b.wf.steps[i].allows_artifact(event.payload.name):
            raise _Violation(
                "artifact", f"stage {event.stage} may not write {event.payload.name!r}"
            )
        if event.subject != event.payload.name:
            raise _Violation("artifact", "subject is not the artifact's name")

    def _outcome_bookkeeping_started(self, b: _Builder, i: int, first: bool) -> bool:
        """A stage that has not started must start in the same outcome."""
        return first and b.activity[i] in ("none", "failed")

    def _domain(self, b: _Builder, event: ev.Event, first: bool, info: ev.EventTypeInfo) -> None:
        owner = ev.MODULE_DECISION_TYPES.get(info.type)
        if owner is not None and event.actor != owner:  # not an agent's, not a human's choice
            raise _Violation(
                "module_decision", f"{info.type} is recorded by {owner}, not {event.actor}"
            )
        answer = self._answer
        if answer is not None and not first:
            self._expected(event, answer)
            return
        if info.category == "decision" and (
            info.type in ev.HUMAN_DECISION_TYPES or event.actor.startswith("human:")
        ):
            raise _Violation(
                "human_decision", f"{info.type} is recorded only as the option a human chose"
            )
        if not _is_proposer(event.actor):
            raise _Violation("actor", f"{event.actor} cannot propose {info.type}")
        if owner is not None and ev.completes_stage(info.type, event.payload):  # type: ignore[attr-defined]
            self._module_decided = True
        i = self._outcome(b, event, first)
        if self._outcome_bookkeeping_started(b, i, first):
            raise _Violation("batch", "an outcome's first line is stage_started")
        step = b.wf.steps[i]
        if info.category == "receipt":
            if info.type not in b.wf.receipts and info.type not in step.emits:
                raise _Violation("emits", f"{info.type} is not a receipt of this workflow")
            return
        if info.type not in step.emits:
            raise _Violation("emits", f"stage {step.id} may not emit {info.type}")
        if step.completion != "automatic" and owner is None:
            raise _Violation(
                "human_decision",
                f"stage {step.id} is review_required: a human chooses its decisions",
            )

    def _expected(self, event: ev.Event, answer: _Answer) -> None:
        if not answer.expect:
            raise _Violation("answer", f"{ev.info_of(event).type} is not part of the chosen option")
        kind, subject, payload = answer.expect.pop(0)
        got = msgspec.to_builtins(event.payload)  # type: ignore[attr-defined]  # every subclass
        if (
            ev.info_of(event).type != kind
            or event.subject != subject
            or got != payload
            or event.actor != answer.actor
            or event.causation != answer.review_seq
            or event.stage != answer.stage
        ):
            raise _Violation("answer", f"seq {event.seq} is not the chosen option's {kind}")

    def _review_requested(self, b: _Builder, event: ev.Event, first: bool) -> None:
        if not _is_proposer(event.actor):
            raise _Violation("actor", f"{event.actor} cannot request a review")
        i = self._outcome(b, event, first)
        if self._outcome_bookkeeping_started(b, i, first):
            raise _Violation("batch", "an outcome's first line is stage_started")
        assert isinstance(event, ev.ReviewRequested)
        step = b.wf.steps[i]
        own = f"module:{step.owner}"
        if event.actor != own and any(t in ev.MODULE_DECISION_TYPES for t in step.emits):
            raise _Violation("actor", f"only {own} asks the reviews of {step.id}")
        closes = event.payload.closes is True
        unchosen_any = any(o.unchosen for o in event.payload.options)
        if (closes or unchosen_any) and event.actor != own:
            raise _Violation("review", f"only {own} asks a review that closes {step.id}")
        if closes and event.payload.kind not in ("select", "decide"):
            raise _Violation("review", "only a select or decide closes its stage")
        if unchosen_any and not (closes and event.payload.kind == "decide"):
            raise _Violation("review", "unchosen events belong to a closing decide")
        for option in event.payload.options:
            unchosen = option.unchosen if not isinstance(option.unchosen, msgspec.UnsetType) else ()
            for proposed in (*option.events, *unchosen):
                info = ev.EVENT_TYPES.get(proposed.type)
                if info is None or info.category in ("kernel", *ev.WORKSPACE_CATEGORIES):
                    raise _Violation("review", f"option {option.id} proposes {proposed.type}")
                if proposed.type not in step.emits and proposed.type not in b.wf.receipts:
                    raise _Violation("emits", f"stage {step.id} may not emit {proposed.type}")
                try:
                    ev.payload_from_builtins(proposed.type, proposed.payload)
                except msgspec.ValidationError as err:
                    raise _Violation("review", f"option {option.id}: {err}") from err
        if (event.payload.kind == "confirm") == bool(event.payload.options):
            raise _Violation("review", "a confirm has no options; select and decide have some")
        self._terminal(event)

    def _revision_requested(self, b: _Builder, event: ev.Event, first: bool) -> None:
        if not _is_proposer(event.actor):
            raise _Violation("actor", f"{event.actor} cannot request a revision")
        i = self._outcome(b, event, first)
        assert isinstance(event, ev.RevisionRequested)
        target = b._idx(event.payload.target)
        if target < 0 or target > i or b.wf.steps[target].kind in ("preflight", "finalize"):
            raise _Violation("revision", f"{event.payload.target!r} cannot be the target")
        self._terminal(event)

    def _failed(self, b: _Builder, event: ev.Event, first: bool) -> None:
        if not _is_proposer(event.actor):
            raise _Violation("actor", f"{event.actor} cannot fail a stage")
        i = self._outcome(b, event, first)
        contribution = b.wf.steps[i].kind == "contribution"
        if contribution != isinstance(event, ev.ContributionFailed):
            raise _Violation("failure", "contribution_failed is for contributions only")
        if b.wf.steps[i].kind == "preflight" and b.question_attempt >= b.admission_attempts:
            # the attempts policy (spec 003 §17): the last allowed question was refused, so the
            # same command closes the session — never a session that nothing can move
            if not event.batch_left:
                raise _Violation(
                    "attempts",
                    f"the refusal of question {b.question_attempt} of {b.admission_attempts} "
                    "closes the session in the same command",
                )
            self._closing = True
            return
        self._terminal(event)

    def _rephrased(self, b: _Builder, event: ev.Event, first: bool) -> None:
        """``tht session rephrase``: a refused question asked again (agent or human), then
        Question Admission's verdict on it in the same batch."""
        if not first:
            raise _Violation("batch", "question_rephrased opens its own command")
        if not (event.actor == "agent" or is_human_actor(event.actor)):
            raise _Violation("actor", f"{event.actor} cannot rephrase the question")
        assert isinstance(event, ev.QuestionRephrased)
        i = b._idx(event.stage)
        if i < 0 or b.wf.steps[i].kind != "preflight":
            raise _Violation("rephrase", f"{event.stage!r} is not the admission preflight")
        if event.invocation is not None or event.subject is not None:
            raise _Violation("envelope", "a rephrase belongs to no invocation and no subject")
        if b.current_index() != i or b.activity[i] != "failed":
            raise _Violation("rephrase", "only a refused question is rephrased")
        attempt = event.payload.attempt
        if attempt != b.question_attempt + 1 or attempt > b.admission_attempts:
            raise _Violation(
                "attempts",
                f"question {attempt} is not the next of {b.admission_attempts} allowed "
                f"(this is question {b.question_attempt})",
            )
        question = event.payload.question
        if not question or question != question.strip():
            raise _Violation("rephrase", "the rephrased question is empty or not trimmed")
        if not event.batch_left:
            raise _Violation("rephrase", "admission runs again in the rephrase's own command")
        self._kind = "rephrase"
        self._outcome_stage = event.stage

    def _terminal(self, event: ev.Event) -> None:
        if event.batch_left:
            raise _Violation("batch", f"{ev.info_of(event).type} ends its outcome")
        self._ended = True

    def _review_answered(self, b: _Builder, event: ev.Event, first: bool) -> None:
        _require_human(event)
        if not first:
            raise _Violation("batch", "review_answered opens its own command")
        assert isinstance(event, ev.ReviewAnswered)
        review = b.reviews.get(event.causation) if event.causation is not None else None
        if review is None:
            raise _Violation("answer", f"seq {event.causation} is not an open review")
        if event.stage != review.stage:
            raise _Violation("answer", "the answer's stage is not the review's")
        self._kind = "answer"
        answer = _Answer(event.actor, review.seq, review.stage, review.target)
        payload = event.payload
        if review.kind in ("select", "decide"):
            options = {o.id: o for o in review.options}
            choice = payload.choice
            if (
                not choice
                or payload.approved is not None
                or len(set(choice)) != len(choice)
                or any(c not in options for c in choice)
                or (review.kind == "select" and len(choice) != 1)
            ):
                raise _Violation("answer", f"{choice!r} is not a valid choice for a {review.kind}")
            for option_id in choice:
                for proposed in options[option_id].events:
                    answer.expect.append(_expected_event(proposed, option_id))
            if review.closes:
                if any(s != review.seq and r.stage == review.stage for s, r in b.reviews.items()):
                    raise _Violation("answer", f"other reviews of {review.stage} are open")
                for option in review.options:
                    unchosen = option.unchosen
                    if option.id in choice or isinstance(unchosen, msgspec.UnsetType):
                        continue
                    for proposed in unchosen:
                        answer.expect.append(_expected_event(proposed, option.id))
                answer.expect.append(("stage_completed", None, {"via": "review"}))
        else:
            if payload.choice or payload.approved is None:
                raise _Violation("answer", f"a {review.kind} is approved or rejected")
            if payload.approved and review.kind == "confirm":
                others = [
                    s for s, r in b.reviews.items() if r.stage == review.stage and s != review.seq
                ]
                if others:
                    raise _Violation(
                        "answer", f"other reviews of {review.stage} are open: {others}"
                    )
                answer.expect.append(("stage_completed", None, {"via": "review"}))
            elif payload.approved:
                text = payload.rationale or review.prompt
                answer.expect.append(("stage_reopened", None, {"reason": text}))
        self._answer = answer

    def _stage_completed(self, b: _Builder, event: ev.Event, first: bool) -> None:
        _require(event, "kernel")
        assert isinstance(event, ev.StageCompleted)
        answer = self._answer
        if answer is not None and not first:
            # the kernel's line of a human approval: checked against what the answer expects
            kind, _, payload = answer.expect.pop(0) if answer.expect else ("", None, None)
            if (
                kind != "stage_completed"
                or payload != msgspec.to_builtins(event.payload)
                or event.causation != answer.review_seq
                or event.stage != answer.stage
            ):
                raise _Violation("stage_completed", "no approved confirm completes this stage")
            self._terminal(event)
            return
        if event.payload.via != "auto":
            raise _Violation("stage_completed", "a stage completes by approval or automatically")
        i = self._outcome(b, event, first)
        if self._outcome_bookkeeping_started(b, i, first):
            raise _Violation("batch", "an outcome's first line is stage_started")
        step = b.wf.steps[i]
        owned = [t for t in step.emits if t in ev.MODULE_DECISION_TYPES]
        if step.completion != "automatic" and not (owned and self._module_decided):
            raise _Violation(
                "stage_completed", f"stage {event.stage} completes only when a human approves"
            )
        if owned and not self._module_decided:
            raise _Violation(
                "module_decision",
                f"stage {event.stage} completes only with its module's {', '.join(owned)}",
            )
        self._terminal(event)

    def _stage_reopened(self, b: _Builder, event: ev.Event, first: bool) -> None:
        _require_human(event)
        answer = self._answer
        i = b._idx(event.stage)
        if i < 0 or b.wf.steps[i].kind in ("preflight", "finalize"):
            raise _Violation("stage_reopened", f"{event.stage!r} cannot be reopened")
        if answer is not None and not first:
            kind, _, payload = answer.expect.pop(0) if answer.expect else ("", None, None)
            target = answer.target
            if (
                kind != "stage_reopened"
                or payload != msgspec.to_builtins(event.payload)  # type: ignore[attr-defined]
                or event.actor != answer.actor
                or event.stage != (target or answer.stage)
                or event.causation != answer.review_seq
            ):
                raise _Violation("stage_reopened", "no approved revision reopens this stage")
            self._terminal(event)
            return
        self._single_human(event, first)
        current = b.current_index()
        if current >= 0 and i > current:
            raise _Violation("stage_reopened", f"{event.stage} has not been reached yet")
        if event.invocation is not None:
            raise _Violation("envelope", "a reopen belongs to no invocation")
        for review in b.reviews.values():
            if review.kind == "revision" and review.target == event.stage:
                raise _Violation(
                    "stage_reopened",
                    f"revision request {review.seq} is open for {event.stage}: a reopen answers it",
                )

    def _decision_retracted(self, b: _Builder, event: ev.Event, first: bool) -> None:
        self._single_human(event, first)
        decision = b.decisions.get(event.retracts) if event.retracts is not None else None
        if decision is None or decision.status != "effective":
            raise _Violation("retract", f"seq {event.retracts} is not an effective decision")
        if decision.event.stage == "admission":
            raise _Violation("retract", "the admission outcome cannot be retracted")
        if event.stage != decision.event.stage or event.subject != decision.event.subject:
            raise _Violation("retract", "stage and subject are the retracted decision's")

    def _stage_skipped(self, b: _Builder, event: ev.Event, first: bool) -> None:
        self._single_human(event, first)
        i = self._current(b, event)
        if b.wf.steps[i].skip != "human":
            raise _Violation("skip", f"stage {event.stage} cannot be skipped")
        if event.invocation != b.invocation[i]:
            raise _Violation("invocation", f"invocation {event.invocation!r} is not the stage's")

    def _paused(self, b: _Builder, event: ev.Event, first: bool) -> None:
        self._single_human(event, first)
        _session_level(event)
        if b.lifecycle != "active":
            raise _Violation("lifecycle", f"pause while {b.lifecycle}")

    def _resumed(self, b: _Builder, event: ev.Event, first: bool) -> None:
        self._single_human(event, first)
        _session_level(event)
        if b.lifecycle != "paused":
            raise _Violation("lifecycle", f"resume while {b.lifecycle}")

    def _abandoned(self, b: _Builder, event: ev.Event, first: bool) -> None:
        """``tht session abandon``: one human event of its own, session-level, from an active
        or paused session (finalized and abandoned ones are refused before this rule). The
        kernel's own abandon closes a session only right after the refusal of its last allowed
        question, in that refusal's batch (:meth:`_failed`)."""
        if event.actor == "kernel":
            assert isinstance(event, ev.SessionAbandoned)
            if first or not self._closing:
                raise _Violation(
                    "attempts",
                    "the kernel closes a session only after refusing its last allowed question",
                )
            _session_level(event)
            if event.payload.reason != ev.admission_closed_reason(b.admission_attempts):
                raise _Violation("attempts", "the closing reason is not the attempts policy's")
            if event.batch_left:
                raise _Violation("batch", "the closing session_abandoned ends its command")
            self._closing = False
            self._ended = True
            return
        self._single_human(event, first)
        _session_level(event)
        if b.lifecycle not in ("active", "paused"):  # pragma: no cover - refused above
            raise _Violation("lifecycle", f"abandon while {b.lifecycle}")

    def _finalized(self, b: _Builder, event: ev.Event, first: bool) -> None:
        _require_human(event)
        previous = self._previous
        if (
            first
            or self._kind != "finalize"
            or not isinstance(previous, ev.ArtifactWritten)
            or previous.payload.name != "report.md"
            or previous.stage != event.stage
        ):
            raise _Violation("finalize", "session_finalized comes with its report.md")
        if event.batch_left:
            raise _Violation("batch", "session_finalized ends its command")
        i = b._idx(event.stage)
        if i < 0 or b.wf.steps[i].kind != "finalize" or b.current_index() != i:
            raise _Violation("finalize", "the workflow has not reached finalization")
        if b.reviews:
            raise _Violation("finalize", f"open reviews: {sorted(b.reviews)}")
        if b.blocked_reason() is not None:
            raise _Violation("finalize", "the workflow is blocked")
        self._ended = True


def _expected_event(proposed: ev.ProposedEvent, option_id: str) -> tuple[str, str | None, object]:
    """What choosing ``proposed`` records: its type, subject and payload as the kernel validates
    it — an option that cannot be recorded (unknown type, invalid payload) is no legal choice."""
    if proposed.type not in ev.EVENT_TYPES:
        raise _Violation("answer", f"option {option_id} proposes unknown {proposed.type!r}")
    try:
        payload = ev.payload_from_builtins(proposed.type, proposed.payload)
    except msgspec.ValidationError as err:
        raise _Violation("answer", f"option {option_id}: {err}") from err
    return proposed.type, proposed.subject, msgspec.to_builtins(payload)


def _session_level(event: ev.Event) -> None:
    if event.stage is not None or event.invocation is not None or event.subject is not None:
        raise _Violation("envelope", f"{ev.info_of(event).type} is session-level")


def _require(event: ev.Event, actor: str) -> None:
    if event.actor != actor:
        raise _Violation(
            "actor", f"{ev.info_of(event).type} is written by {actor}, not {event.actor}"
        )


def _require_human(event: ev.Event) -> None:
    if not is_human_actor(event.actor):
        raise _Violation(
            "actor", f"{ev.info_of(event).type} is a human decision, not {event.actor}'s"
        )


_INFO = {info.cls: info for info in ev.EVENT_TYPES.values()}


class _Violation(Exception):
    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


_Rule = Callable[[Replay, "_Builder", ev.Event, bool], None]
_RULES: dict[str, _Rule] = {
    "session_created": Replay._session_created,
    "session_derived": Replay._session_derived,
    "stage_started": Replay._stage_started,
    "artifact_written": Replay._artifact_written,
    "review_requested": Replay._review_requested,
    "revision_requested": Replay._revision_requested,
    "review_answered": Replay._review_answered,
    "stage_completed": Replay._stage_completed,
    "stage_failed": Replay._failed,
    "contribution_failed": Replay._failed,
    "stage_reopened": Replay._stage_reopened,
    "decision_retracted": Replay._decision_retracted,
    "stage_skipped": Replay._stage_skipped,
    "session_paused": Replay._paused,
    "session_resumed": Replay._resumed,
    "session_finalized": Replay._finalized,
    "session_abandoned": Replay._abandoned,
    "question_rephrased": Replay._rephrased,
}
#: what a rephrase's batch may end with: admission's verdict (and the closing abandon)
_VERDICT_ENDS = (ev.StageCompleted, ev.StageFailed, ev.SessionAbandoned)
