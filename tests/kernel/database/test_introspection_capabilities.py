"""Introspection Capability: a category the backend cannot give is ``unavailable`` and its facts
are absent, never an empty list that would read as "observed, none". Also the deterministic
names of unnamed foreign keys."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine.reflection import Inspector
from sqlalchemy.exc import DBAPIError

from kernel.database import binding_from_url, introspect
from kernel.database.introspection import _relationships


@pytest.fixture
def binding(tmp_path: Path) -> Any:
    with sqlite3.connect(tmp_path / "c.db") as conn:
        conn.executescript(
            "CREATE TABLE a (id INTEGER PRIMARY KEY);"
            "CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a (id));"
            "CREATE INDEX ix_b ON b (a_id);"
        )
    conn.close()
    return binding_from_url(tmp_path, "sqlite:///c.db")


def test_a_category_the_dialect_does_not_implement_is_unavailable(
    binding: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_implemented(self: Inspector, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    monkeypatch.setattr(Inspector, "get_multi_indexes", not_implemented)
    found = introspect(binding)
    assert found.capabilities["indexes"] == "unavailable"
    assert found.indexes == ()
    assert found.capabilities["relationships"] == "observed" and len(found.relationships) == 1


def test_a_category_the_role_may_not_read_is_unavailable(
    binding: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Denied(Exception):
        sqlstate = "42501"

    def denied(self: Inspector, *args: Any, **kwargs: Any) -> Any:
        raise DBAPIError("SELECT …", None, Denied("permission denied for table pg_constraint"))

    monkeypatch.setattr(Inspector, "get_multi_foreign_keys", denied)
    found = introspect(binding)
    assert found.capabilities["relationships"] == "unavailable" and found.relationships == ()
    assert found.capabilities["columns"] == "observed"


def test_any_other_database_error_fails_the_whole_introspection(
    binding: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel.database import DatabaseUnavailable

    class Broken(Exception):
        sqlstate = "XX000"

    def broken(self: Inspector, *args: Any, **kwargs: Any) -> Any:
        raise DBAPIError("SELECT …", None, Broken("internal error"))

    monkeypatch.setattr(Inspector, "get_multi_columns", broken)
    with pytest.raises(DatabaseUnavailable, match="internal error"):
        introspect(binding)


def _fk(columns: list[str], table: str, name: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "constrained_columns": columns,
        "referred_table": table,
        "referred_columns": ["id"] * len(columns),
    }


def test_unnamed_foreign_keys_get_postgres_default_names_without_collisions() -> None:
    found = {
        (None, "t"): [
            _fk(["x"], "b"),
            _fk(["x"], "a"),
            _fk(["y"], "c", name="t_x_fkey"),  # already holds the default name of the others
            _fk(["p", "q"], "d"),
        ]
    }
    names = {r.constraint: (r.to_table, r.from_columns) for r in _relationships(None, ["t"], found)}
    assert names == {
        "t_x_fkey": ("c", ("y",)),
        "t_x_fkey1": ("a", ("x",)),  # sorted by target: a before b, whatever the input order
        "t_x_fkey2": ("b", ("x",)),
        "t_p_q_fkey": ("d", ("p", "q")),
    }
    reordered = {(None, "t"): list(reversed(found[(None, "t")]))}
    assert _relationships(None, ["t"], reordered) == _relationships(None, ["t"], found)
