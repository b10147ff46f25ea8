"""``read_only_session`` (kernel.database.executor) against SQLite and a real PostgreSQL server:
each query of a session answers exactly what ``run_read_only`` answers for it — rows, hashes,
errors and their messages, in any order — on one connection; a timeout or a refusal leaves the
session usable for the next query."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernel.database.readonly as readonly
from kernel.database import QueryTimeout, read_only_session, run_read_only
from kernel.errors import ThtError, UsageError
from tests.contract.test_database import backend  # noqa: F401 - the fixture
from tests.support.workspace_database import Backend

QUERIES = (
    "SELECT id, name, email FROM customers ORDER BY id",
    "SELECT id FROM customers ORDER BY id DESC",
    "SELECT nope FROM customers",
    "SELECT * FROM no_such_table",
    "DELETE FROM customers",
    "INSERT INTO customers (id, name) VALUES (99, 'Mallory')",
    "DROP TABLE orders",
    "SELECT 1; SELECT 2",
    "SELEC 1",
    "SELECT count(*) AS n FROM orders",
)


def _answer(run: object, sql: str) -> tuple[str, object]:
    try:
        result = run(sql)  # type: ignore[operator]
    except ThtError as err:
        return type(err).__name__, (err.exit_code, err.message)
    return "rows", (result.rows, result.sha256, [c.name for c in result.columns])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(order=st.lists(st.sampled_from(QUERIES), min_size=1, max_size=12))
def test_a_session_answers_what_run_read_only_answers(
    backend: Backend,  # noqa: F811
    order: list[str],
) -> None:
    with read_only_session(backend.binding, timeout_ms=10_000) as session:
        for sql in order:
            alone = _answer(
                lambda s: run_read_only(backend.binding, s, limit=5, timeout_ms=10_000), sql
            )
            assert _answer(lambda s: session.run(s, limit=5), sql) == alone, sql


def test_a_session_opens_one_connection(
    backend: Backend,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[str] = []
    for name in ("connect_sqlite", "connect_postgres"):
        real = getattr(readonly, name)

        def counted(*args: object, _real: object = real, _name: str = name, **kw: object) -> object:
            opened.append(_name)
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(readonly, name, counted)
    with read_only_session(backend.binding, timeout_ms=10_000) as session:
        assert opened == []  # nothing until the first query
        for _ in range(5):
            session.run("SELECT id FROM customers", limit=10)
        if backend.name == "postgresql":
            pids = {session.run("SELECT pg_backend_pid()", limit=1).rows for _ in range(3)}
            assert len(pids) == 1
    assert len(opened) == 1


def test_a_timeout_in_a_session_leaves_it_usable(backend: Backend) -> None:  # noqa: F811
    with read_only_session(backend.binding, timeout_ms=300) as session:
        with pytest.raises(QueryTimeout) as caught:
            session.run(backend.slow_sql, limit=5)
        assert caught.value.details["why"] == "timeout"
        assert session.run("SELECT 1 AS one", limit=1).rows == ((1,),)


def test_bad_arguments_are_usage_errors(backend: Backend) -> None:  # noqa: F811
    with pytest.raises(UsageError), read_only_session(backend.binding, timeout_ms=0):
        pass
    with read_only_session(backend.binding, timeout_ms=1_000) as session, pytest.raises(UsageError):
        session.run("SELECT 1", limit=-1)
