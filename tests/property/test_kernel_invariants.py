"""Invariants of the Workflow Kernel under any sequence of operations (Hypothesis stateful).

The machine drives the real kernel API (``WorkflowKernel`` over each store: a ``FileSystemStore``
in a temp folder, a ``MemoryStore``, a ``PostgresStore`` on the test server): agent proposals of
every kind for any stage, human answers, retractions, skips, reopens, pause/resume, finalize,
derive, fresh kernel instances (a new process), a crash's torn tail (on files), and a deleted,
garbled or outdated status cache. After every step it checks, on the ledger as written:

- seq is gapless and the hash chain and head anchor verify (a torn tail only when one was made);
- the fold is deterministic, and incremental folds (event by event, from any split, from the
  status cache) equal the full fold;
- ``--at N`` (``load(at=N)``) equals folding the first N events, and equals the state the kernel
  returned when seq N was the last;
- a retracted or stale decision is never effective (and every other decision is);
- no stage completes (or is skipped) before its predecessors are completed or skipped; a
  ``review_required`` stage completes only by a human's approval of its confirm review; only the
  owner module's outcomes are accepted for the preflight (Question Admission);
- a refused question can be rephrased (``question_rephrased`` + admission's verdict, one batch)
  up to the session's attempts, and the refusal of the last one closes the session (the kernel's
  ``session_abandoned`` in the same batch);
- a finalized or abandoned session accepts nothing;
- a rejected operation leaves what the store holds for the session (files: ledger, head anchor,
  objects, artifacts; rows: events, head row, objects, artifacts) identical.
"""

from __future__ import annotations

import atexit
import base64
import json
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.errors import IntegrityError, InternalError, ThtError
from kernel.events import MODULE_DECISION_TYPES
from kernel.fold import SessionState, empty_state, fold, fold_from
from kernel.ledger import line_hash
from kernel.reviewer_tools import outcome_from_proposal, parse_proposal
from kernel.store.memory import MemoryStore
from kernel.store.postgres import PostgresStore
from kernel.workflow import WorkflowSpec
from kernel.workflow_kernel import Applied, WorkflowKernel
from tests.kernel.store import postgres_support as pg
from tests.property.invariants import (
    INDEX,
    STEP_IDS,
    WORKFLOW,
    check_completion_order,
    check_completion_policy,
    check_decisions,
    check_stage_views,
    snapshot,
)
from tests.property.strategies import (
    PAYLOADS,
    agent_actors,
    human_actors,
    mostly,
    proposals,
    reasons,
)
from tests.support.kernel_env import make_kernel
from tests.support.postgres import PostgresServer

# The compiled workflow is shared by every example's kernel (parsing YAML is the slow part).
_WORKFLOW_CACHE = Path(tempfile.mkdtemp(prefix="tht-prop-workflow-"))
atexit.register(shutil.rmtree, _WORKFLOW_CACHE, True)


def test_payload_strategies_cover_every_domain_event_type() -> None:
    domain = {n for n, info in ev.EVENT_TYPES.items() if info.category in ("decision", "receipt")}
    assert set(PAYLOADS) == domain


def _admission_proposal(refused: bool) -> dict[str, Any]:
    """Question Admission's verdict as a proposal: admitted (auto) or refused (fail)."""
    if refused:
        return {"kind": "fail", "failure": {"code": "refused:too_short", "message": "no words"}}
    return {
        "kind": "auto",
        "events": [{"type": "question_admitted", "payload": {"checks": ["usable"]}}],
    }


@dataclass
class Tracked:
    """What the machine knows about one session, independently of the kernel's caches."""

    session: str
    history: dict[int, SessionState] = field(default_factory=dict)
    unchecked: list[int] = field(default_factory=list)
    prefix: SessionState | None = None
    checked: int = 0
    torn: bytes | None = None
    finalized_at: int | None = None
    last: SessionState | None = None


