"""The Workflow Kernel (glossary): the deterministic coordinator that owns workflow state,
transitions, rollback, finalization and the atomic application of module outcomes.

This is the impure shell around the pure parts: it loads a session (ledger + cached fold), asks a
pure planner (:mod:`kernel.outcomes`, :mod:`kernel.transitions`) for the drafts, writes artifact
content first (content-addressed, durable), appends the drafts as one batch with the expected last
seq, then materializes artifacts and refreshes the status cache. A rejected outcome changes
nothing: planning raises before anything is written, and a lost race raises ``ConflictError``
from the append.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from kernel import events as ev
from kernel.clock import Clock, IdFactory
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState, empty_state, fold, fold_from
from kernel.ledger import LedgerRead, LedgerTail, TornTail, VerifyReport, genesis_hash, line_hash
from kernel.outbox import Outbox
from kernel.outcomes import ArtifactChange, ModuleOutcome, plan_outcome
from kernel.report import render_report
from kernel.store.base import SessionStore
from kernel.transitions import (
    check_human,
    plan_answer,
    plan_create,
    plan_finalize,
    plan_pause,
    plan_reopen,
    plan_resume,
    plan_retract,
    plan_skip,
)
from kernel.workflow import WorkflowSpec, default_workflow_path, load_workflow_bytes

__all__ = ["Applied", "LoadedSession", "StatusCache", "WorkflowKernel"]


class StatusCache(msgspec.Struct, frozen=True, kw_only=True):
    """The folded state at a byte offset of the ledger, keyed by last seq and head hash."""

    version: int = 1
    workflow: str
    offset: int
    line_start: int
    last_seq: int
    head: str
    state: SessionState


_CACHE_ENC = msgspec.msgpack.Encoder()
_CACHE_DEC = msgspec.msgpack.Decoder(StatusCache)


@dataclass(frozen=True)
class LoadedSession:
    session: str
    workflow: WorkflowSpec
    state: SessionState
    head: str
    torn: TornTail | None


@dataclass(frozen=True)
class Applied:
    session: str
    events: list[ev.Event]
    head: str
    state: SessionState


class WorkflowKernel:
    def __init__(
        self,
        store: SessionStore,
        *,
        clock: Clock,
        ids: IdFactory,
        workflow_path: Path | None = None,
        workflow_cache: Path | None = None,
        outbox: Outbox | None = None,
        after_finalize: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        self.workflow_path = workflow_path or default_workflow_path()
        self.workflow_cache = workflow_cache
        self.outbox = outbox
        self.after_finalize = after_finalize

    # ------------------------------------------------------------------ loading

    def session_workflow(self, session: str) -> WorkflowSpec:
        raw = self.store.workflow_bytes(session)
        return load_workflow_bytes(
            raw, f"sessions/{session}/workflow.yaml", cache_dir=self.workflow_cache
        )

    def load(self, session: str, *, at: int | None = None) -> LoadedSession:
        """The folded session (from the status cache plus new events), or its state at ``at``."""
        ledger = self.store.ledger(session)
        workflow = self.session_workflow(session)
        if at is not None:
            return self._load_at(session, workflow, at)
        cache = self._read_cache(session, workflow)
        if cache is not None:
            read = ledger.read(start=cache.offset)
            state = fold_from(workflow, cache.state, read.events) if read.events else cache.state
            head = read.head if read.events else cache.head
        else:
            read = ledger.read()
            state = fold(workflow, read.events)
            head = read.head
        if not state.session:
            raise NotFoundError(f"session {session} has no events yet")
        if read.events:
            self._write_cache(session, workflow, state, ledger.tail())
        return LoadedSession(session, workflow, state, head, read.torn)

    def _load_at(self, session: str, workflow: WorkflowSpec, at: int) -> LoadedSession:
        if at < 0:
            raise UsageError("--at takes a seq ≥ 0")
        read = self.store.ledger(session).read()
        last = read.events[-1].seq if read.events else 0
        if at > last:
            raise NotFoundError(f"seq {at} does not exist (last seq is {last})")
        events = read.events[:at]
        state = fold(workflow, events) if events else empty_state(workflow)
        head = _head_at(read, session, at)
        return LoadedSession(session, workflow, state, head, read.torn)

    def _read_cache(self, session: str, workflow: WorkflowSpec) -> StatusCache | None:
        raw = self.store.read_cache(session)
        if raw is None:
            return None
        try:
            cache = _CACHE_DEC.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if cache.workflow != workflow.sha256:
            return None
        ledger = self.store.ledger(session)
        data = ledger.read_bytes(cache.line_start)[: cache.offset - cache.line_start]
        if not data.endswith(b"\n") or line_hash(data[:-1]) != cache.head:
            return None  # the ledger changed under the cache (repair, tampering): fold afresh
        return cache

    def _write_cache(
        self, session: str, workflow: WorkflowSpec, state: SessionState, tail: LedgerTail
    ) -> None:
        if tail.last_seq != state.last_seq:
            return  # someone appended meanwhile; the next load refreshes
        cache = StatusCache(
            workflow=workflow.sha256,
            offset=tail.size,
            line_start=tail.last_line_start,
            last_seq=tail.last_seq,
            head=tail.head,
            state=state,
        )
        try:
            data = _CACHE_ENC.encode(cache)
        except OverflowError:
            # A payload integer beyond 64 bits: the JSON ledger holds it, msgpack cannot. The
            # cache is an optimisation only; without it the next load folds the whole ledger.
            return
        self.store.write_cache(session, data)

    # ------------------------------------------------------------------ committing

    def _commit(
        self,
        loaded: LoadedSession,
        drafts: Sequence[ev.EventDraft],
        artifacts: Sequence[ArtifactChange] = (),
    ) -> Applied:
        session = loaded.session
        for change in artifacts:
            self.store.put_object(session, change.content)
        ledger = self.store.ledger(session)
        result = ledger.append(drafts, expected_last_seq=loaded.state.last_seq, clock=self.clock)
        for event in result.events:
            if isinstance(event, ev.ArtifactWritten):
                self.store.materialize(session, event.payload.name, event.payload.sha256)
        state = fold_from(loaded.workflow, loaded.state, result.events)
        self._write_cache(session, loaded.workflow, state, ledger.tail())
        return Applied(session, result.events, result.head, state)

    # ------------------------------------------------------------------ sessions

    def _new_workflow(self) -> tuple[WorkflowSpec, bytes]:
        try:
            raw = self.workflow_path.read_bytes()
        except FileNotFoundError as err:
            raise UsageError(f"{self.workflow_path}: workflow file not found") from err
        spec = load_workflow_bytes(raw, str(self.workflow_path), cache_dir=self.workflow_cache)
        return spec, raw

    def create_session(
        self,
        question: str,
        *,
        actor: str,
        derived_from: str | None = None,
        from_head: str | None = None,
        reason: str = "",
    ) -> Applied:
        workflow, raw = self._new_workflow()
        session = self.ids.session_id(self.clock.now())
        drafts = plan_create(
            workflow,
            session,
            question,
            actor=actor,
            derived_from=derived_from,
            from_head=from_head,
            reason=reason,
        )
        self.store.create_session(session, raw)
        loaded = LoadedSession(session, workflow, empty_state(workflow), "", None)
        return self._commit(loaded, drafts)

    def derive(self, session: str, *, actor: str, reason: str = "") -> Applied:
        """A new session linked to a finalized one (the way to correct a finalized result)."""
        check_human(actor)
        source = self.load(session)
        if source.state.lifecycle != "finalized":
            raise PolicyError(
                f"session {session} is {source.state.lifecycle}; only a finalized one is derived"
            )
        return self.create_session(
            source.state.question,
            actor=actor,
            derived_from=session,
            from_head=source.head,
            reason=reason,
        )

    def apply_outcome(
        self, session: str, stage: str, outcome: ModuleOutcome, *, actor: str
    ) -> Applied:
        loaded = self.load(session)
        drafts = plan_outcome(loaded.workflow, loaded.state, stage, outcome, actor=actor)
        return self._commit(loaded, drafts, outcome.artifacts)

    def answer(
        self,
        session: str,
        seq: int,
        *,
        actor: str,
        choose: tuple[str, ...] = (),
        approve: bool = False,
        reject: bool = False,
        rationale: str = "",
    ) -> Applied:
        loaded = self.load(session)
        drafts = plan_answer(
            loaded.workflow,
            loaded.state,
            seq,
            actor=actor,
            choose=choose,
            approve=approve,
            reject=reject,
            rationale=rationale,
        )
        return self._commit(loaded, drafts)

    def retract(self, session: str, seq: int, *, actor: str, reason: str | None) -> Applied:
        loaded = self.load(session)
        return self._commit(loaded, plan_retract(loaded.state, seq, actor=actor, reason=reason))

    def skip(self, session: str, stage: str, *, actor: str, reason: str | None) -> Applied:
        loaded = self.load(session)
        drafts = plan_skip(loaded.workflow, loaded.state, stage, actor=actor, reason=reason)
        return self._commit(loaded, drafts)

    def reopen(self, session: str, stage: str, *, actor: str, reason: str | None) -> Applied:
        loaded = self.load(session)
        drafts = plan_reopen(loaded.workflow, loaded.state, stage, actor=actor, reason=reason)
        return self._commit(loaded, drafts)

    def pause(self, session: str, *, actor: str, reason: str = "") -> Applied:
        loaded = self.load(session)
        return self._commit(loaded, plan_pause(loaded.state, actor=actor, reason=reason))

    def resume(self, session: str, *, actor: str, reason: str = "") -> Applied:
        loaded = self.load(session)
        return self._commit(loaded, plan_resume(loaded.state, actor=actor, reason=reason))

    def finalize(self, session: str, *, actor: str) -> Applied:
        """Finalize: render ``report.md`` from the state, append it and ``session_finalized``."""
        loaded = self.load(session)
        check_human(actor)
        report = render_report(loaded.workflow, loaded.state, loaded.head)
        change = ArtifactChange(name="report.md", content=report)
        drafts = plan_finalize(
            loaded.workflow,
            loaded.state,
            actor=actor,
            report_sha256=change.sha256,
            report_size=len(report),
        )
        applied = self._commit(loaded, drafts, (change,))
        if self.outbox is not None and self.after_finalize:
            self.outbox.enqueue(session, self.after_finalize, self.clock)
        return applied

    # ------------------------------------------------------------------ reading

    def artifact(self, session: str, name: str) -> bytes:
        """An artifact's current content, verified against the hash recorded in the ledger."""
        loaded = self.load(session)
        record = loaded.state.effective_artifact(name)
        if record is None:
            known = sorted({a.name for a in loaded.state.artifacts if a.status == "effective"})
            hint = f"; artifacts: {', '.join(known)}" if known else ""
            raise NotFoundError(f"session {session} has no artifact {name!r}{hint}")
        data = self.store.read_artifact(session, name)
        if data is None or line_hash(data) != record.sha256:
            # never materialized (crash after the append) or altered: restore the recorded version
            data = self.store.get_object(session, record.sha256)
            self.store.materialize(session, name, record.sha256)
        return data

    def log(self, session: str, *, from_seq: int = 1) -> list[ev.Event]:
        read = self.store.ledger(session).read()
        return [e for e in read.events if e.seq >= from_seq]

    def verify(self, session: str, *, repair: bool = False) -> VerifyReport:
        ledger = self.store.ledger(session)
        report = ledger.verify()
        if repair and any(p.code == "torn_tail" for p in report.problems):
            ledger.repair()
            repaired = ledger.verify()
            return VerifyReport(
                ok=repaired.ok,
                events=repaired.events,
                head=repaired.head,
                problems=repaired.problems,
                repaired=True,
            )
        return report

    def session_ids(self) -> list[str]:
        return self.store.session_ids()


def _head_at(read: LedgerRead, session: str, at: int) -> str:
    """The head after event ``at``: the ``prev`` of event ``at + 1``, or the ledger's head."""
    if at == 0:
        return genesis_hash(session)
    if at < len(read.events):
        return read.events[at].prev
    return read.head
