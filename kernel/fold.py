"""The fold: ``fold(workflow, events) -> SessionState``, pure and total (ARCHITECTURE §3.3).

Everything the kernel shows — stage states, the current stage, effective decisions, open reviews,
the blocked flag, the lifecycle — is derived here from the ledger and nothing else. The fold is:

- **pure**: no I/O, no clock; the same events always give the same (equal) state;
- **total**: any sequence of well-typed events folds without raising; references to unknown
  stages, seqs or reviews are ignored (the kernel never writes them, a hand-edited ledger might);
- **incremental**: ``fold_from(fold(wf, a), b) == fold(wf, a + b)``, so a cached state plus the
  new events is all ``tht session status`` needs.

Stage states (glossary "Stage state"): ``pending ready running awaiting_human completed skipped
failed``. ``blocked`` is not a stage state: it is the session-level projection "a required stage
or contribution failed".
"""

from collections.abc import Callable, Iterable
from typing import Literal

import msgspec

from kernel import events as ev
from kernel.replay import IntegrityIssue, Replay, ReplayContext
from kernel.signature_rules import HumanCheck
from kernel.workflow import StepKind, WorkflowSpec

__all__ = [
    "ArtifactRecord",
    "DecisionRecord",
    "OpenReview",
    "SessionState",
    "StageView",
    "Warning",
    "empty_state",
    "fold",
    "fold_from",
]

StageStateName = Literal[
    "pending", "ready", "running", "awaiting_human", "completed", "skipped", "failed"
]
Activity = Literal["none", "running", "completed", "skipped", "failed"]
Lifecycle = Literal["active", "paused", "finalized", "abandoned"]
ReviewKind = Literal["select", "decide", "confirm", "revision"]
RecordStatus = Literal["effective", "retracted", "stale"]
ArtifactStatus = Literal["effective", "superseded", "stale"]


