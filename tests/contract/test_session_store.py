"""The ``SessionStore`` contract (ARCHITECTURE §3.1, §3.5): every backend passes this suite.

Parametrized over :data:`BACKENDS`: the filesystem store, the in-memory one and the PostgreSQL
one (a real server: the session's ``postgres_server``; one fresh database per test module, a
distinct workspace id per test, so tests never see each other's rows — never skipped).

The suite speaks only the protocol (``kernel.store.base.SessionStore`` and the ledger it hands
out) and the kernel running on top of it; what is backend-specific — reaching behind the store
to damage stored content — is a function of the backend entry.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.errors import ConflictError, IntegrityError, NotFoundError, PolicyError, UsageError
from kernel.fold import fold
from kernel.ledger import genesis_hash, line_hash
from kernel.outcomes import ArtifactChange, ModuleOutcome, ReviewRequest
from kernel.store.base import SessionStore
from kernel.store.fs import FileSystemStore
from kernel.store.memory import MemoryStore
from kernel.store.postgres import PostgresStore
from kernel.transitions import plan_pause
from kernel.workflow import default_workflow_path
from kernel.workflow_kernel import WorkflowKernel
from tests.kernel.store import postgres_support as pg
from tests.support.kernel_env import admitted_session, receipt_outcome
from tests.support.store_drafts import SESSION
from tests.support.store_drafts import created as _created
from tests.support.store_drafts import receipt as _receipt

WORKFLOW_BYTES = default_workflow_path().read_bytes()
OTHER = "01KDVDNA01V3RS3DTR98H6BCFN"


@dataclass(frozen=True)
class Site:
    """Where one test's store keeps its data: a temporary folder, and (asked for only by the
    PostgreSQL backend, so the others never start a server) this module's database."""

    tmp: Path
    request: pytest.FixtureRequest

    def database(self) -> str:
        return str(self.request.getfixturevalue("store_database"))


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[Site], SessionStore]
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


def _pg(store: SessionStore) -> PostgresStore:
    assert isinstance(store, PostgresStore)
    return store


def _make_postgres(site: Site) -> SessionStore:
    return PostgresStore(site.database(), workspace=f"t-{uuid.uuid4().hex[:20]}")


BACKENDS = [
    Backend(
        "fs",
        make=lambda site: FileSystemStore(site.tmp / "sessions", site.tmp / ".tht" / "cache"),
        damage_object=_fs_damage,
        damage_line=_fs_damage_line,
        lines=_fs_lines,
        damage_workspace_object=_fs_damage_workspace,
    ),
    Backend(
        "memory",
        make=lambda site: MemoryStore(),
        damage_object=_memory_damage,
        damage_line=_memory_damage_line,
        lines=_memory_lines,
        damage_workspace_object=_memory_damage_workspace,
    ),
    Backend(
        "postgres",
        make=_make_postgres,
        damage_object=lambda store, session, sha: pg.damage_object(
            _pg(store), f"session:{session}", sha
        ),
        damage_line=lambda store, session, seq, data: pg.damage_line(
            _pg(store), f"session:{session}", seq, data
        ),
        lines=lambda store, session: pg.lines(_pg(store), f"session:{session}"),
        damage_workspace_object=lambda store, name, sha: pg.damage_workspace_object(
            _pg(store), name, sha
        ),
    ),
]


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    return backend


