"""The outbox contract (ARCHITECTURE §3.7), run against every ``OutboxPort``: the files under
``.tht/outbox/`` and the PostgreSQL store's ``tht_outbox`` table (a real server: the session's
``postgres_server``, one database for this module, one workspace id per test).

Enqueueing is idempotent by item id; a run executes each due pending item once and records it
``done``; a failing (or missing) handler leaves it pending with its error and an exponential
back-off, then ``failed`` after ``max_attempts``; ``done`` / ``failed`` items never run again; a
run can be limited to one session, and ``force`` ignores the back-off.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.clock import FixedClock, format_ts
from kernel.outbox import Outbox, OutboxFolder, OutboxItem
from kernel.store.postgres_conn import Database
from kernel.store.postgres_outbox import PostgresOutbox
from kernel.store.postgres_schema import LATEST

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.at = T0

    def now(self) -> datetime:
        return self.at


@dataclass
class Site:
    tmp: Path
    request: pytest.FixtureRequest
    opened: list[Database]

    def outbox(self, kind: str, **options: object) -> Outbox:
        if kind == "file":
            folder = self.tmp / f"outbox-{uuid.uuid4().hex[:8]}"
            return Outbox(folder, **options)  # type: ignore[arg-type]
        dsn = str(self.request.getfixturevalue("store_database"))
        db = Database(dsn, required_version=LATEST)
        self.opened.append(db)
        port = PostgresOutbox(db, workspace=f"o-{uuid.uuid4().hex[:16]}")
        return Outbox(port=port, **options)  # type: ignore[arg-type]


@pytest.fixture
def site(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Site]:
    opened: list[Database] = []
    yield Site(tmp_path, request, opened)
    for db in opened:
        db.close()


@pytest.fixture(params=["file", "postgres"])
def make(site: Site, request: pytest.FixtureRequest) -> Callable[..., Outbox]:
    kind = str(request.param)
    return lambda **options: site.outbox(kind, **options)


def _ok(item: OutboxItem) -> None:
    return None


def _broken(item: OutboxItem) -> None:
    raise OSError("nope")


def test_enqueueing_twice_keeps_one_item_as_first_enqueued(make: Callable[..., Outbox]) -> None:
    outbox = make()
    clock = Clock()
    first = outbox.enqueue("S1", ("notify", "memory:solved_question"), clock)
    clock.at += timedelta(hours=1)
    again = outbox.enqueue("S1", ("notify",), clock)
    assert [i.id for i in first] == ["S1.notify", "S1.memory-solved_question"]
    assert again[0].created_at != first[0].created_at  # what was asked …
    listed = outbox.items()
    assert [i.id for i in listed] == ["S1.memory-solved_question", "S1.notify"]  # … not stored
    assert {i.created_at for i in listed} == {format_ts(T0)}
    assert all(i.status == "pending" and i.attempts == 0 for i in listed)


def test_a_bad_task_name_is_refused_and_nothing_is_stored(make: Callable[..., Outbox]) -> None:
    outbox = make()
    with pytest.raises(ValueError, match="bad outbox task name"):
        outbox.enqueue("S1", ("Bad Name",), Clock())
    assert outbox.items() == []


def test_a_run_executes_each_due_item_once_and_records_it_done(make: Callable[..., Outbox]) -> None:
    outbox = make()
    clock = Clock()
    outbox.enqueue("S1", ("a", "b"), clock)
    seen: list[str] = []
    handlers = {"a": lambda i: seen.append(i.id), "b": lambda i: seen.append(i.id)}
    clock.at += timedelta(seconds=5)
    run = outbox.run(handlers, clock)
    assert run.done == ("S1.a", "S1.b") and seen == ["S1.a", "S1.b"]
    assert outbox.run(handlers, clock, force=True).done == ()  # done items never run again
    assert seen == ["S1.a", "S1.b"]
    for item in outbox.items():
        assert (item.status, item.attempts, item.last_error) == ("done", 1, None)
        assert item.done_at == format_ts(T0 + timedelta(seconds=5))


def test_a_failing_handler_backs_off_then_fails_after_max_attempts(
    make: Callable[..., Outbox],
) -> None:
    outbox = make(max_attempts=3, base_delay=timedelta(seconds=30))
    clock = Clock()
    outbox.enqueue("S1", ("notify",), clock)
    handlers = {"notify": _broken}
    assert outbox.run(handlers, clock).retrying == ("S1.notify",)
    item = outbox.items()[0]
    assert (item.status, item.attempts, item.last_error) == ("pending", 1, "OSError: nope")
    assert item.next_attempt_at == format_ts(T0 + timedelta(seconds=30))
    clock.at += timedelta(seconds=29)
    assert outbox.run(handlers, clock).not_due == ("S1.notify",)
    assert outbox.items()[0].attempts == 1  # not due: not run, not counted
    clock.at += timedelta(seconds=1)  # due exactly at next_attempt_at
    assert outbox.run(handlers, clock).retrying == ("S1.notify",)
    second = outbox.items()[0]
    assert second.attempts == 2  # the back-off doubles
    assert second.next_attempt_at == format_ts(clock.at + timedelta(seconds=60))
    assert outbox.run(handlers, clock, force=True).failed == ("S1.notify",)
    failed = outbox.items()[0]
    assert (failed.status, failed.attempts, failed.last_error) == ("failed", 3, "OSError: nope")
    assert outbox.run({"notify": _ok}, clock, force=True) == type(outbox.run({}, clock))()


def test_a_task_without_a_handler_is_an_error_of_its_item(make: Callable[..., Outbox]) -> None:
    outbox = make(max_attempts=1)
    clock = Clock()
    outbox.enqueue("S1", ("gone",), clock)
    assert outbox.run({}, clock).failed == ("S1.gone",)
    assert outbox.items()[0].last_error == "no handler for task 'gone'"


def test_a_run_limited_to_a_session_leaves_the_others(make: Callable[..., Outbox]) -> None:
    outbox = make()
    clock = Clock()
    outbox.enqueue("S1", ("a",), clock)
    outbox.enqueue("S2", ("a",), clock)
    assert outbox.run({"a": _ok}, clock, session="S2").done == ("S2.a",)
    assert {i.id: i.status for i in outbox.items()} == {"S1.a": "pending", "S2.a": "done"}


def test_an_error_text_round_trips(make: Callable[..., Outbox]) -> None:
    outbox = make(max_attempts=1)
    clock = Clock()
    outbox.enqueue("S1", ("a",), clock)

    def weird(item: OutboxItem) -> None:
        raise RuntimeError("é ' \" % %(ws)s; DROP TABLE tht_outbox --" + "x" * 600)

    outbox.run({"a": weird}, clock)
    error = outbox.items()[0].last_error
    assert error is not None and len(error) == 500
    assert error.startswith("RuntimeError: é ' \" % %(ws)s; DROP TABLE tht_outbox --")


def test_the_file_port_writes_the_item_json_byte_for_byte(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox")
    outbox.enqueue("S1", ("notify",), FixedClock())
    path = tmp_path / "outbox" / "S1.notify.json"
    assert path.read_bytes() == (
        b'{"id":"S1.notify","session":"S1","task":"notify","created_at":"2026-01-01T00:00:00.000Z",'
        b'"status":"pending","attempts":0,"last_error":null,"next_attempt_at":null,"done_at":null}'
    )
    assert isinstance(outbox.port, OutboxFolder) and outbox.folder == tmp_path / "outbox"
    outbox.run({"notify": _ok}, FixedClock())
    assert msgspec.json.decode(path.read_bytes())["status"] == "done"
    assert sorted(p.name for p in (tmp_path / "outbox").iterdir()) == [".lock", "S1.notify.json"]


def test_an_outbox_needs_exactly_one_of_folder_and_port(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Outbox()
    with pytest.raises(ValueError):
        Outbox(tmp_path, port=OutboxFolder(tmp_path))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(outcomes=st.lists(st.booleans(), min_size=1, max_size=6), forced=st.booleans())
def test_an_item_follows_the_model_of_attempts(
    make: Callable[..., Outbox], outcomes: list[bool], forced: bool
) -> None:
    """Invariant: after runs whose handler succeeds or fails as ``outcomes`` says, the item is
    done at the first success, failed at the max_attempts-th failure, else pending; attempts
    count the runs that executed it, and a not-due run executes nothing."""
    outbox = make(max_attempts=3, base_delay=timedelta(seconds=10))
    clock = Clock()
    outbox.enqueue("S1", ("t",), clock)
    calls = 0
    status, attempts = "pending", 0
    for succeed in outcomes:

        def handler(item: OutboxItem, succeed: bool = succeed) -> None:
            nonlocal calls
            calls += 1
            if not succeed:
                raise OSError("no")

        before = outbox.items()[0]
        outbox.run({"t": handler}, clock, force=forced)
        due = forced or not before.next_attempt_at or before.next_attempt_at <= format_ts(clock.at)
        if status == "pending" and due:
            attempts += 1
            status = "done" if succeed else ("failed" if attempts >= 3 else "pending")
        clock.at += timedelta(seconds=7)
        item = outbox.items()[0]
        assert (item.status, item.attempts, calls) == (status, attempts, attempts)
