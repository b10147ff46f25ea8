"""The Workflow Kernel (glossary): the deterministic coordinator that owns workflow state,
transitions, rollback, finalization and the atomic application of module outcomes.

This is the impure shell around the pure parts: it loads a session (ledger + cached fold), asks a
pure planner (:mod:`kernel.outcomes`, :mod:`kernel.transitions`) for the drafts, writes artifact
content first (content-addressed, durable), appends the drafts as one batch with the expected last
seq, then materializes artifacts and refreshes the status cache. A rejected outcome changes
nothing: planning raises before anything is written, and a lost race raises ``ConflictError``
from the append.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from kernel import events as ev
from kernel.admission_attempts import check_attempts, plan_closing, plan_rephrase
from kernel.checkpoint import continue_chain, decode_checkpoint, encode_checkpoint
from kernel.clock import Clock, IdFactory
from kernel.errors import IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState, empty_state, fold, fold_from
from kernel.ledger import (
    LedgerRead,
    LedgerTail,
    Problem,
    Signer,
    TornTail,
    VerifyReport,
    genesis_hash,
    line_hash,
)
from kernel.ledger_records import repair_cut, repaired_payload
from kernel.log import get_logger
from kernel.outbox import Outbox
from kernel.outcomes import ArtifactChange, ModuleOutcome, plan_outcome
from kernel.replay import HumanCheck, is_human_actor
from kernel.report import render_report, report_sources
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
from kernel.trust import ReviewerSigner, Trust
from kernel.workflow import (
    WorkflowSpec,
    default_workflow_path,
    load_workflow,
    load_workflow_bytes,
)

logger = get_logger(__name__)
_DISPLAY_PROBLEMS = 3  # problems named in an IntegrityError message

__all__ = ["Applied", "LoadedSession", "StatusCache", "WorkflowKernel"]


class StatusCache(msgspec.Struct, frozen=True, kw_only=True):
    """The folded state after ``(last_seq, head)`` (logical identity; ``hint`` is the store's
    opaque position of that line, used only once the line there hashes to ``head``)."""

    version: int = 2
    workflow: str
    hint: int
    last_seq: int
    head: str
    state: SessionState


_CACHE_ENC = msgspec.msgpack.Encoder()
_STATE_ENC = msgspec.msgpack.Encoder()
_STATE_DEC = msgspec.msgpack.Decoder(SessionState)
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
        self._write_cache(session, workflow, state, ledger.tail())
        return LoadedSession(session, workflow, state, report.head, None)

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
        tail_problems: list[Problem] = []
        first = ledger.first_event()
        try:
            workflow = self._workflow_of(session, [first] if first is not None else [])
        except IntegrityError as err:
            loaded = self.load_unverified(session)
            return loaded, [Problem("workflow_snapshot", str(err))]
        if self._displayed_verified(first):
            return self._load_verified_for_display(session, ledger)
        cache = self._read_cache(session, workflow)
        if cache is not None:
            read = ledger.read_after(cache.last_seq, cache.hint)
            state = fold_from(workflow, cache.state, read.events) if read.events else cache.state
            head = read.head if read.events else cache.head
        else:
            read = ledger.read()
            state = fold(workflow, read.events, human_check=self._check(read.events))
            head = read.head
        if not state.session:
            raise NotFoundError(f"session {session} has no events yet")
        if read.events:
            self._write_cache(session, workflow, state, ledger.tail())
        if read.torn is not None:
            tail_problems.append(Problem("torn_tail", "an interrupted write", repairable=True))
        anchor = ledger.read_anchor()
        if anchor is None or anchor != (state.last_seq, head):
            tail_problems.append(
                Problem("head_anchor", "the ledger disagrees with its head anchor")
            )
        issues = [Problem(i.rule, i.message, seq=i.seq) for i in state.integrity]
        return LoadedSession(session, workflow, state, head, read.torn), tail_problems + issues

    def _displayed_verified(self, first: ev.Event | None) -> bool:
        """Whether a display of the session that ``first`` opens must rest on the verified
        ledger: the session was created signed, or the workspace is in signed mode now."""
        if isinstance(first, ev.SessionCreated) and first.payload.human_decisions == "signed":
            return True
        return self.trust.signed

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
        state = fold(workflow, read.events, human_check=self._check(read.events))
        return LoadedSession(session, workflow, state, read.head, read.torn)

    def _workflow_of(self, session: str, events: Sequence[ev.Event]) -> WorkflowSpec:
        created = events[0] if events else None
        ref = created.payload.workflow if isinstance(created, ev.SessionCreated) else None
        return self.session_workflow(session, ref)

    def _check(self, events: Sequence[ev.Event], *, full: bool = False) -> HumanCheck | None:
        """The signature check for a session's fold.

        A signed human event witnesses everything before it: its signature covers ``prev``,
        the hash of the whole history, and the tht that appended it had verified all of that
        history (every signature included) first — policy never appends to a ledger that does
        not verify. So, unless ``full`` (an audit), only the last signed human event and the
        human events after it are checked: one Ed25519 verification for a whole history
        instead of one per decision. A last signature that does not verify checks them all.

        A key revoked as compromised vouches for nothing by itself, whatever instant its event
        claims (``ts`` is what the signer wrote): its signature counts only before a later
        signature of a trusted key in the same ledger, which witnesses it.
        """
        created = events[0] if events else None
        signed = (
            isinstance(created, ev.SessionCreated) and created.payload.human_decisions == "signed"
        )
        check = self.trust.check_for(signed)
        if check is None:
            return check
        witness = 0
        if not full or self.trust.compromised is not None:
            for event in reversed(events):
                if event.sig is not None and is_human_actor(event.actor):
                    witness = event.seq if check(event) is None else 0
                    break
        if self.trust.compromised is not None:
            check = _witnessed(
                check, self.trust.compromised, witness or _last_trusted(events, check)
            )
        if full or not witness:
            return check
        inner = check

        def after_witness(event: ev.Event) -> str | None:
            return None if event.seq <= witness else inner(event)

        return after_witness

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
        check = self._check(events, full=full)
        state = fold(workflow, events, human_check=check)
        rolled_back = self._rolled_back(session, workflow, events[-1].seq if events else 0)
        if rolled_back is not None:
            problems.append(rolled_back)
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

    def _rolled_back(self, session: str, workflow: WorkflowSpec, last_seq: int) -> Problem | None:
        """A rollback the session's signed checkpoint gives away: it records a line this ledger
        no longer has — the ledger ends before it, or holds another line there. A prefix of a
        valid ledger verifies by itself (docs/security.md), so this is a tripwire only: an agent
        that also removes the checkpoint, or puts back an older genuine one, is not seen."""
        check = self.trust.check_signature
        if check is None:
            return None
        raw = self.store.read_checkpoint(session)
        found = decode_checkpoint(raw, session, workflow.sha256, check) if raw else None
        if found is None:
            return None
        cp = found[0]
        if cp.seq > last_seq:
            what = f"the ledger ends at seq {last_seq}"
        else:
            line = self.store.ledger(session).line_at(cp.seq, cp.hint)
            if line is not None and line_hash(line) == cp.head:
                return None
            what = f"its line {cp.seq} is another one"
        return Problem(
            "rolled_back",
            f"{what}, but {cp.signer} signed a checkpoint of it at seq {cp.seq}: lines were "
            "removed from its end (a rollback); restore them from a backup, or record the "
            "loss with `tht ledger verify --repair --reason T --as human:<id>`",
        )

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
        line = self.store.ledger(session).line_at(cache.last_seq, cache.hint)
        if line is None or line_hash(line) != cache.head:
            return None  # the ledger changed under the cache (repair, tampering): fold afresh
        return cache

    def _write_cache(
        self, session: str, workflow: WorkflowSpec, state: SessionState, tail: LedgerTail
    ) -> None:
        if tail.last_seq != state.last_seq:
            return  # someone appended meanwhile; the next load refreshes
        cache = StatusCache(
            workflow=workflow.sha256,
            hint=tail.hint,
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
        if loaded.state.integrity:
            raise _integrity_error(
                session, [Problem(i.rule, i.message, seq=i.seq) for i in loaded.state.integrity]
            )
        refusal = immutable_refusal(loaded.state)
        if refusal is not None and any(d.type != "ledger_repaired" for d in drafts):
            raise refusal  # every planner refuses it too; this is the one place none can miss
        key = self._reviewer_key(drafts)
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
        self._write_cache(session, loaded.workflow, state, tail)
        if key is not None:
            self._write_checkpoint(session, loaded.workflow, state, tail, key)
        return Applied(session, result.events, result.head, state)

    def _reviewer_key(self, drafts: Sequence[ev.EventDraft]) -> ReviewerSigner | None:
        """In signed mode, the reviewer's key (unlocked before the ledger is locked) that signs
        every human event of the batch."""
        humans = {d.actor for d in drafts if is_human_actor(d.actor)}
        if not humans or not self.trust.signed:
            return None
        if len(humans) > 1:
            raise UsageError("one command records the decisions of one reviewer")
        if self.trust.unlock is None:
            raise PolicyError("signed mode: no way to unlock a reviewer key here")
        actor = humans.pop()
        key = self.trust.unlock(actor)
        if key.reviewer != actor:
            raise PolicyError(f"the key unlocked is {key.reviewer}'s, not {actor}'s")
        check = self.trust.check_signature
        probe = f"tht-can-sign:{actor}".encode()
        # as of an instant after every revocation (reading the clock would move a fixed one)
        if check is not None and not check(actor, probe, key.sign(probe), _AFTER_ANY_REVOCATION):
            # refused before anything is written: appended, its events would fail verification
            # and block the session until a human repairs it
            raise PolicyError(
                f"{actor}'s key cannot sign in this workspace now: it is revoked, or not in its "
                "reviewer registry (`tht reviewer list`)"
            )
        return key

    # ------------------------------------------------------------------ checkpoints

    def _write_checkpoint(
        self,
        session: str,
        workflow: WorkflowSpec,
        state: SessionState,
        tail: LedgerTail,
        key: ReviewerSigner,
    ) -> None:
        """A signed checkpoint of the state just folded from the verified ledger
        (kernel/checkpoint.py): the next policy load folds only what follows it."""
        if tail.last_seq != state.last_seq or state.integrity or state.last_ts is None:
            return
        try:
            data = _STATE_ENC.encode(state)
        except OverflowError:  # an integer beyond msgpack's range: no checkpoint, full folds
            return
        blob = encode_checkpoint(
            session=session,
            seq=tail.last_seq,
            head=tail.head,
            hint=tail.hint,
            workflow=workflow.sha256,
            state=data,
            signer=key.reviewer,
            ts=state.last_ts,
            sign=key.sign,
        )
        self.store.write_checkpoint(session, blob)

    def _load_from_checkpoint(self, session: str, workflow: WorkflowSpec) -> LoadedSession | None:
        """The verified state from the session's signed checkpoint plus the events after it,
        or None (then the whole ledger is verified and folded)."""
        check = self.trust.check_signature
        if check is None:
            return None
        raw = self.store.read_checkpoint(session)
        if raw is None:
            return None
        found = decode_checkpoint(raw, session, workflow.sha256, check)
        if found is None:
            logger.debug("checkpoint of %s not trusted (signature, session or state)", session)
            return None
        cp, state_bytes = found
        ledger = self.store.ledger(session)
        anchor = ledger.read_anchor()
        line = ledger.line_at(cp.seq, cp.hint)
        after = ledger.lines_after(cp.seq, cp.hint) if line is not None else None
        if line is None or after is None:
            logger.debug("checkpoint of %s: line %d is not where it was", session, cp.seq)
            return None
        following = continue_chain(line, after, cp, anchor)
        if following is None:
            logger.debug("checkpoint of %s: the ledger does not continue it", session)
            return None
        events, head = following
        try:
            state = _STATE_DEC.decode(state_bytes)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if state.last_seq != cp.seq or state.session != session or state.integrity:
            return None
        first = ledger.first_event()
        human_check = self._check([first, *events] if first is not None else [], full=True)
        if events:
            state = fold_from(workflow, state, events, human_check=human_check)
        if state.integrity:
            raise _integrity_error(
                session, [Problem(i.rule, i.message, seq=i.seq) for i in state.integrity]
            )
        return LoadedSession(session, workflow, state, head, None)

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
        every signature, not only those after the last verified one, :meth:`_check`)."""
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


#: the instant a key is checked at before it signs: an active key is valid then, a revoked one
#: never (whatever its revocation's ``ts``)
_AFTER_ANY_REVOCATION = "9999-12-31T23:59:59.999Z"


def _last_trusted(events: Sequence[ev.Event], check: HumanCheck) -> int:
    """The seq of the last signed human event whose signature verifies (0: none)."""
    for event in reversed(events):
        if event.sig is not None and is_human_actor(event.actor) and check(event) is None:
            return event.seq
    return 0


def _witnessed(
    check: HumanCheck, compromised: Callable[[ev.Event], bool], witness: int
) -> HumanCheck:
    """``check``, except that a genuine signature by a key revoked as compromised counts before
    ``witness`` (a later trusted signature, which covers the whole history before it)."""

    def witnessed(event: ev.Event) -> str | None:
        problem = check(event)
        if problem is not None and event.seq < witness and compromised(event):
            return None
        return problem

    return witnessed


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
