"""The attacks of test_database_read_only.py, all through **one** read-only session
(``read_only_session``: one connection for many queries, as a value index rebuild runs them),
against SQLite and a real PostgreSQL server: each is still refused and changes nothing, what an
earlier query set does not reach a later one, and the session still reads afterwards."""

from __future__ import annotations

import contextlib

import pytest

from kernel.database import QueryFailed, QueryRefused, read_only_session
from tests.adversarial.test_database_read_only import ATTACKS, target  # noqa: F401 - fixture
from tests.support.workspace_database import Backend

SETTINGS = (
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT set_config('transaction_read_only', 'off', false)",
    "PRAGMA query_only=0",
    "SELECT set_config('search_path', 'pg_temp, public', false)",
)


def test_every_attack_in_one_session_is_refused_and_changes_nothing(
    target: Backend,  # noqa: F811
) -> None:
    before = target.fingerprint()
    with read_only_session(target.binding, timeout_ms=5_000) as session:
        for name, sql, on_sqlite, on_postgres in ATTACKS:
            expected = on_sqlite if target.name == "sqlite" else on_postgres
            with pytest.raises((QueryRefused, QueryFailed)) as caught:
                session.run(sql.format(root=target.root), limit=10)
            if expected == "refused":
                assert isinstance(caught.value, QueryRefused), (name, caught.value.message)
            assert target.fingerprint() == before, name
        # a setting an earlier query of the session changed (or tried to) reaches no write
        for sql in SETTINGS:
            with contextlib.suppress(QueryRefused, QueryFailed):
                session.run(sql, limit=1)
        for write in ("DELETE FROM customers", "UPDATE customers SET name = 'Mallory'"):
            with pytest.raises(QueryRefused):
                session.run(write, limit=1)
        assert session.run("SELECT count(*) AS n FROM customers", limit=1).rows == ((3,),)
    assert target.fingerprint() == before