class KernelMachine(RuleBasedStateMachine):
    """The kernel over the filesystem store (``backend = "fs"``); the subclasses below run the
    same machine over the in-memory store and the PostgreSQL one (ARCHITECTURE §3.5: one
    contract, every backend). What differs is only how the machine looks behind the store:
    :meth:`_snapshot`, :meth:`_lines` and the cache tinkering."""

    backend = "fs"
    #: the PostgreSQL backend's database (set by the ``kernel_machine_database`` fixture)
    dsn: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="tht-prop-"))
        self.kernels = 1
        self.memory = MemoryStore()
        self.workspace = f"prop-{uuid.uuid4().hex[:16]}"  # every example in a fresh workspace
        self.kernel = self._make_kernel(FixedClock())
        self.sessions: list[Tracked] = []
        self.saved_cache: bytes | None = None

    def _make_kernel(self, clock: FixedClock) -> WorkflowKernel:
        if self.backend in ("memory", "postgres"):
            store: MemoryStore | PostgresStore = self.memory
            if self.backend == "postgres":
                assert self.dsn is not None, "the kernel_machine_database fixture did not run"
                store = PostgresStore(self.dsn, workspace=self.workspace)
            return WorkflowKernel(
                store, clock=clock, ids=SeededIds(self.kernels), workflow_cache=_WORKFLOW_CACHE
            )
        return make_kernel(
            self.root, seed=self.kernels, clock=clock, workflow_cache=_WORKFLOW_CACHE
        )

    @property
    def _pg(self) -> PostgresStore:
        store = self.kernel.store
        assert isinstance(store, PostgresStore)
        return store

    def _snapshot(self, session: str) -> object:
        """Everything the store holds for a session but its caches (to prove a rejection
        changed nothing): files, list entries or rows."""
        if self.backend == "memory":
            found = self.memory._sessions[session]
            return (
                tuple(found.ledger.lines),
                found.ledger.anchor,
                dict(found.objects),
                dict(found.artifacts),
            )
        if self.backend == "postgres":
            return pg.dump(self._pg, f"session:{session}")
        return snapshot(self._folder(session))

    def _lines(self, session: str) -> list[bytes]:
        if self.backend == "memory":
            return list(self.memory.ledger(session).lines)
        if self.backend == "postgres":
            return pg.lines(self._pg, f"session:{session}")
        return self.kernel.store.ledger(session).read_bytes().split(b"\n")[:-1]  # type: ignore[attr-defined]

    def _close_store(self) -> None:
        if isinstance(self.kernel.store, PostgresStore):
            self.kernel.store.close()

    def teardown(self) -> None:
        self._close_store()
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    @property
    def t(self) -> Tracked:
        return self.sessions[-1]

    def _folder(self, session: str) -> Path:
        return self.root / "sessions" / session

    def _state(self) -> SessionState:
        assert self.t.last is not None
        return self.t.last

    def _record(self, tracked: Tracked, applied: Applied, previous_last: int) -> None:
        seqs = [e.seq for e in applied.events]
        assert seqs == list(range(previous_last + 1, previous_last + 1 + len(seqs)))
        if applied.events:
            lines = self._lines(tracked.session)
            assert line_hash(lines[applied.events[-1].seq - 1]) == applied.head
            if tracked.torn is not None:
                quarantine = self._folder(tracked.session) / "ledger.quarantine.jsonl"
                last = json.loads(quarantine.read_bytes().splitlines()[-1])
                assert base64.b64decode(last["data_b64"]) == tracked.torn
                tracked.torn = None
        tracked.last = applied.state
        tracked.history[applied.state.last_seq] = applied.state
        tracked.unchecked.append(applied.state.last_seq)

    def _attempt(self, name: str, operation: Callable[[], Applied]) -> Applied | None:
        """Run one kernel operation; a rejection must leave the session's files untouched."""
        tracked = self.t
        before = self._snapshot(tracked.session)
        previous = self._state()
        try:
            applied = operation()
        except ThtError as err:
            assert not isinstance(err, (InternalError, IntegrityError)), err
            assert self._snapshot(tracked.session) == before, f"rejected {name} changed the session"
            note(f"{name} rejected: {type(err).__name__}: {err.message}")
            return None
        assert previous.lifecycle not in ("finalized", "abandoned"), (
            f"a {previous.lifecycle} session accepted {name}"
        )
        note(f"{name} applied: {[ev.info_of(e).type for e in applied.events]}")
        self._record(tracked, applied, previous.last_seq)
        return applied

    def _create(self, question: str, refused: bool, attempts: int | None = None) -> None:
        created = self.kernel.create_session(question, actor="agent", admission_attempts=attempts)
        tracked = Tracked(session=created.session, prefix=empty_state(WORKFLOW))
        self.sessions.append(tracked)
        self._record(tracked, created, 0)
        outcome = {
            "kind": "fail" if refused else "auto",
            "events": [
                {"type": "question_refused", "payload": {"code": "too_short", "reason": "no"}}
                if refused
                else {"type": "question_admitted", "payload": {"checks": ["usable"]}}
            ],
        }
        if refused:
            outcome["failure"] = {"code": "refused:too_short", "message": "no words"}
            outcome.pop("events")
        self._propose("admission", outcome, "module:disambiguation")

    def _propose(self, stage: str, proposal: dict[str, Any], actor: str) -> Applied | None:
        session = self.t.session

        def run() -> Applied:
            parsed = parse_proposal(msgspec.json.encode(proposal), "proposal.json")
            outcome = outcome_from_proposal(parsed, stage)
            return self.kernel.apply_outcome(session, stage, outcome, actor=actor)

        applied = self._attempt(f"propose {stage} {proposal['kind']}", run)
        if applied is not None:
            for event in applied.events:
                owner = MODULE_DECISION_TYPES.get(ev.info_of(event).type)
                assert owner is None or event.actor == owner, f"{actor} recorded {owner}'s decision"
        if applied is not None and stage in INDEX and WORKFLOW.step(stage).kind == "preflight":
            owner = f"module:{WORKFLOW.step(stage).owner}"
            assert actor == owner, f"{actor} decided {stage}, which only {owner} may"
        return applied

    def _stage(self, data: st.DataObject) -> str:
        current = self._state().current_stage
        choices = [*STEP_IDS, "no_such_stage"]
        if current is not None:
            choices += [current] * 3 * len(choices)
        return data.draw(st.sampled_from(choices), label="stage")

    # ------------------------------------------------------------------ rules

    @initialize(
        refused=st.booleans(),
        attempts=st.sampled_from([None, 1, 2, 3]),
    )
    def create(self, refused: bool, attempts: int | None) -> None:
        self._create("How many schools are there in Alameda county?", refused, attempts)

    @rule(data=st.data(), times=st.integers(1, 3))
    def rephrase(self, data: st.DataObject, times: int) -> None:
        """``tht session rephrase``, a few times: a new question and admission's verdict on it
        (the preflight owner's outcome), refused unless admission failed and attempts are
        left; the last allowed refusal closes the session."""
        for _ in range(times):
            self._rephrase_once(data)

    def _rephrase_once(self, data: st.DataObject) -> None:
        before = self._state()
        admitted = data.draw(st.integers(0, 3), label="admitted") == 0
        outcome = outcome_from_proposal(
            parse_proposal(msgspec.json.encode(_admission_proposal(not admitted))), "admission"
        )
        if data.draw(st.integers(0, 9), label="odd outcome") == 0:
            outcome = outcome_from_proposal(parse_proposal(b'{"kind": "confirm"}'), "admission")
        question = data.draw(mostly(st.just("How many schools in 2024?"), st.just("  ")))
        actor = data.draw(mostly(st.sampled_from(["agent", "human:ann"]), human_actors))
        session = self.t.session
        applied = self._attempt(
            f"rephrase admitted={admitted}",
            lambda: self.kernel.rephrase(session, question, outcome, actor=actor),
        )
        if applied is None:
            return
        view = before.stage("admission")
        assert view is not None and view.state == "failed" and before.lifecycle == "active"
        assert before.question_attempt < before.admission_attempts
        kinds = [ev.info_of(e).type for e in applied.events]
        assert kinds[:2] == ["question_rephrased", "stage_started"]
        state = applied.state
        assert state.question_attempt == before.question_attempt + 1
        assert state.question == question.strip()
        closes = not admitted and state.question_attempt == state.admission_attempts
        assert (kinds[-1] == "session_abandoned") == closes, kinds
        assert (state.lifecycle == "abandoned") == closes

    @rule(data=st.data())
    def propose(self, data: st.DataObject) -> None:
        stage = self._stage(data)
        step = WORKFLOW.step(stage) if stage in INDEX else WORKFLOW.steps[1]
        proposal = data.draw(proposals(step, WORKFLOW), label="proposal")
        self._propose(stage, proposal, data.draw(agent_actors, label="actor"))

    @rule(data=st.data())
    def propose_choice(self, data: st.DataObject) -> None:
        """A select or decide review on the current stage (the common agent move)."""
        stage = self._state().current_stage or "finalize"
        step = WORKFLOW.step(stage)
        proposal = data.draw(proposals(step, WORKFLOW, kinds=("select", "decide")))
        self._propose(stage, proposal, "agent")

    @rule(data=st.data())
    def answer(self, data: st.DataObject) -> None:
        state = self._state()
        open_seqs = [r.seq for r in state.open_reviews]
        anywhere = st.integers(-1, state.last_seq + 2)
        seq = data.draw(mostly(st.sampled_from(open_seqs), anywhere) if open_seqs else anywhere)
        review = state.review(seq)
        ids = [o.id for o in review.options] if review and review.options else ["a", "b"]
        fitting = ["choose"] if review and review.options else ["approve", "reject"]
        mode = data.draw(mostly(st.sampled_from(fitting), st.sampled_from(["choose", "none"])))
        choose: tuple[str, ...] = ()
        if mode == "choose":
            pick = st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids), unique=True)
            if review is not None and review.kind == "select":
                pick = st.lists(st.sampled_from(ids), min_size=1, max_size=1)
            wrong = st.lists(st.sampled_from([*ids, "zz"]), min_size=1, max_size=3)
            choose = tuple(data.draw(mostly(pick, wrong)))
        actor = data.draw(human_actors, label="actor")
        self._attempt(
            f"answer {seq} {mode} {choose}",
            lambda: self.kernel.answer(
                self.t.session,
                seq,
                actor=actor,  # type: ignore[arg-type]  # None is refused (usage error)
                choose=choose,
                approve=mode == "approve",
                reject=mode == "reject",
                rationale="ok",
            ),
        )

    @rule(data=st.data())
    def retract(self, data: st.DataObject) -> None:
        state = self._state()
        seqs = [d.seq for d in state.decisions if d.stage != "admission"]
        anywhere = st.integers(0, state.last_seq + 1)
        seq = data.draw(mostly(st.sampled_from(seqs), anywhere, 6) if seqs else anywhere)
        actor = data.draw(human_actors, label="actor")
        reason = data.draw(reasons, label="reason")
        self._attempt(
            f"retract {seq}",
            lambda: self.kernel.retract(self.t.session, seq, actor=actor, reason=reason),  # type: ignore[arg-type]
        )

    @rule(data=st.data())
    def skip(self, data: st.DataObject) -> None:
        stage = self._stage(data)
        actor = data.draw(human_actors, label="actor")
        reason = data.draw(reasons, label="reason")
        self._attempt(
            f"skip {stage}",
            lambda: self.kernel.skip(self.t.session, stage, actor=actor, reason=reason),  # type: ignore[arg-type]
        )

    @rule(data=st.data())
    def reopen(self, data: st.DataObject) -> None:
        stage = self._stage(data)
        actor = data.draw(human_actors, label="actor")
        reason = data.draw(reasons, label="reason")
        self._attempt(
            f"reopen {stage}",
            lambda: self.kernel.reopen(self.t.session, stage, actor=actor, reason=reason),  # type: ignore[arg-type]
        )

    @rule(data=st.data(), actor=human_actors)
    def lifecycle(self, data: st.DataObject, actor: str | None) -> None:
        fitting = "resume" if self._state().lifecycle == "paused" else "pause"
        verb = data.draw(mostly(st.just(fitting), st.sampled_from(["pause", "resume"])))
        method = self.kernel.pause if verb == "pause" else self.kernel.resume
        self._attempt(verb, lambda: method(self.t.session, actor=actor))  # type: ignore[arg-type]

    @rule(actor=human_actors)
    def finalize(self, actor: str | None) -> None:
        self._attempt("finalize", lambda: self.kernel.finalize(self.t.session, actor=actor))  # type: ignore[arg-type]

    @rule(data=st.data(), steps=st.integers(1, 12))
    def advance(self, data: st.DataObject, steps: int) -> None:
        """The happy path for the current stage, a few times: gets sessions to finalization,
        recording decisions on the way (so there is something to retract or make stale)."""
        for _ in range(steps):
            state = self._state()
            stage = state.current_stage
            if stage is None or state.lifecycle != "active":
                return
            if stage == "finalize":
                self._attempt(
                    "finalize", lambda: self.kernel.finalize(self.t.session, actor="human:ana")
                )
                return
            own = [r for r in state.open_reviews if r.stage == stage]
            if own:
                review = own[0]
                choose: tuple[str, ...] = ()
                if review.kind in ("select", "decide"):
                    choose = (review.options[0].id,)
                self._attempt(
                    f"answer {review.seq}",
                    lambda review=review, choose=choose: self.kernel.answer(  # type: ignore[misc]
                        self.t.session,
                        review.seq,
                        actor="human:ana",
                        choose=choose,
                        approve=not choose,
                    ),
                )
                continue
            step = WORKFLOW.step(stage)
            events = [
                {"type": etype, "payload": data.draw(PAYLOADS[etype], label=etype)}
                for etype in data.draw(
                    st.lists(st.sampled_from(step.emits), max_size=2) if step.emits else st.just([])
                )
            ]
            if step.completion == "automatic":
                actor = f"module:{step.owner}" if step.kind == "preflight" else "agent"
                owned = [t for t in step.emits if t in MODULE_DECISION_TYPES]
                owners = [MODULE_DECISION_TYPES[t] for t in owned]
                if owners and data.draw(st.booleans(), label="module runs it"):
                    actor = owners[0]  # `tht stage run`: the module records its decision
                self._propose(stage, {"kind": "auto", "events": events}, actor)
            elif events and data.draw(st.booleans(), label="select first"):
                option = {"id": "yes", "label": "this one", "events": events}
                select = {"kind": "select", "prompt": "Which?", "options": [option]}
                self._propose(stage, select, "agent")
            else:
                self._propose(stage, {"kind": "confirm"}, "agent")

    @precondition(lambda self: self.sessions and self.t.last is not None)
    @rule()
    def derive(self) -> None:
        source = self.t
        before = self._snapshot(source.session)
        try:
            derived = self.kernel.derive(source.session, actor="human:ana", reason="correct it")
        except ThtError as err:
            assert not isinstance(err, (InternalError, IntegrityError)), err
            assert source.last is not None
            assert source.last.lifecycle not in ("finalized", "abandoned")
            assert self._snapshot(source.session) == before
            return
        assert source.last is not None and source.last.lifecycle in ("finalized", "abandoned")
        assert self._snapshot(source.session) == before, "deriving changed the closed session"
        assert derived.state.derived_from == source.session
        tracked = Tracked(session=derived.session, prefix=empty_state(WORKFLOW))
        self.sessions.append(tracked)
        self._record(tracked, derived, 0)

    @precondition(lambda self: any(t.finalized_at is not None for t in self.sessions))
    @rule(data=st.data())
    def poke_finalized(self, data: st.DataObject) -> None:
        """Every operation on a finalized session is refused and changes nothing."""
        tracked = data.draw(st.sampled_from([t for t in self.sessions if t.finalized_at]))
        before = self._snapshot(tracked.session)
        session = tracked.session
        operations: list[Callable[[], object]] = [
            lambda: self.kernel.pause(session, actor="human:ana"),
            lambda: self.kernel.resume(session, actor="human:ana"),
            lambda: self.kernel.finalize(session, actor="human:ana"),
            lambda: self.kernel.skip(session, "datamart", actor="human:ana", reason="r"),
            lambda: self.kernel.reopen(session, "disambiguation", actor="human:ana", reason="r"),
            lambda: self.kernel.retract(session, 3, actor="human:ana", reason="r"),
            lambda: self.kernel.answer(session, 5, actor="human:ana", approve=True),
            lambda: self.kernel.apply_outcome(
                session,
                "disambiguation",
                outcome_from_proposal(parse_proposal(b'{"kind": "confirm"}'), "disambiguation"),
                actor="agent",
            ),
            lambda: self.kernel.rephrase(
                session,
                "How many schools?",
                outcome_from_proposal(
                    parse_proposal(msgspec.json.encode(_admission_proposal(False))), "admission"
                ),
                actor="agent",
            ),
        ]
        operation = data.draw(st.sampled_from(operations))
        try:
            operation()
        except ThtError as err:
            assert not isinstance(err, (InternalError, IntegrityError)), err
        else:
            raise AssertionError("a finalized session accepted an operation")
        assert self._snapshot(session) == before

    @rule()
    def new_kernel(self) -> None:
        """A new process: nothing in memory, only the store."""
        self.kernels += 1
        self._close_store()
        self.kernel = self._make_kernel(self.kernel.clock)  # type: ignore[arg-type]

    @precondition(lambda self: self.backend == "fs" and self.sessions and self.t.torn is None)
    @rule(data=st.data())
    def tear_tail(self, data: st.DataObject) -> None:
        """A crash mid-write left a partial final line: nothing appends to it (no laundering,
        the files stay byte-identical) until a human repairs it, which quarantines exactly the
        torn bytes and records ledger_repaired."""
        tracked = self.t
        line = self.kernel.store.ledger(tracked.session).read_bytes().split(b"\n")[-2]
        torn = line[: data.draw(st.integers(1, len(line) - 1), label="torn at")]
        folder = self._folder(tracked.session)
        with (folder / "ledger.jsonl").open("ab") as fh:
            fh.write(torn)
        before = snapshot(folder)
        with pytest.raises(IntegrityError):
            self.kernel.pause(tracked.session, actor="human:ann")
        assert snapshot(folder) == before, "a refused append changed the session's files"
        tracked.torn = torn
        previous = self._state().last_seq
        _, applied = self.kernel.repair(tracked.session, actor="human:ops", reason="crash")
        assert [ev.info_of(e).type for e in applied.events] == ["ledger_repaired"]
        self._record(tracked, applied, previous)

    @rule(how=st.sampled_from(["delete", "garble", "truncate", "save", "restore"]))
    def tinker_with_cache(self, how: str) -> None:
        """The status cache is an optimisation: any cache state must give the same fold."""
        if self.backend in ("memory", "postgres"):  # through the port, but for deleting
            store = self.kernel.store
            session = self.t.session
            cached = store.read_cache(session)
            if how == "save":
                self.saved_cache = cached
            elif how == "restore":
                if self.saved_cache is not None:
                    store.write_cache(session, self.saved_cache)
            elif how == "delete":
                if self.backend == "memory":
                    self.memory._caches.pop(session, None)
                else:
                    pg.drop_cache(self._pg, f"session:{session}")
            elif cached is not None:
                garbled = cached[: len(cached) // 2] if how == "truncate" else b"\x93garbage"
                store.write_cache(session, garbled)
            return
        path = self.root / ".tht" / "cache" / "status" / f"{self.t.session}.msgpack"
        if how == "save":
            self.saved_cache = path.read_bytes() if path.exists() else None
        elif how == "restore":
            if self.saved_cache is not None:
                path.write_bytes(self.saved_cache)  # an older (or another session's) cache
        elif how == "delete":
            path.unlink(missing_ok=True)
        elif path.exists():
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2] if how == "truncate" else b"\x93garbage")

    # ------------------------------------------------------------------ invariants

    @invariant()
    def ledger_verifies(self) -> None:
        for tracked in self.sessions:
            report = self.kernel.store.ledger(tracked.session).verify()
            expected = ["torn_tail"] if tracked.torn is not None else []
            assert [p.code for p in report.problems] == expected, report.problems

    @invariant()
    def folds_agree(self) -> None:
        if not self.sessions:
            return
        tracked = self.t
        kernel: WorkflowKernel = self.kernel
        ledger = kernel.store.ledger(tracked.session)
        workflow: WorkflowSpec = kernel.session_workflow(tracked.session)
        read = ledger.read()
        events = read.events
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), "seq has a gap"
        # event by event, checking completion order on the state each event follows
        assert tracked.prefix is not None
        for event in events[tracked.checked :]:
            check_completion_order(tracked.prefix, event)
            check_completion_policy(events, event)
            tracked.prefix = fold_from(workflow, tracked.prefix, [event])
        tracked.checked = len(events)
        full = fold(workflow, events)
        complete = b"".join(line + b"\n" for line in self._lines(tracked.session)[: len(events)])
        assert fold(workflow, ev.decode_lines(complete)) == full, "fold is not deterministic"
        assert tracked.prefix == full, "event-by-event fold differs from the full fold"
        for k in {0, 1, len(events) // 2, max(0, len(events) - 1)}:
            assert fold_from(workflow, fold(workflow, events[:k]), events[k:]) == full, k
        assert tracked.last == full, "the state the kernel returned is not the fold"
        loaded = kernel.load(tracked.session)
        assert loaded.state == full, "the verified load differs from the full fold"
        shown, problems = kernel.load_for_display(tracked.session)
        assert shown.state == full, "status (cached, incremental) differs from the full fold"
        assert problems == [], problems
        assert full.integrity == (), full.integrity  # every history the kernel writes is legal
        assert loaded.head == read.head
        # --at N: the state the kernel returned when N was the last seq, and the fold of N events
        for seq in tracked.unchecked:
            assert kernel.load(tracked.session, at=seq).state == tracked.history[seq], seq
        tracked.unchecked.clear()
        for n in {0, len(events) // 3, len(events)}:
            at = kernel.load(tracked.session, at=n).state
            assert at == (fold(workflow, events[:n]) if n else empty_state(workflow)), n
        check_decisions(events, full)
        check_stage_views(full)
        if tracked.finalized_at is not None:
            after = [ev.info_of(e).type for e in events[tracked.finalized_at :]]
            # only a human's explicit repair (of a torn tail) is ever recorded after finalize
            assert set(after) <= {"ledger_repaired"}, "a finalized session changed"
        elif full.lifecycle in ("finalized", "abandoned"):
            tracked.finalized_at = len(events)  # closed: immutable from here on


# One example is a whole session history (up to 50 operations, each checked): half the profile's
# examples (100 under ci: ~5,000 operations, 10-40 s on 2 busy cores) keeps the suite under a
# minute.
KernelMachine.TestCase.settings = settings(
    settings.default,
    max_examples=max(10, settings.default.max_examples // 2),
    stateful_step_count=50,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestKernelInvariants = KernelMachine.TestCase


class MemoryKernelMachine(KernelMachine):
    backend = "memory"


MemoryKernelMachine.TestCase.settings = KernelMachine.TestCase.settings
TestKernelInvariantsMemory = MemoryKernelMachine.TestCase


class PostgresKernelMachine(KernelMachine):
    backend = "postgres"


@pytest.fixture(scope="module")
def kernel_machine_database(postgres_server: PostgresServer) -> Iterator[str]:
    """One database for every example of the PostgreSQL machine (each example in its own
    workspace)."""
    dsn = pg.fresh_database(postgres_server, "kernel_machine")
    PostgresKernelMachine.dsn = dsn
    yield dsn
    PostgresKernelMachine.dsn = None


# Every operation is a few round trips to a real server: a quarter of the filesystem machine's
# examples (50 under ci) keeps it to about half a minute on 2 busy cores.
PostgresKernelMachine.TestCase.settings = settings(
    KernelMachine.TestCase.settings,
    max_examples=max(5, settings.default.max_examples // 4),
)
TestKernelInvariantsPostgres = pytest.mark.usefixtures("kernel_machine_database")(
    PostgresKernelMachine.TestCase
)
