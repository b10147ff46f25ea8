"""The Workflow Kernel (glossary): the deterministic coordinator that owns workflow state,
transitions, rollback, finalization and the atomic application of module outcomes.

This is the impure shell around the pure parts: it loads a session (ledger + cached fold), asks a
pure planner (:mod:`kernel.outcomes`, :mod:`kernel.transitions`) for the drafts, writes artifact
content first (content-addressed, durable), appends the drafts as one batch with the expected last
seq, then materializes artifacts and refreshes the status cache. A rejected outcome changes
nothing: planning raises before anything is written, and a lost race raises ``ConflictError``
from the append.

What it trusts while loading and committing lives beside it: which human signatures a fold checks
and the key that signs a command's (:mod:`kernel.session_signatures`), signed checkpoints and the
rollback they give away (:mod:`kernel.session_checkpoints`), the status cache
(:mod:`kernel.status_cache`) and what a display is folded from (:mod:`kernel.session_display`).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel import events as ev
from kernel.admission_attempts import check_attempts, plan_closing, plan_rephrase
from kernel.clock import Clock, IdFactory
from kernel.errors import IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState, empty_state, fold, fold_from
from kernel.ledger import (
    LedgerRead,
    Problem,
    Signer,
    TornTail,
    VerifyReport,
    genesis_hash,
    line_hash,
)
from kernel.ledger_records import repair_cut, repaired_payload
from kernel.outbox import Outbox
from kernel.outcomes import ArtifactChange, ModuleOutcome, plan_outcome
from kernel.report import render_report, report_sources
from kernel.session_checkpoints import checkpoint_state, rolled_back, write_checkpoint
from kernel.session_display import shown_verified, unsigned_display
from kernel.session_signatures import reviewer_key, session_check
from kernel.status_cache import write_cache
from kernel.store.base import LedgerPort, SessionStore
from kernel.transitions import (
    check_human,
    check_question,
    immutable_refusal,
    plan_abandon,
    plan_answer,
    plan_create,
    plan_finalize,
    plan_pause,
    plan_reopen,
    plan_resume,
    plan_retract,
    plan_skip,
)
from kernel.trust import Trust
from kernel.workflow import (
    WorkflowSpec,
    default_workflow_path,
    load_workflow,
    load_workflow_bytes,
)

_DISPLAY_PROBLEMS = 3  # problems named in an IntegrityError message

__all__ = ["Applied", "LoadedSession", "WorkflowKernel"]


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
        trust: Trust | Callable[[], Trust] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        self.workflow_path = workflow_path or default_workflow_path()
        self.workflow_cache = workflow_cache
        self.outbox = outbox
        self.after_finalize = after_finalize
        self._trust = trust or Trust()

    @property
    def trust(self) -> Trust:
        """What the kernel trusts; built on first use (reading and verifying the reviewer
        registry costs a signature check). A display asks whether the workspace is signed; the
        composition root answers that without the signature stack when there is no registry."""
        if not isinstance(self._trust, Trust):
            self._trust = self._trust()
        return self._trust

    # ------------------------------------------------------------------ loading

    def session_workflow(self, session: str, ref: ev.WorkflowRef | None = None) -> WorkflowSpec:
        """The session's own workflow snapshot. With ``ref`` (from its ``session_created``),
        the snapshot's bytes must hash to what the ledger recorded, and the compiled cache is
        used only when it hashes to the recorded compiled digest (a cache is never trusted)."""
        raw = self.store.workflow_bytes(session)
        if ref is not None and line_hash(raw) != ref.sha256:
            raise IntegrityError(
                f"session {session}: its workflow snapshot was altered (its SHA-256 is not the "
                "one recorded at creation); run `tht ledger verify`"
            )
        return load_workflow_bytes(
            raw,
            f"sessions/{session}/workflow.yaml",
            cache_dir=self.workflow_cache,
            compiled_sha256=ref.compiled if ref is not None else None,
        )

    def load(self, session: str, *, at: int | None = None) -> LoadedSession:
        """The session as every policy decision sees it: folded (and replayed) from its whole,
        verified ledger — never from a cache (ARCHITECTURE §3.9 rule 4). A ledger that does not
        verify raises :class:`IntegrityError` (exit 7). ``at`` folds only up to that seq."""
        ledger = self.store.ledger(session)
        if at is not None:
            return self._load_at(session, self._workflow_of(session, ledger.read().events), at)
        if self.trust.check_signature is not None:
            first = ledger.first_event()
            try:
                workflow = self._workflow_of(session, [first] if first is not None else [])
            except (IntegrityError, UsageError):
                workflow = None
            fast = self._load_from_checkpoint(session, workflow) if workflow else None
            if fast is not None:
                return fast
        report = ledger.verify()
        events = [e for e in report.decoded if e is not None]
        workflow, state = self._replay(session, events, report.problems)
        problems = _all_problems(report, state)
        if problems:
            raise _integrity_error(session, problems)
        if not state.session:
            raise NotFoundError(f"session {session} has no events yet")
        write_cache(self.store, session, workflow, state, ledger.tail())
        return LoadedSession(session, workflow, state, report.head, None)

    def _load_from_checkpoint(self, session: str, workflow: WorkflowSpec) -> LoadedSession | None:
        """The verified state from the session's signed checkpoint plus the events after it,
        or None (then the whole ledger is verified and folded)."""
        found = checkpoint_state(self.store, self.trust, session, workflow)
        if found is None:
            return None
        state, head = found
        if state.integrity:
            raise _integrity_error(
                session, [Problem(i.rule, i.message, seq=i.seq) for i in state.integrity]
            )
        return LoadedSession(session, workflow, state, head, None)

    def load_for_display(self, session: str) -> tuple[LoadedSession, list[Problem]]:
        """What ``status`` and the reviewer web UI show. Display only — nothing decides on it.

        An unsigned session: the cached fold plus new events when the cache still matches the
        ledger's tail, else a full fold; the problems are those of the cheap checks (torn tail,
        anchor) and the ones the fold recorded. A *signed* session (or any session of a workspace
        in signed mode) is shown as a policy command sees it — the reviewer's signed checkpoint
        plus what follows it, else the whole verified fold — never from the status cache: a
        reviewer reads this to decide, and anyone with the user's account can write that cache
        (a review's options relabelled, a pending review hidden, a decision shown as taken). A
        ledger that does not verify is then shown from a full fold with every problem."""
        ledger = self.store.ledger(session)
        first = ledger.first_event()
        try:
            workflow = self._workflow_of(session, [first] if first is not None else [])
        except IntegrityError as err:
            loaded = self.load_unverified(session)
            return loaded, [Problem("workflow_snapshot", str(err))]
        if shown_verified(first, lambda: self.trust):
            return self._load_verified_for_display(session, ledger)
        state, head, torn, problems = unsigned_display(
            self.store, ledger, session, workflow, self.trust
        )
        return LoadedSession(session, workflow, state, head, torn), problems

    def _load_verified_for_display(
        self, session: str, ledger: LedgerPort
    ) -> tuple[LoadedSession, list[Problem]]:
        try:
            return self.load(session), []
        except IntegrityError:
            pass
        report = ledger.verify()
        events = [e for e in report.decoded if e is not None]
        if not events:
            raise NotFoundError(f"session {session} has no events yet")
        workflow, state = self._replay(session, events, report.problems)
        problems = _all_problems(report, state)
        return LoadedSession(session, workflow, state, report.head, None), problems

    def load_unverified(self, session: str) -> LoadedSession:
        """A full fold of whatever the ledger holds (display of a damaged session)."""
        ledger = self.store.ledger(session)
        read = ledger.read()
        try:
            workflow = self.session_workflow(session)
        except UsageError:  # an altered snapshot that no longer compiles: show the events only
            workflow = load_workflow(default_workflow_path())
        state = fold(workflow, read.events, human_check=session_check(self.trust, read.events))
        return LoadedSession(session, workflow, state, read.head, read.torn)

    def _workflow_of(self, session: str, events: Sequence[ev.Event]) -> WorkflowSpec:
        created = events[0] if events else None
        ref = created.payload.workflow if isinstance(created, ev.SessionCreated) else None
        return self.session_workflow(session, ref)

    def _replay(
        self, session: str, events: list[ev.Event], problems: list[Problem], *, full: bool = False
    ) -> tuple[WorkflowSpec, SessionState]:
        try:
            workflow = self._workflow_of(session, events)
        except IntegrityError as err:
            # an altered snapshot: nothing can be replayed against it (it may not even compile)
            problems.append(Problem("workflow_snapshot", str(err), seq=1))
            fallback = load_workflow(default_workflow_path())
            return fallback, empty_state(fallback)
        check = session_check(self.trust, events, full=full)
        state = fold(workflow, events, human_check=check)
        last_seq = events[-1].seq if events else 0
        rollback = rolled_back(self.store, self.trust.check_signature, session, workflow, last_seq)
        if rollback is not None:
            problems.append(rollback)
        created = events[0] if events else None
        if (
            isinstance(created, ev.SessionCreated)
            and created.payload.human_decisions == "signed"
            and not self._workflow_trusted(created.payload.workflow.sha256)
        ):
            problems.append(
                Problem(
                    "workflow_not_approved",
                    "a signed session runs on a custom workflow no reviewer approved",
                    seq=1,
                )
            )
        return workflow, state

    def _workflow_trusted(self, sha256: str) -> bool:
        if sha256 in self.trust.approved_workflows:
            return True
        try:
            return line_hash(default_workflow_path().read_bytes()) == sha256
        except OSError:
            return False

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

    # ------------------------------------------------------------------ committing

    def _commit(
        self,
        loaded: LoadedSession,
        drafts: Sequence[ev.EventDraft],
        artifacts: Sequence[ArtifactChange] = (),
    ) -> Applied:
        session = loaded.session
        if loaded.state.integrity:
            raise _integrity_error(
                session, [Problem(i.rule, i.message, seq=i.seq) for i in loaded.state.integrity]
            )
        refusal = immutable_refusal(loaded.state)
        if refusal is not None and any(d.type != "ledger_repaired" for d in drafts):
            raise refusal  # every planner refuses it too; this is the one place none can miss
        key = reviewer_key(drafts, lambda: self.trust)
        signer: Signer | None = None
        if key is not None:
            actor, sign = key.reviewer, key.sign_event

            def signer(event: ev.Event) -> str | None:
                return sign(event) if event.actor == actor else None

        for change in artifacts:
            self.store.put_object(session, change.content)
        ledger = self.store.ledger(session)
        result = ledger.append(
            drafts, expected_last_seq=loaded.state.last_seq, clock=self.clock, signer=signer
        )
        for event in result.events:
            if isinstance(event, ev.ArtifactWritten):
                self.store.materialize(session, event.payload.name, event.payload.sha256)
        state = fold_from(loaded.workflow, loaded.state, result.events)
        tail = ledger.tail()
        write_cache(self.store, session, loaded.workflow, state, tail)
        if key is not None:
            write_checkpoint(self.store, session, loaded.workflow, state, tail, key)
        return Applied(session, result.events, result.head, state)

    # ------------------------------------------------------------------ sessions

    def _new_workflow(self) -> tuple[WorkflowSpec, bytes]:
        try:
            raw = self.workflow_path.read_bytes()
        except FileNotFoundError as err:
            raise UsageError(f"{self.workflow_path}: workflow file not found") from err
        # no compiled cache here: a session that is then refused (an unapproved workflow in
        # signed mode) leaves nothing behind; the session's first load writes the cache
        spec = load_workflow_bytes(raw, str(self.workflow_path), cache_dir=None)
        return spec, raw

    def create_session(
        self,
        question: str,
        *,
        actor: str,
        derived_from: str | None = None,
        from_head: str | None = None,
        reason: str = "",
        admission_attempts: int | None = None,
    ) -> Applied:
        """Everything is checked (question, workflow, trust) before anything is written.
        ``admission_attempts``: the workspace's attempts policy, recorded in the session (None:
        the default)."""
        check_question(question)
        attempts = check_attempts(admission_attempts)
        workflow, raw = self._new_workflow()
        if self.trust.signed and not self._workflow_trusted(workflow.sha256):
            raise PolicyError(
                f"{self.workflow_path}: signed mode accepts the packaged workflow or one a "
                "reviewer approved (`tht reviewer approve-workflow`); this one is not approved"
            )
        session = self.ids.session_id(self.clock.now())
        drafts = plan_create(
            workflow,
            session,
            question,
            actor=actor,
            derived_from=derived_from,
            from_head=from_head,
            reason=reason,
            signed=self.trust.signed,
            admission_attempts=attempts,
        )
        self.store.create_session(session, raw)
        loaded = LoadedSession(session, workflow, empty_state(workflow), "", None)
        return self._commit(loaded, drafts)

    def derive(
        self,
        session: str,
        *,
        actor: str,
        reason: str = "",
        admission_attempts: int | None = None,
    ) -> Applied:
        """A new session linked to a finalized or abandoned one (the way to correct a
        finalized result, or to start again after an abandoned one — one closed after its
        last allowed refusal included); it gets the attempts policy in force now."""
        check_human(actor)
        source = self.load(session)
        if source.state.lifecycle not in ("finalized", "abandoned"):
            raise PolicyError(
                f"session {session} is {source.state.lifecycle}; only a finalized one is "
                "derived, or an abandoned one (`tht session abandon`)"
            )
        return self.create_session(
            source.state.question,
            actor=actor,
            derived_from=session,
            from_head=source.head,
            reason=reason,
            admission_attempts=admission_attempts,
        )

    def apply_outcome(
        self,
        session: str,
        stage: str,
        outcome: ModuleOutcome,
        *,
        actor: str,
        loaded: LoadedSession | None = None,
    ) -> Applied:
        """``loaded``: the session this very command just loaded (verified), so a proposal is
        folded once; the append's expected last seq still catches anyone who appended since."""
        if loaded is None or loaded.session != session:
            loaded = self.load(session)
        drafts = plan_outcome(loaded.workflow, loaded.state, stage, outcome, actor=actor)
        # admission refusing the last allowed question closes the session in the same batch
        drafts = plan_closing(loaded.workflow, loaded.state, stage, drafts)
        return self._commit(loaded, drafts, outcome.artifacts)

    def rephrase(
        self,
        session: str,
        question: str,
        outcome: ModuleOutcome,
        *,
        actor: str,
        stage: str = "admission",
        loaded: LoadedSession | None = None,
    ) -> Applied:
        """A refused question asked again (spec 003 §17; kernel/admission_attempts.py):
        ``question_rephrased`` and ``outcome`` — Question Admission's verdict on ``question``,
        the preflight owner's — in one batch, with the closing ``session_abandoned`` when the
        last allowed question is refused."""
        if loaded is None or loaded.session != session:
            loaded = self.load(session)
        drafts = plan_rephrase(loaded.workflow, loaded.state, stage, question, outcome, actor=actor)
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

    def abandon(self, session: str, *, actor: str, reason: str | None) -> Applied:
        """Abandon: ``session_abandoned``; the session is immutable afterwards."""
        loaded = self.load(session)
        return self._commit(loaded, plan_abandon(loaded.state, actor=actor, reason=reason))

    def finalize(self, session: str, *, actor: str) -> Applied:
        """Finalize: render ``report.md`` from the state, append it and ``session_finalized``."""
        loaded = self.load(session)
        check_human(actor)
        sources = {
            name: self._artifact_bytes(session, loaded.state, name)
            for name in report_sources(loaded.state)
        }
        report = render_report(loaded.workflow, loaded.state, loaded.head, sources)
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

    def artifact(self, session: str, name: str, *, loaded: LoadedSession | None = None) -> bytes:
        """An artifact's current content, verified against the hash recorded in the ledger
        (``loaded``: the session this command already loaded, not loaded twice)."""
        state = (loaded if loaded is not None else self.load(session)).state
        return self._artifact_bytes(session, state, name)

    def _artifact_bytes(self, session: str, state: SessionState, name: str) -> bytes:
        record = state.effective_artifact(name)
        if record is None:
            known = sorted({a.name for a in state.artifacts if a.status == "effective"})
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

    def verify(self, session: str, *, full: bool = False) -> VerifyReport:
        """Everything ``tht ledger verify`` checks: the file (schemas, seq, batches, hash
        chain, anchor, torn tail), the workflow snapshot, and the replay of every event
        (legality under the session's workflow; signatures in signed mode — with ``full``,
        every signature, not only those after the last verified one,
        :func:`kernel.session_signatures.session_check`)."""
        ledger = self.store.ledger(session)
        report = ledger.verify()
        problems = list(report.problems)
        events = [e for e in report.decoded if e is not None]
        if events:
            _, state = self._replay(session, events, problems, full=full)
            problems.extend(Problem(i.rule, i.message, seq=i.seq) for i in state.integrity)
        return VerifyReport(
            ok=not problems,
            events=report.events,
            head=report.head,
            problems=problems,
            decoded=report.decoded,
        )

    def repair(self, session: str, *, actor: str, reason: str) -> tuple[VerifyReport, Applied]:
        """The explicit, human-only repair (ARCHITECTURE §3.9 rule 3): quarantine the torn tail
        and every line from the first one that fails verification, accept the valid lines past
        the old anchor, re-anchor, and record all of it as ``ledger_repaired``."""
        check_human(actor)
        if not reason.strip():
            raise UsageError("a repair needs a reason (--reason TEXT)")
        before = self.verify(session)
        if before.ok:
            raise PolicyError(f"session {session} verifies: there is nothing to repair")
        if any(p.code == "missing_ledger" for p in before.problems):
            raise IntegrityError(f"session {session} has no ledger: it cannot be repaired")
        cut_seq = repair_cut(before.problems)
        if cut_seq is not None and cut_seq <= 1:
            raise IntegrityError(
                f"session {session}: its first line fails verification; it cannot be repaired "
                "(derive a new session from the question)"
            )
        ledger = self.store.ledger(session)
        ledger.close()  # a writer's cached tail would be stale after the repair
        done = ledger.repair(cut_seq=cut_seq)
        if any(p.code == "rolled_back" for p in before.problems):
            # the reviewer records the loss (the problem is in the payload); the checkpoint that
            # gave it away is replaced by the one this signed repair writes
            self.store.write_checkpoint(session, b"")
        loaded = self.load(session)
        payload = repaired_payload(reason, done, before.problems)
        applied = self._commit(
            loaded, [ev.EventDraft(type="ledger_repaired", actor=actor, payload=payload)]
        )
        return before, applied

    def session_ids(self) -> list[str]:
        return self.store.session_ids()


def _all_problems(report: VerifyReport, state: SessionState) -> list[Problem]:
    return [*report.problems, *(Problem(i.rule, i.message, seq=i.seq) for i in state.integrity)]


def _integrity_error(session: str, problems: list[Problem]) -> IntegrityError:
    named = "; ".join(
        f"{'seq ' + str(p.seq) + ': ' if p.seq else ''}{p.code}: {p.message}"
        for p in problems[:_DISPLAY_PROBLEMS]
    )
    more = (
        f" (+{len(problems) - _DISPLAY_PROBLEMS} more)" if len(problems) > _DISPLAY_PROBLEMS else ""
    )
    return IntegrityError(
        f"session {session} does not verify — {named}{more}; nothing is appended until a "
        "human repairs it (`tht ledger verify`, then "
        "`tht ledger verify --repair --reason T --as human:<id>`)"
    )


def _head_at(read: LedgerRead, session: str, at: int) -> str:
    """The head after event ``at``: the ``prev`` of event ``at + 1``, or the ledger's head."""
    if at == 0:
        return genesis_hash(session)
    if at < len(read.events):
        return read.events[at].prev
    return read.head