@pytest.fixture
def store(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[SessionStore]:
    made = backend.make(Site(tmp_path, request))
    yield made
    if isinstance(made, PostgresStore):
        made.close()


def _kernel(store: SessionStore, tmp_path: Path) -> WorkflowKernel:
    return WorkflowKernel(
        store, clock=FixedClock(), ids=SeededIds(7), workflow_cache=tmp_path / "wfcache"
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
        payload=cev.CatalogSyncStartedPayload(run=run, binding="sqlite:///x.db", dialect="sqlite"),
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


# ------------------------------------------------------------------ copying between stores

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def _source_session(tmp_path: Path) -> tuple[MemoryStore, str]:
    """A session with batches of several lines and an object, in memory."""
    source = MemoryStore()
    kernel = _kernel(source, tmp_path / "source")
    session = admitted_session(kernel)
    for i in range(3):
        kernel.apply_outcome(session, "disambiguation", receipt_outcome(f"r{i}"), actor="agent")
    source.put_object(session, b"SELECT 1;\n")
    return source, session


def _copy(source: SessionStore, target: SessionStore, session: str, *, chunk: int = 4) -> None:
    """What ``tht store migrate`` does for one session: the workflow, every object, the lines
    in chunks that end on batch boundaries (resuming from the target's tail)."""
    target.create_session(session, source.workflow_bytes(session))
    for sha in source.object_ids(session):
        assert target.put_object(session, source.get_object(session, sha)) == sha
    events = source.ledger(session).read().events
    lines = [ev.encode_event(e) for e in events]  # a ledger tht wrote: its lines re-encode
    done = 0
    while done < len(lines):
        end = min(len(lines), done + chunk)
        while events[end - 1].batch_left:
            end += 1
        target.ledger(session).append_lines(lines[done:end], expected_last_seq=done)
        done = end


def test_append_lines_copies_a_ledger_verbatim(
    store: SessionStore, backend: Backend, tmp_path: Path
) -> None:
    source, session = _source_session(tmp_path)
    _copy(source, store, session)
    original = source.ledger(session)
    copied = store.ledger(session)
    assert backend.lines(store, session) == original.lines  # byte for byte
    assert copied.read().events == original.read().events
    assert copied.tail().head == original.tail().head
    assert (
        copied.read_anchor()
        == original.read_anchor()
        == (len(original.lines), original.tail().head)
    )
    assert copied.verify().ok
    assert store.object_ids(session) == source.object_ids(session)
    assert (
        _kernel(store, tmp_path).load(session).state
        == _kernel(source, tmp_path).load(session).state
    )
    # and it goes on like any ledger
    after = copied.append(
        [_receipt("d")], expected_last_seq=len(original.lines), clock=FixedClock()
    )
    assert after.events[0].prev == original.tail().head and copied.verify().ok


def _bad_copies(lines: list[bytes], foreign: list[bytes]) -> dict[str, list[bytes]]:
    first = ev.decode_event(lines[1])
    rechained = ev.encode_event(msgspec.structs.replace(first, prev="0" * 64))
    batch_end = next(i for i, line in enumerate(lines) if ev.decode_event(line).batch_left)
    return {
        "prev altered": [lines[0], rechained, *lines[2:]],
        "a line left out": [lines[0], *lines[2:]],
        "two lines swapped": [lines[0], lines[2], lines[1], *lines[3:]],
        "not an event": [lines[0], b'{"type": "nonsense"}'],
        "not JSON": [lines[0], b"\xff\xfe garbage"],
        "two lines in one": [lines[0] + b"\n" + lines[1]],
        "cut inside a batch": lines[: batch_end + 1],
        "another ledger's lines": foreign,
        "a line edited": [lines[0], lines[1].replace(b'"admission"', b'"rewriting"'), *lines[2:]],
    }


def test_append_lines_refuses_what_would_not_verify_and_writes_nothing(
    store: SessionStore, backend: Backend, tmp_path: Path
) -> None:
    source, session = _source_session(tmp_path)
    lines = list(source.ledger(session).lines)
    other = WorkflowKernel(
        source, clock=FixedClock(), ids=SeededIds(8), workflow_cache=tmp_path / "wfcache"
    )
    foreign = list(source.ledger(admitted_session(other, "Which other question?")).lines)
    store.create_session(session, WORKFLOW_BYTES)
    for name, bad in _bad_copies(lines, foreign).items():
        with pytest.raises(IntegrityError, match="nothing was appended") as caught:
            store.ledger(session).append_lines(bad, expected_last_seq=0)
        assert caught.value.exit_code == 7, name
        assert backend.lines(store, session) == [], f"{name}: something was written"
        assert store.ledger(session).tail().last_seq == 0
    # a prefix that ends on a batch is fine; what follows it must chain onto it
    store.ledger(session).append_lines(lines[:4], expected_last_seq=0)
    with pytest.raises(IntegrityError):
        store.ledger(session).append_lines(lines[5:], expected_last_seq=4)  # seq 5 left out
    assert backend.lines(store, session) == lines[:4]


def test_append_lines_by_a_stale_copier_is_a_conflict(
    store: SessionStore, backend: Backend, tmp_path: Path
) -> None:
    source, session = _source_session(tmp_path)
    lines = list(source.ledger(session).lines)
    store.create_session(session, WORKFLOW_BYTES)
    store.ledger(session).append_lines(lines[:4], expected_last_seq=0)
    for stale in (0, 3, 5):
        with pytest.raises(ConflictError) as caught:
            store.ledger(session).append_lines(lines[4:], expected_last_seq=stale)
        assert caught.value.exit_code == 4
        assert caught.value.details == {"expected_last_seq": stale, "last_seq": 4}
    with pytest.raises(ConflictError):
        store.ledger(session).append_lines([], expected_last_seq=5)
    assert store.ledger(session).append_lines([], expected_last_seq=4).events == []
    assert backend.lines(store, session) == lines[:4]


def test_append_lines_never_extends_a_damaged_ledger(
    store: SessionStore, backend: Backend, tmp_path: Path
) -> None:
    source, session = _source_session(tmp_path)
    lines = list(source.ledger(session).lines)
    store.create_session(session, WORKFLOW_BYTES)
    store.ledger(session).append_lines(lines[:4], expected_last_seq=0)
    backend.damage_line(store, session, 4, lines[3].replace(b'"admission"', b'"rewriting"'))
    store.ledger(session).close()
    damaged = backend.lines(store, session)
    with pytest.raises(IntegrityError):
        store.ledger(session).append_lines(lines[4:], expected_last_seq=4)
    assert backend.lines(store, session) == damaged


def test_object_ids_list_every_object_sorted(store: SessionStore) -> None:
    assert store.workspace_object_ids("catalog") == []
    with pytest.raises(NotFoundError):
        store.object_ids(SESSION)
    store.create_session(SESSION, WORKFLOW_BYTES)
    store.create_session(OTHER, WORKFLOW_BYTES)
    assert store.object_ids(SESSION) == []
    digests = {store.put_object(SESSION, f"object {i}".encode()) for i in range(5)}
    store.put_object(OTHER, b"not this session's")
    assert store.object_ids(SESSION) == sorted(digests)
    snapshot = store.put_workspace_object("catalog", b'{"tables": []}')
    assert store.workspace_object_ids("catalog") == [snapshot]
    assert store.workspace_object_ids("memory") == []


def _golden_ledgers() -> list[Path]:
    found = sorted((GOLDEN / "sessions").glob("*/ledger.jsonl"))
    return [p for p in found if p.parent.name != "torn_tail"]  # its torn tail is not a ledger


def _fs_files(store: FileSystemStore, session: str) -> dict[str, bytes]:
    folder = store.sessions_dir / session
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def _copy_lines(source: SessionStore, target: SessionStore, session: str) -> None:
    target.create_session(session, source.workflow_bytes(session))
    for sha in source.object_ids(session):
        target.put_object(session, source.get_object(session, sha))
    lines = source.ledger(session).lines_after(0, 0)
    assert lines is not None
    target.ledger(session).append_lines(lines, expected_last_seq=0)


def test_the_golden_ledgers_go_through_the_store_and_back_byte_identical(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """fs → this backend → fs: the ledger file, its anchor and every object are the same bytes
    (the golden sessions, and the golden Metadata Catalog). Golden sessions share ids: a store
    of each kind per session."""
    paths = _golden_ledgers()
    assert len(paths) >= 5
    stores: list[SessionStore] = []
    try:
        for path in paths:
            where = tmp_path / path.parent.name
            first = FileSystemStore(where / "a" / "sessions", where / "a" / "cache")
            last = FileSystemStore(where / "b" / "sessions", where / "b" / "cache")
            middle = backend.make(Site(where, request))
            stores.append(middle)
            lines = path.read_bytes().split(b"\n")[:-1]
            session = str(ev.decode_event(lines[0]).subject)
            first.create_session(session, WORKFLOW_BYTES)
            first.put_object(session, path.parent.name.encode())
            first.ledger(session).append_lines(lines, expected_last_seq=0)
            assert first.ledger(session).path.read_bytes() == path.read_bytes()
            _copy_lines(first, middle, session)
            assert middle.ledger(session).verify().ok, path
            _copy_lines(middle, last, session)
            assert _fs_files(last, session) == _fs_files(first, session), path
        catalog = (GOLDEN / "catalog" / "ledger.jsonl").read_bytes()
        middle.workspace_ledger("catalog").append_lines(
            catalog.split(b"\n")[:-1], expected_last_seq=0
        )
        assert middle.workspace_ledger("catalog").verify().ok
        back = middle.workspace_ledger("catalog").lines_after(0, 0)
        assert back is not None
        last.workspace_ledger("catalog").append_lines(back, expected_last_seq=0)
        assert last.workspace_ledger("catalog").path.read_bytes() == catalog
    finally:
        for made in stores:
            if isinstance(made, PostgresStore):
                made.close()