class StageView(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    display: str | None
    kind: StepKind
    state: StageStateName
    activity: Activity
    epoch: int
    attempt: int
    invocation: str | None
    reason: str | None = None
    failure_code: str | None = None


class OpenReview(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    stage: str
    kind: ReviewKind
    prompt: str
    options: tuple[ev.ReviewOptionPayload, ...] = ()
    artifacts: tuple[str, ...] = ()
    target: str | None = None
    #: answering it completes the stage (a closing select/decide of the step's own module)
    closes: bool = False


class DecisionRecord(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    type: str
    stage: str | None
    subject: str | None
    status: RecordStatus
    event: ev.AnyEvent


class ArtifactRecord(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    stage: str | None
    seq: int
    sha256: str
    size: int
    status: ArtifactStatus


class Warning(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    stage: str | None
    code: str
    message: str


class SessionState(msgspec.Struct, frozen=True, kw_only=True):
    session: str
    workflow: str
    question: str
    lifecycle: Lifecycle
    derived_from: str | None
    stages: tuple[StageView, ...]
    current_stage: str | None
    open_reviews: tuple[OpenReview, ...]
    decisions: tuple[DecisionRecord, ...]
    artifacts: tuple[ArtifactRecord, ...]
    receipts: tuple[int, ...]
    warnings: tuple[Warning, ...]
    blocked: bool
    blocked_reason: str | None
    last_seq: int
    last_ts: str | None
    finalized_seq: int | None
    #: lines no legal command could have written (kernel.replay); non-empty = the ledger is
    #: compromised: shown, never appended to until a human repairs it
    integrity: tuple[IntegrityIssue, ...] = ()
    #: the replay's place inside a batch (None at a batch boundary)
    replay: ReplayContext | None = None
    #: which question of the session Question Admission judges (1, then 2, 3, … after each
    #: ``question_rephrased``) and how many it may judge (``session_created``'s
    #: ``admission_attempts``): the attempts policy of spec 003 §17
    question_attempt: int = 1
    admission_attempts: int = ev.DEFAULT_ADMISSION_ATTEMPTS

    def stage(self, stage_id: str) -> StageView | None:
        for view in self.stages:
            if view.id == stage_id:
                return view
        return None

    def effective_decisions(self) -> tuple[DecisionRecord, ...]:
        return tuple(d for d in self.decisions if d.status == "effective")

    def decision(self, seq: int) -> DecisionRecord | None:
        for record in self.decisions:
            if record.seq == seq:
                return record
        return None

    def review(self, seq: int) -> OpenReview | None:
        for review in self.open_reviews:
            if review.seq == seq:
                return review
        return None

    def effective_artifact(self, name: str) -> ArtifactRecord | None:
        for record in self.artifacts:
            if record.name == name and record.status == "effective":
                return record
        return None


def empty_state(workflow: WorkflowSpec) -> SessionState:
    """The state before any event (no session yet)."""
    return _Builder(workflow).freeze()


def fold(
    workflow: WorkflowSpec,
    events: Iterable[ev.Event],
    *,
    human_check: HumanCheck | None = None,
) -> SessionState:
    """Fold (and replay, :mod:`kernel.replay`) a whole ledger. ``human_check`` is the signed
    mode's signature check of every human event."""
    builder = _Builder(workflow, human_check)
    builder.apply_all(events)
    return builder.freeze()


def fold_from(
    workflow: WorkflowSpec,
    state: SessionState,
    events: Iterable[ev.Event],
    *,
    human_check: HumanCheck | None = None,
) -> SessionState:
    """Continue folding from ``state`` (at a batch boundary): equal to folding every event
    from the start."""
    builder = _Builder(workflow, human_check)
    builder.thaw(state)
    builder.apply_all(events)
    return builder.freeze()


class _Decision:
    __slots__ = ("event", "index", "status")

    def __init__(self, event: ev.Event, index: int, status: RecordStatus) -> None:
        self.event = event
        self.index = index
        self.status: RecordStatus = status


class _Artifact:
    __slots__ = ("index", "record")

    def __init__(self, record: ArtifactRecord, index: int) -> None:
        self.record = record
        self.index = index


class _Builder:
    """Mutable accumulator used inside one fold call only."""

    def __init__(self, workflow: WorkflowSpec, human_check: HumanCheck | None = None) -> None:
        self.wf = workflow
        self.replay = Replay(human_check)
        n = len(workflow.steps)
        self.index = {step.id: i for i, step in enumerate(workflow.steps)}
        self.activity: list[Activity] = ["none"] * n
        self.epoch = [1] * n
        self.attempt = [0] * n
        self.invocation: list[str | None] = [None] * n
        self.reason: list[str | None] = [None] * n
        self.failure_code: list[str | None] = [None] * n
        self.session = ""
        self.workflow_sha = workflow.sha256
        self.question = ""
        self.question_attempt = 1
        self.admission_attempts = ev.DEFAULT_ADMISSION_ATTEMPTS
        self.lifecycle: Lifecycle = "active"
        self.derived_from: str | None = None
        self.reviews: dict[int, OpenReview] = {}
        self.decisions: dict[int, _Decision] = {}
        self.artifacts: list[_Artifact] = []
        # Indexes that keep every handler proportional to what it changes (not to the history):
        # effective decisions and not-yet-stale artifacts per step, the effective artifact by name.
        self.live_decisions: list[dict[int, _Decision]] = [{} for _ in range(n)]
        self.live_artifacts: list[list[_Artifact]] = [[] for _ in range(n)]
        self.current_artifact: dict[str, _Artifact] = {}
        self.receipts: list[int] = []
        self.warnings: list[Warning] = []
        self.last_seq = 0
        self.last_ts: str | None = None
        self.finalized_seq: int | None = None
        self.handlers: dict[type[ev.Event], Callable[[ev.Event], None]] = {
            ev.SessionCreated: self._session_created,
            ev.StageStarted: self._stage_started,
            ev.ReviewRequested: self._review_requested,
            ev.RevisionRequested: self._revision_requested,
            ev.ReviewAnswered: self._review_answered,
            ev.StageCompleted: self._stage_completed,
            ev.StageSkipped: self._stage_skipped,
            ev.StageFailed: self._stage_failed,
            ev.ContributionFailed: self._contribution_failed,
            ev.StageReopened: self._stage_reopened,
            ev.DecisionRetracted: self._decision_retracted,
            ev.ArtifactWritten: self._artifact_written,
            ev.SessionPaused: self._session_paused,
            ev.SessionResumed: self._session_resumed,
            ev.SessionFinalized: self._session_finalized,
            ev.SessionAbandoned: self._session_abandoned,
            ev.SessionDerived: self._session_derived,
            ev.QuestionRephrased: self._question_rephrased,
            ev.LedgerRepaired: self._ignore,
        }
        # never in a session; replay reports them
        for name in ev.REGISTRY_TYPES | ev.CATALOG_TYPES | ev.MEMORY_REGISTRY_TYPES:
            self.handlers[ev.EVENT_TYPES[name].cls] = self._ignore
        for name in ev.DECISION_TYPES:
            self.handlers[ev.EVENT_TYPES[name].cls] = self._decision
        for name in ev.RECEIPT_TYPES:
            self.handlers[ev.EVENT_TYPES[name].cls] = self._receipt

    # ------------------------------------------------------------------ driving

    def apply_all(self, events: Iterable[ev.Event]) -> None:
        handlers = self.handlers
        check = self.replay.check
        last: ev.Event | None = None
        for event in events:
            check(self, event)
            handlers[type(event)](event)
            last = event
        if last is not None:
            self.last_seq = last.seq
            self.last_ts = last.ts

    def _idx(self, stage: str | None) -> int:
        if stage is None:
            return -1
        return self.index.get(stage, -1)

    def current_index(self) -> int:
        """The first step not done (-1 when every step is): what ``current_stage`` names."""
        for i, step in enumerate(self.wf.steps):
            activity = self.activity[i]
            if not (
                activity in ("completed", "skipped")
                or (activity == "failed" and step.policy == "best_effort")
            ):
                return i
        return -1

    def blocked_reason(self) -> str | None:
        for i, step in enumerate(self.wf.steps):
            if self.activity[i] == "failed" and step.policy == "required":
                return f"{step.id} failed: {self.reason[i] or self.failure_code[i]}"
        return None

    def _touch(self, i: int) -> None:
        if i >= 0 and self.activity[i] == "none":
            self.activity[i] = "running"

    # ------------------------------------------------------------------ handlers

    def _session_created(self, event: ev.Event) -> None:
        assert isinstance(event, ev.SessionCreated)
        payload = event.payload
        self.session = event.subject or ""
        self.question = payload.question
        self.workflow_sha = payload.workflow.sha256
        self.derived_from = payload.derived_from
        self.lifecycle = "active"
        attempts = payload.admission_attempts
        if not isinstance(attempts, msgspec.UnsetType):
            self.admission_attempts = attempts

    def _stage_started(self, event: ev.Event) -> None:
        i = self._idx(event.stage)
        if i < 0:
            return
        self.activity[i] = "running"
        self.attempt[i] = event.attempt if event.attempt is not None else self.attempt[i] + 1
        self.invocation[i] = event.invocation
        self.reason[i] = None
        self.failure_code[i] = None

    def _review_requested(self, event: ev.Event) -> None:
        assert isinstance(event, ev.ReviewRequested)
        i = self._idx(event.stage)
        if i < 0:
            return
        self._touch(i)
        payload = event.payload
        self.reviews[event.seq] = OpenReview(
            seq=event.seq,
            stage=self.wf.steps[i].id,
            kind=payload.kind,
            prompt=payload.prompt,
            options=payload.options,
            artifacts=payload.artifacts,
            closes=payload.closes is True,
        )

    def _revision_requested(self, event: ev.Event) -> None:
        assert isinstance(event, ev.RevisionRequested)
        i = self._idx(event.stage)
        if i < 0:
            return
        self._touch(i)
        self.reviews[event.seq] = OpenReview(
            seq=event.seq,
            stage=self.wf.steps[i].id,
            kind="revision",
            prompt=event.payload.reason,
            target=event.payload.target,
        )

    def _review_answered(self, event: ev.Event) -> None:
        if event.causation is not None:
            self.reviews.pop(event.causation, None)

    def _close_reviews(self, i: int) -> None:
        for seq in [s for s, r in self.reviews.items() if self.index.get(r.stage, -1) == i]:
            del self.reviews[seq]

    def _stage_completed(self, event: ev.Event) -> None:
        i = self._idx(event.stage)
        if i < 0:
            return
        self.activity[i] = "completed"
        self._close_reviews(i)

    def _stage_skipped(self, event: ev.Event) -> None:
        assert isinstance(event, ev.StageSkipped)
        i = self._idx(event.stage)
        if i < 0:
            return
        self.activity[i] = "skipped"
        self.reason[i] = event.payload.reason
        self._close_reviews(i)

    def _stage_failed(self, event: ev.Event) -> None:
        assert isinstance(event, ev.StageFailed)
        self._fail(event, event.payload.code, event.payload.message)

    def _contribution_failed(self, event: ev.Event) -> None:
        assert isinstance(event, ev.ContributionFailed)
        i = self._fail(event, event.payload.code, event.payload.message)
        if i >= 0 and self.wf.steps[i].policy == "best_effort":
            self.warnings.append(
                Warning(
                    seq=event.seq,
                    stage=event.stage,
                    code=event.payload.code,
                    message=event.payload.message,
                )
            )

    def _fail(self, event: ev.Event, code: str, message: str) -> int:
        i = self._idx(event.stage)
        if i < 0:
            return i
        self.activity[i] = "failed"
        self.failure_code[i] = code
        self.reason[i] = message
        self._close_reviews(i)
        return i

    def _stage_reopened(self, event: ev.Event) -> None:
        i = self._idx(event.stage)
        if i < 0:
            return
        for j in range(i, len(self.activity)):
            self.activity[j] = "none"
            self.epoch[j] += 1
            self.attempt[j] = 0
            self.invocation[j] = None
            self.reason[j] = None
            self.failure_code[j] = None
            for decision in self.live_decisions[j].values():
                decision.status = "stale"
            self.live_decisions[j].clear()
            for artifact in self.live_artifacts[j]:
                if self.current_artifact.get(artifact.record.name) is artifact:
                    del self.current_artifact[artifact.record.name]
                artifact.record = msgspec.structs.replace(artifact.record, status="stale")
            self.live_artifacts[j].clear()
        for seq in [s for s, r in self.reviews.items() if self.index.get(r.stage, -1) >= i]:
            del self.reviews[seq]

    def _question_rephrased(self, event: ev.Event) -> None:
        """The session asks its new question: the preflight starts over as a new invocation
        (like a reopen of that one step); the refusal it answers stays in the history, stale."""
        assert isinstance(event, ev.QuestionRephrased)
        self.question = event.payload.question
        self.question_attempt = event.payload.attempt
        i = self._idx(event.stage)
        if i < 0:
            return
        self.activity[i] = "none"
        self.epoch[i] += 1
        self.attempt[i] = 0
        self.invocation[i] = None
        self.reason[i] = None
        self.failure_code[i] = None
        for decision in self.live_decisions[i].values():
            decision.status = "stale"
        self.live_decisions[i].clear()
        self._close_reviews(i)

    def _decision_retracted(self, event: ev.Event) -> None:
        if event.retracts is None:
            return
        decision = self.decisions.get(event.retracts)
        if decision is not None and decision.status == "effective":
            decision.status = "retracted"
            if decision.index >= 0:
                self.live_decisions[decision.index].pop(event.retracts, None)

    def _artifact_written(self, event: ev.Event) -> None:
        assert isinstance(event, ev.ArtifactWritten)
        payload = event.payload
        previous = self.current_artifact.get(payload.name)
        if previous is not None:  # at most one effective version per name
            previous.record = msgspec.structs.replace(previous.record, status="superseded")
        record = ArtifactRecord(
            name=payload.name,
            stage=event.stage,
            seq=event.seq,
            sha256=payload.sha256,
            size=payload.size,
            status="effective",
        )
        artifact = _Artifact(record, self._idx(event.stage))
        self.artifacts.append(artifact)
        self.current_artifact[payload.name] = artifact
        if artifact.index >= 0:
            self.live_artifacts[artifact.index].append(artifact)

    def _session_paused(self, event: ev.Event) -> None:
        self.lifecycle = "paused"

    def _session_resumed(self, event: ev.Event) -> None:
        self.lifecycle = "active"

    def _session_abandoned(self, event: ev.Event) -> None:
        self.lifecycle = "abandoned"

    def _session_finalized(self, event: ev.Event) -> None:
        self.lifecycle = "finalized"
        self.finalized_seq = event.seq
        for i, step in enumerate(self.wf.steps):
            if step.kind == "finalize":
                self.activity[i] = "completed"

    def _session_derived(self, event: ev.Event) -> None:
        assert isinstance(event, ev.SessionDerived)
        self.derived_from = event.payload.from_session

    def _decision(self, event: ev.Event) -> None:
        i = self._idx(event.stage)
        self._touch(i)
        decision = _Decision(event, i, "effective")
        self.decisions[event.seq] = decision
        if i >= 0:
            self.live_decisions[i][event.seq] = decision

    def _ignore(self, event: ev.Event) -> None:
        pass

    def _receipt(self, event: ev.Event) -> None:
        self.receipts.append(event.seq)

    # ------------------------------------------------------------------ freezing

    def freeze(self) -> SessionState:
        steps = self.wf.steps
        current = -1
        for i, step in enumerate(steps):
            activity = self.activity[i]
            done = activity in ("completed", "skipped") or (
                activity == "failed" and step.policy == "best_effort"
            )
            if not done:
                current = i
                break
        awaiting = {self.index.get(r.stage, -1) for r in self.reviews.values()}
        views = []
        blocked_reason: str | None = None
        for i, step in enumerate(steps):
            activity = self.activity[i]
            state: StageStateName
            if activity == "completed" or activity == "skipped" or activity == "failed":
                state = activity
            elif i in awaiting:
                state = "awaiting_human"
            elif activity == "running":
                state = "running"
            elif i == current and self.session:
                state = "ready"
            else:
                state = "pending"
            if activity == "failed" and step.policy == "required" and blocked_reason is None:
                blocked_reason = f"{step.id} failed: {self.reason[i] or self.failure_code[i]}"
            views.append(
                StageView(
                    id=step.id,
                    display=step.display,
                    kind=step.kind,
                    state=state,
                    activity=activity,
                    epoch=self.epoch[i],
                    attempt=self.attempt[i],
                    invocation=self.invocation[i],
                    reason=self.reason[i],
                    failure_code=self.failure_code[i],
                )
            )
        finalized = self.lifecycle == "finalized"
        decisions = tuple(
            DecisionRecord(
                seq=seq,
                type=ev.info_of(d.event).type,
                stage=d.event.stage,
                subject=d.event.subject,
                status=d.status,
                event=d.event,  # type: ignore[arg-type]  # decoded events are AnyEvent
            )
            for seq, d in self.decisions.items()
        )
        return SessionState(
            session=self.session,
            workflow=self.workflow_sha,
            question=self.question,
            lifecycle=self.lifecycle,
            derived_from=self.derived_from,
            stages=tuple(views),
            current_stage=None if finalized or current < 0 else steps[current].id,
            open_reviews=tuple(self.reviews[s] for s in sorted(self.reviews)),
            decisions=decisions,
            artifacts=tuple(a.record for a in self.artifacts),
            receipts=tuple(self.receipts),
            warnings=tuple(self.warnings),
            blocked=blocked_reason is not None,
            blocked_reason=blocked_reason,
            last_seq=self.last_seq,
            last_ts=self.last_ts,
            finalized_seq=self.finalized_seq,
            integrity=tuple(self.replay.issues),
            replay=self.replay.snapshot(),
            question_attempt=self.question_attempt,
            admission_attempts=self.admission_attempts,
        )

    def thaw(self, state: SessionState) -> None:
        if not state.session and state.last_seq == 0:
            return
        self.session = state.session
        self.workflow_sha = state.workflow
        self.question = state.question
        self.question_attempt = state.question_attempt
        self.admission_attempts = state.admission_attempts
        self.lifecycle = state.lifecycle
        self.derived_from = state.derived_from
        for i, view in enumerate(state.stages[: len(self.activity)]):
            self.activity[i] = view.activity
            self.epoch[i] = view.epoch
            self.attempt[i] = view.attempt
            self.invocation[i] = view.invocation
            self.reason[i] = view.reason
            self.failure_code[i] = view.failure_code
        self.reviews = {r.seq: r for r in state.open_reviews}
        self.decisions = {
            d.seq: _Decision(d.event, self._idx(d.stage), d.status) for d in state.decisions
        }
        for seq, decision in self.decisions.items():
            if decision.status == "effective" and decision.index >= 0:
                self.live_decisions[decision.index][seq] = decision
        self.artifacts = [_Artifact(a, self._idx(a.stage)) for a in state.artifacts]
        for artifact in self.artifacts:
            if artifact.record.status == "effective":
                self.current_artifact[artifact.record.name] = artifact
            if artifact.record.status != "stale" and artifact.index >= 0:
                self.live_artifacts[artifact.index].append(artifact)
        self.receipts = list(state.receipts)
        self.warnings = list(state.warnings)
        self.last_seq = state.last_seq
        self.last_ts = state.last_ts
        self.finalized_seq = state.finalized_seq
        self.replay.restore(state.replay, state.integrity)
