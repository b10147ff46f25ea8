"""The ``SessionStore`` contract (ARCHITECTURE §3.1, §3.5): every backend passes this suite.

Parametrized over :data:`BACKENDS`: the filesystem store and the in-memory one; a PostgreSQL store
joins by adding one :class:`Backend` entry (built from a DSN in the environment, skipped when
none is set), for example::

    Backend(
        "postgres",
        make=lambda tmp: PostgresStore(os.environ["THT_TEST_PG_DSN"], schema=f"t_{tmp.name}"),
        damage_object=lambda store, session, sha: store.execute(
            "UPDATE objects SET data = 'x' WHERE session = %s AND sha256 = %s", (session, sha)
        ),
        marks=(pytest.mark.skipif("THT_TEST_PG_DSN" not in os.environ, reason="no PostgreSQL"),),
    )

The suite speaks only the protocol (``kernel.store.base.SessionStore`` and the ledger it hands
out) and the kernel running on top of it; what is backend-specific — reaching behind the store
to damage stored content — is a function of the backend entry.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.errors import ConflictError, IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.fold import fold
from kernel.ledger import genesis_hash, line_hash
from kernel.outcomes import ArtifactChange, ModuleOutcome, ReviewRequest
from kernel.store.base import SessionStore
from kernel.store.fs import FileSystemStore
from kernel.store.memory import MemoryStore
from kernel.transitions import plan_pause
from kernel.workflow import default_workflow_path
from kernel.workflow_kernel import WorkflowKernel
from tests.support.kernel_env import admitted_session, receipt_outcome

WORKFLOW_BYTES = default_workflow_path().read_bytes()
SESSION = "01KDVDNA00V3RS3DTR98H6BCFN"
OTHER = "01KDVDNA01V3RS3DTR98H6BCFN"


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[Path], SessionStore]
    damage_object: Callable[[SessionStore, str, str], None]
    #: replace the bytes of line ``seq`` (1-based) behind the store's back
    damage_line: Callable[[SessionStore, str, int, bytes], None]
    #: every committed line's bytes, as the backend holds them
    lines: Callable[[SessionStore, str], list[bytes]]
    marks: Sequence[Any] = field(default=())
    #: alter a workspace-level object (``name``, ``sha256``) behind the store's back
    damage_workspace_object: Callable[[SessionStore, str, str], None] | None = None


def _fs_damage(store: SessionStore, session: str, sha256: str) -> None:
    assert isinstance(store, FileSystemStore)
    (store.sessions_dir / session / "objects" / sha256[:2] / sha256).write_bytes(b"altered")


def _fs_lines(store: SessionStore, session: str) -> list[bytes]:
    assert isinstance(store, FileSystemStore)
    return (store.sessions_dir / session / "ledger.jsonl").read_bytes().split(b"\n")[:-1]


def _fs_damage_line(store: SessionStore, session: str, seq: int, data: bytes) -> None:
    assert isinstance(store, FileSystemStore)
    lines = _fs_lines(store, session)
    lines[seq - 1] = data
    path = store.sessions_dir / session / "ledger.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def _fs_damage_workspace(store: SessionStore, name: str, sha256: str) -> None:
    assert isinstance(store, FileSystemStore)
    (store.workspace_root / name / "objects" / sha256).write_bytes(b"altered")


def _memory_damage_workspace(store: SessionStore, name: str, sha256: str) -> None:
    assert isinstance(store, MemoryStore)
    store.damage_workspace_object("catalog" if name == "catalog" else "memory", sha256)


def _memory_damage(store: SessionStore, session: str, sha256: str) -> None:
    assert isinstance(store, MemoryStore)
    store.damage_object(session, sha256)


def _memory_lines(store: SessionStore, session: str) -> list[bytes]:
    assert isinstance(store, MemoryStore)
    return list(store.ledger(session).lines)


def _memory_damage_line(store: SessionStore, session: str, seq: int, data: bytes) -> None:
    assert isinstance(store, MemoryStore)
    store.ledger(session).lines[seq - 1] = data


BACKENDS = [
    Backend(
        "fs",
        make=lambda tmp: FileSystemStore(tmp / "sessions", tmp / ".tht" / "cache"),
        damage_object=_fs_damage,
        damage_line=_fs_damage_line,
        lines=_fs_lines,
        damage_workspace_object=_fs_damage_workspace,
    ),
    Backend(
        "memory",
        make=lambda tmp: MemoryStore(),
        damage_object=_memory_damage,
        damage_line=_memory_damage_line,
        lines=_memory_lines,
        damage_workspace_object=_memory_damage_workspace,
    ),
]


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    return backend


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> SessionStore:
    return backend.make(tmp_path)


def _kernel(store: SessionStore, tmp_path: Path) -> WorkflowKernel:
    return WorkflowKernel(
        store, clock=FixedClock(), ids=SeededIds(7), workflow_cache=tmp_path / "wfcache"
    )


def _created(session: str = SESSION) -> ev.EventDraft:
    return ev.EventDraft(
        type="session_created",
        actor="agent",
        subject=session,
        payload=ev.SessionCreatedPayload(
            question="How many schools?",
            workflow=ev.WorkflowRef(name="analytics-session", version=1, sha256="0" * 64),
        ),
    )


def _receipt(subject: str) -> ev.EventDraft:
    return ev.EventDraft(
        type="evidence_consulted",
        actor="agent",
        stage="disambiguation",
        subject=subject,
        payload=ev.EvidenceConsultedPayload(purpose="disambiguation", generation="g1"),
    )


# --------------------------------------------------------------------------- sessions


def test_a_new_store_has_no_sessions(store: SessionStore) -> None:
    assert store.session_ids() == []
    assert not store.exists(SESSION)


def test_created_sessions_are_listed_sorted_and_keep_their_workflow(store: SessionStore) -> None:
    store.create_session(OTHER, b"other: workflow\n")
    store.create_session(SESSION, WORKFLOW_BYTES)
    assert store.session_ids() == sorted([SESSION, OTHER])
    assert store.exists(SESSION) and store.exists(OTHER)
    assert store.workflow_bytes(SESSION) == WORKFLOW_BYTES
    assert store.workflow_bytes(OTHER) == b"other: workflow\n"


def test_creating_an_existing_session_is_a_conflict(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    with pytest.raises(ConflictError):
        store.create_session(SESSION, b"another workflow")
    assert store.workflow_bytes(SESSION) == WORKFLOW_BYTES


@pytest.mark.parametrize("session", [SESSION, "../escape", "", "a/b", "x" * 200])
def test_an_unknown_session_is_not_found(store: SessionStore, session: str) -> None:
    assert not store.exists(session)
    with pytest.raises(NotFoundError):
        store.ledger(session)
    with pytest.raises(NotFoundError):
        store.workflow_bytes(session)


# --------------------------------------------------------------------------- ledger


def test_a_new_ledger_is_empty_and_chains_from_the_genesis_hash(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    ledger = store.ledger(SESSION)
    tail = ledger.tail()
    assert (tail.last_seq, tail.head) == (0, genesis_hash(SESSION))
    assert ledger.read().events == []
    # no events yet: nothing to trust (a missing or empty ledger is a problem, never "ok")
    assert not ledger.verify().ok


def test_appends_are_gapless_hash_chained_and_read_back_equal(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    ledger = store.ledger(SESSION)
    clock = FixedClock()
    first = ledger.append([_created()], expected_last_seq=0, clock=clock)
    second = ledger.append(
        [_receipt("a"), _receipt("b"), _receipt("c")], expected_last_seq=1, clock=clock
    )
    events = [*first.events, *second.events]
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert events[0].prev == genesis_hash(SESSION)
    for before, after in itertools.pairwise(events):
        assert after.prev == line_hash(ev.encode_event(before))
    assert second.head == line_hash(ev.encode_event(events[-1]))
    assert len({e.ts for e in second.events}) == 1, "one batch, one clock reading"
    read = ledger.read()
    assert read.events == events and read.head == second.head and read.torn is None
    assert ledger.read(upto=2).events == events[:2]
    assert (ledger.tail().last_seq, ledger.tail().head) == (4, second.head)
    report = ledger.verify()
    assert report.ok and report.events == 4 and report.head == second.head


def test_a_stale_writer_gets_a_conflict_and_writes_nothing(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    clock = FixedClock()
    store.ledger(SESSION).append([_created()], expected_last_seq=0, clock=clock)
    before = store.ledger(SESSION).read()
    for stale in (0, 2, 5):
        with pytest.raises(ConflictError) as caught:
            store.ledger(SESSION).append([_receipt("x")], expected_last_seq=stale, clock=clock)
        assert caught.value.exit_code == 4
        assert caught.value.details == {"expected_last_seq": stale, "last_seq": 1}
    with pytest.raises(ConflictError):
        store.ledger(SESSION).append([], expected_last_seq=3, clock=clock)
    after = store.ledger(SESSION).read()
    assert after.events == before.events and after.head == before.head


def test_ledgers_of_two_sessions_are_independent(store: SessionStore) -> None:
    clock = FixedClock()
    for session in (SESSION, OTHER):
        store.create_session(session, WORKFLOW_BYTES)
        store.ledger(session).append([_created(session)], expected_last_seq=0, clock=clock)
    store.ledger(SESSION).append([_receipt("a")], expected_last_seq=1, clock=clock)
    assert store.ledger(SESSION).tail().last_seq == 2
    assert store.ledger(OTHER).tail().last_seq == 1
    assert store.ledger(OTHER).read().events[0].prev == genesis_hash(OTHER)


def test_racing_appenders_never_leave_a_gap_or_a_duplicate(store: SessionStore) -> None:
    """Threads with their own ledger handles, each retrying on conflict (optimistic concurrency
    holds within one process too; tests/kernel/test_concurrency.py races real processes)."""
    store.create_session(SESSION, WORKFLOW_BYTES)
    store.ledger(SESSION).append([_created()], expected_last_seq=0, clock=FixedClock())
    conflicts = [0] * 4
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            ledger = store.ledger(SESSION)
            clock = FixedClock()
            for n in range(15):
                while True:
                    last = ledger.tail().last_seq
                    try:
                        ledger.append(
                            [_receipt(f"{w}-{n}-0"), _receipt(f"{w}-{n}-1")],
                            expected_last_seq=last,
                            clock=clock,
                        )
                        break
                    except ConflictError:
                        conflicts[w] += 1
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    events = store.ledger(SESSION).read().events
    assert [e.seq for e in events] == list(range(1, 1 + 1 + 4 * 15 * 2))
    subjects = [e.subject for e in events[1:]]
    assert len(set(subjects)) == len(subjects) == 4 * 15 * 2
    for i in range(1, len(events), 2):  # every batch of two is contiguous
        assert subjects[i - 1][:-1] == subjects[i][:-1]  # type: ignore[index]
    assert store.ledger(SESSION).verify().ok


# --------------------------------------------------------------------------- objects, artifacts


def test_objects_are_content_addressed_and_verified(store: SessionStore, backend: Backend) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    data = b"SELECT 1;\n"
    digest = store.put_object(SESSION, data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert store.put_object(SESSION, data) == digest  # idempotent
    assert store.get_object(SESSION, digest) == data
    with pytest.raises(NotFoundError):
        store.get_object(SESSION, hashlib.sha256(b"never stored").hexdigest())
    backend.damage_object(store, SESSION, digest)
    with pytest.raises(IntegrityError):
        store.get_object(SESSION, digest)


def test_materialized_artifacts_hold_the_object_they_name(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    assert store.read_artifact(SESSION, "cte/1.sql") is None
    first = store.put_object(SESSION, b"WITH a AS (SELECT 1)")
    second = store.put_object(SESSION, b"WITH a AS (SELECT 2)")
    store.materialize(SESSION, "cte/1.sql", first)
    assert store.read_artifact(SESSION, "cte/1.sql") == b"WITH a AS (SELECT 1)"
    store.materialize(SESSION, "cte/1.sql", second)
    assert store.read_artifact(SESSION, "cte/1.sql") == b"WITH a AS (SELECT 2)"
    with pytest.raises(NotFoundError):
        store.materialize(SESSION, "x.sql", hashlib.sha256(b"missing").hexdigest())


def test_the_status_cache_round_trips_per_session(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    store.create_session(OTHER, WORKFLOW_BYTES)
    assert store.read_cache(SESSION) is None
    store.write_cache(SESSION, b"\x01cache")
    store.write_cache(SESSION, b"\x02cache")
    assert store.read_cache(SESSION) == b"\x02cache"
    assert store.read_cache(OTHER) is None


# --------------------------------------------------------------------------- the kernel on top


def test_the_kernel_runs_a_session_on_the_store(store: SessionStore, tmp_path: Path) -> None:
    kernel = _kernel(store, tmp_path)
    created = kernel.create_session("How many schools are in Alameda county?", actor="agent")
    session = created.session
    assert store.session_ids() == [session]
    assert store.workflow_bytes(session) == WORKFLOW_BYTES
    kernel.apply_outcome(
        session,
        "admission",
        ModuleOutcome(
            status="completed",
            events=(ev.ProposedEvent(type="question_admitted", payload={}),),
        ),
        actor="module:disambiguation",
    )
    kernel.skip(session, "disambiguation", actor="human:ana", reason="clear enough")
    kernel.skip(session, "memory_recall", actor="human:ana", reason="no memories")
    review = kernel.apply_outcome(
        session,
        "rewriting",
        ModuleOutcome(
            status="awaiting_review",
            artifacts=(ArtifactChange(name="question.md", content=b"# Schools\n"),),
            review=ReviewRequest(kind="confirm", prompt="Approve?", artifacts=("question.md",)),
        ),
        actor="agent",
    )
    answered = kernel.answer(session, review.events[-1].seq, actor="human:ana", approve=True)
    assert answered.state.current_stage == "schema_linking"
    assert kernel.artifact(session, "question.md") == b"# Schools\n"
    events = store.ledger(session).read().events
    workflow = kernel.session_workflow(session)
    assert kernel.load(session).state == fold(workflow, events) == answered.state
    assert _kernel(store, tmp_path).load(session).state == answered.state  # a new process
    assert kernel.load(session, at=4).state == fold(workflow, events[:4])
    assert kernel.verify(session).ok


def test_a_stale_kernel_decision_is_refused_by_the_store(
    store: SessionStore, tmp_path: Path
) -> None:
    """Two kernels load the same state; the second to append gets a conflict, not a double."""
    kernel = _kernel(store, tmp_path)
    session = kernel.create_session("How many schools?", actor="agent").session
    kernel.apply_outcome(
        session,
        "admission",
        ModuleOutcome(status="completed", events=(ev.ProposedEvent(type="question_admitted"),)),
        actor="module:disambiguation",
    )
    one, two = _kernel(store, tmp_path), _kernel(store, tmp_path)
    loaded_one, loaded_two = one.load(session), two.load(session)
    one.pause(session, actor="human:ana")
    drafts = plan_pause(loaded_two.state, actor="human:bo")  # decided on the stale state
    with pytest.raises(ConflictError):
        store.ledger(session).append(
            drafts, expected_last_seq=loaded_two.state.last_seq, clock=FixedClock()
        )
    with pytest.raises(PolicyError):  # re-read: the session is paused already
        two.pause(session, actor="human:bo")
    assert loaded_one.state.last_seq == loaded_two.state.last_seq
    paused = [e for e in store.ledger(session).read().events if isinstance(e, ev.SessionPaused)]
    assert len(paused) == 1


def test_receipts_appended_through_the_kernel_verify(store: SessionStore, tmp_path: Path) -> None:
    kernel = _kernel(store, tmp_path)
    session = kernel.create_session("How many schools?", actor="agent").session
    kernel.apply_outcome(
        session,
        "admission",
        ModuleOutcome(status="completed", events=(ev.ProposedEvent(type="question_admitted"),)),
        actor="module:disambiguation",
    )
    for i in range(5):
        kernel.apply_outcome(session, "disambiguation", receipt_outcome(f"r{i}"), actor="agent")
    state = kernel.load(session).state
    assert len(state.receipts) == 5
    assert kernel.verify(session).ok


# --------------------------------------------------------------------------- the ledger port


def test_a_position_is_seq_and_head_and_the_hint_finds_what_follows(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    ledger = store.ledger(SESSION)
    clock = FixedClock()
    ledger.append([_created()], expected_last_seq=0, clock=clock)
    mark = ledger.tail()
    ledger.append([_receipt("a"), _receipt("b")], expected_last_seq=1, clock=clock)
    line = ledger.line_at(mark.last_seq, mark.hint)
    assert line is not None and line_hash(line) == mark.head
    assert [e.seq for e in ledger.read_after(mark.last_seq, mark.hint).events] == [2, 3]
    after = ledger.lines_after(mark.last_seq, mark.hint)
    assert after is not None and [line_hash(x) for x in after][-1] == ledger.tail().head
    assert ledger.line_at(2, mark.hint) is None  # a hint belongs to its seq
    assert ledger.first_event() is not None
    assert ledger.read_anchor() == (3, ledger.tail().head)


def test_a_damaged_line_is_reported_and_nothing_is_appended_to_it(
    store: SessionStore, backend: Backend
) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    ledger = store.ledger(SESSION)
    clock = FixedClock()
    ledger.append([_created()], expected_last_seq=0, clock=clock)
    ledger.append([_receipt("a")], expected_last_seq=1, clock=clock)
    ledger.append([_receipt("b")], expected_last_seq=2, clock=clock)
    original = backend.lines(store, SESSION)
    backend.damage_line(store, SESSION, 3, original[2].replace(b'"b"', b'"z"'))
    ledger.close()
    report = ledger.verify()
    assert not report.ok and {p.code for p in report.problems} >= {"head_anchor"}
    damaged = backend.lines(store, SESSION)
    with pytest.raises(IntegrityError):
        ledger.append([_receipt("c")], expected_last_seq=3, clock=clock)
    assert backend.lines(store, SESSION) == damaged  # never laundered


def test_the_explicit_repair_cuts_at_a_seq_and_reanchors(
    store: SessionStore, backend: Backend
) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    ledger = store.ledger(SESSION)
    clock = FixedClock()
    ledger.append([_created()], expected_last_seq=0, clock=clock)
    ledger.append([_receipt("a")], expected_last_seq=1, clock=clock)
    ledger.append([_receipt("b")], expected_last_seq=2, clock=clock)
    done = ledger.repair(cut_seq=3)
    assert done.last_seq == 2 and done.moved.count(b"\n") == 1 and done.missing == (3, 3)
    assert ledger.verify().ok
    assert ledger.append([_receipt("c")], expected_last_seq=2, clock=clock).events[0].seq == 3


def test_an_empty_ledger_never_verifies(store: SessionStore) -> None:
    store.create_session(SESSION, WORKFLOW_BYTES)
    report = store.ledger(SESSION).verify()
    assert not report.ok and report.events == 0


def test_a_ledger_moves_between_stores_byte_for_byte(
    store: SessionStore, backend: Backend, tmp_path: Path
) -> None:
    kernel = _kernel(store, tmp_path)
    session = admitted_session(kernel)
    kernel.apply_outcome(session, "disambiguation", receipt_outcome("a"), actor="agent")
    lines = backend.lines(store, session)
    target = FileSystemStore(tmp_path / "moved" / "sessions", tmp_path / "moved" / "cache")
    target.create_session(session, store.workflow_bytes(session))
    path = target.sessions_dir / session / "ledger.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    tail = target.ledger(session).tail()
    record = b'{"seq": %d, "head": "%s"}' % (tail.last_seq, tail.head.encode())
    path.with_name("ledger.head").write_bytes(record.ljust(127) + b"\n")
    moved = _kernel(target, tmp_path / "moved")
    assert moved.verify(session).ok
    assert moved.load(session).state == kernel.load(session).state


# ------------------------------------------------------------------ workspace-level ledgers


def _sync_started(run: str = "01RUN") -> ev.EventDraft:
    return ev.EventDraft(
        type="catalog_sync_started",
        actor="module:catalog",
        subject=run,
        payload=ev.CatalogSyncStartedPayload(run=run, binding="sqlite:///x.db", dialect="sqlite"),
    )


def test_a_workspace_ledger_is_empty_until_written_and_has_its_own_genesis(
    store: SessionStore,
) -> None:
    ledger = store.workspace_ledger("catalog")
    tail = ledger.tail()
    assert (tail.last_seq, tail.head) == (0, genesis_hash(ledger.session_id))
    assert ledger.session_id not in (SESSION, "catalog")  # never a session's chain
    assert not ledger.exists() and ledger.read().events == []
    assert not ledger.verify().ok  # nothing to trust yet


def test_a_workspace_ledger_appends_verifies_and_refuses_a_stale_writer(
    store: SessionStore,
) -> None:
    ledger = store.workspace_ledger("catalog")
    clock = FixedClock()
    first = ledger.append([_sync_started()], expected_last_seq=0, clock=clock)
    assert first.events[0].prev == genesis_hash(ledger.session_id)
    with pytest.raises(ConflictError):
        ledger.append([_sync_started("02RUN")], expected_last_seq=0, clock=clock)
    assert store.workspace_ledger("catalog").read().events == first.events
    assert store.workspace_ledger("catalog").verify().ok


def test_a_workspace_ledger_starts_with_its_own_first_type(store: SessionStore) -> None:
    ledger = store.workspace_ledger("catalog")
    ledger.append([_created()], expected_last_seq=0, clock=FixedClock())
    report = ledger.verify()
    assert not report.ok and [p.code for p in report.problems] == ["first_event"]


def test_workspace_ledgers_are_independent_of_sessions_and_of_each_other(
    store: SessionStore,
) -> None:
    store.create_session("catalog", WORKFLOW_BYTES)  # a session may even be named so
    store.ledger("catalog").append([_created("catalog")], expected_last_seq=0, clock=FixedClock())
    assert store.workspace_ledger("catalog").read().events == []
    assert store.workspace_ledger("memory").read().events == []
    store.workspace_ledger("catalog").append(
        [_sync_started()], expected_last_seq=0, clock=FixedClock()
    )
    assert len(store.ledger("catalog").read().events) == 1
    assert store.workspace_ledger("memory").tail().last_seq == 0


def test_workspace_objects_are_content_addressed_and_verified(
    store: SessionStore, backend: Backend
) -> None:
    data = b'{"tables": []}'
    digest = store.put_workspace_object("catalog", data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert store.put_workspace_object("catalog", data) == digest
    assert store.get_workspace_object("catalog", digest) == data
    with pytest.raises(NotFoundError):
        store.get_workspace_object("memory", digest)  # each ledger has its own objects
    with pytest.raises(NotFoundError):
        store.get_workspace_object("catalog", hashlib.sha256(b"never").hexdigest())
    with pytest.raises(UsageError):
        store.get_workspace_object("catalog", "../../etc/passwd")
    assert backend.damage_workspace_object is not None
    backend.damage_workspace_object(store, "catalog", digest)
    with pytest.raises(IntegrityError):
        store.get_workspace_object("catalog", digest)


def test_a_workspace_ledger_cache_round_trips(store: SessionStore) -> None:
    assert store.read_workspace_cache("catalog") is None
    store.write_workspace_cache("catalog", b"\x01")
    store.write_workspace_cache("catalog", b"\x02")
    assert store.read_workspace_cache("catalog") == b"\x02"
    assert store.read_workspace_cache("memory") is None


def test_an_unknown_workspace_ledger_is_a_usage_error(store: SessionStore) -> None:
    for call in (
        lambda: store.workspace_ledger("sessions"),  # type: ignore[arg-type]
        lambda: store.put_workspace_object("../x", b""),  # type: ignore[arg-type]
        lambda: store.read_workspace_cache("reviewers"),  # type: ignore[arg-type]
    ):
        with pytest.raises(UsageError):
            call()


def test_the_filesystem_store_keeps_the_catalog_under_the_workspace(tmp_path: Path) -> None:
    store = FileSystemStore(tmp_path / "sessions", tmp_path / ".tht" / "cache")
    store.workspace_ledger("catalog").append(
        [_sync_started()], expected_last_seq=0, clock=FixedClock()
    )
    digest = store.put_workspace_object("catalog", b"snapshot")
    assert (tmp_path / "catalog" / "ledger.jsonl").is_file()
    assert (tmp_path / "catalog" / "objects" / digest).read_bytes() == b"snapshot"
    elsewhere = FileSystemStore(tmp_path / "s", tmp_path / "c", workspace_root=tmp_path / "w")
    assert elsewhere.workspace_dir("catalog") == tmp_path / "w" / "catalog"
