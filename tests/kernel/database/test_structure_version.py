"""The structure version is a function of the structure: it changes with every table, column or
index change, never with data, and the same structure gives the same version again (creating and
dropping an index brings the old version back)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kernel.database import binding_from_url, structure_version

TABLES = ("t1", "t2", "t3")
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(TABLES)),
        st.tuples(
            st.just("column"), st.sampled_from(TABLES), st.sampled_from(["INTEGER", "TEXT", "REAL"])
        ),
        st.tuples(st.just("index"), st.sampled_from(TABLES)),
        st.tuples(st.just("unindex"), st.sampled_from(TABLES)),
        st.tuples(st.just("insert"), st.sampled_from(TABLES)),
        st.tuples(st.just("delete"), st.sampled_from(TABLES)),
    ),
    max_size=10,
)


def _apply(
    conn: sqlite3.Connection, model: dict[str, list[str]], indexed: set[str], op: tuple[str, ...]
) -> bool:
    """Apply ``op`` when it is possible; True when it changed the structure."""
    kind, table = op[0], op[1]
    if kind == "create" and table not in model:
        conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
        model[table] = ["id INTEGER"]
        return True
    if table not in model:
        return False
    if kind == "column":
        name = f"c{len(model[table])}"
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {op[2]}")
        model[table].append(f"{name} {op[2]}")
        return True
    if kind == "index" and table not in indexed:
        conn.execute(f"CREATE INDEX ix_{table} ON {table} (id)")
        indexed.add(table)
        return True
    if kind == "unindex" and table in indexed:
        conn.execute(f"DROP INDEX ix_{table}")
        indexed.discard(table)
        return True
    if kind == "insert":
        conn.execute(f"INSERT INTO {table} (id) VALUES (NULL)")
    if kind == "delete":
        conn.execute(f"DELETE FROM {table}")
    return False


@given(OPS)
def test_the_version_follows_the_structure_and_only_it(ops: list[tuple[str, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        binding = binding_from_url(root, "sqlite:///s.db")
        conn = sqlite3.connect(root / "s.db", isolation_level=None)
        model: dict[str, list[str]] = {}
        indexed: set[str] = set()
        seen: dict[str, str] = {}
        previous = structure_version(binding)
        seen[repr(({}, []))] = previous
        for op in ops:
            changed = _apply(conn, model, indexed, op)
            version = structure_version(binding)
            assert (version != previous) == changed, op
            key = repr((model, sorted(indexed)))
            assert seen.setdefault(key, version) == version, "same structure, another version"
            previous = version
        conn.close()
