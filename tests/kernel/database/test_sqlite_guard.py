"""The SQLite authorizer allowlist, on a real connection: reads pass, everything else is denied
while the statement compiles (so nothing runs), and the denial says what was attempted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kernel.database.sqlite_guard import READ_PRAGMAS, SqliteGuard


@pytest.fixture
def guarded(tmp_path: Path) -> tuple[sqlite3.Connection, SqliteGuard]:
    path = tmp_path / "g.db"
    with sqlite3.connect(path) as setup:
        setup.executescript(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX ix_t ON t (name);"
            "INSERT INTO t VALUES (1, 'a');"
        )
    setup.close()
    conn = sqlite3.connect(path, isolation_level=None)
    guard = SqliteGuard()
    conn.set_authorizer(guard)
    return conn, guard


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM t",
        "SELECT upper(name), count(*) FROM t GROUP BY 1",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) "
        "SELECT x FROM c",
        "PRAGMA table_info(t)",
        "PRAGMA index_list('t')",
        "PRAGMA foreign_key_list(t)",
        "PRAGMA user_version",
        "SELECT name FROM sqlite_master",
    ],
)
def test_reads_are_allowed(guarded: tuple[sqlite3.Connection, SqliteGuard], sql: str) -> None:
    conn, guard = guarded
    conn.execute(sql).fetchall()
    assert guard.denied is None


@pytest.mark.parametrize(
    ("sql", "denied"),
    [
        ("INSERT INTO t VALUES (2, 'b')", "INSERT on t"),
        ("UPDATE t SET name = 'x'", "UPDATE on t"),
        ("DELETE FROM t", "DELETE on t"),
        ("DROP TABLE t", "a schema change"),
        ("CREATE TABLE u (x)", "a schema change"),
        ("CREATE TEMP VIEW v AS SELECT 1", "a schema change"),
        ("ALTER TABLE t ADD COLUMN z", "ALTER TABLE t"),
        ("ATTACH ':memory:' AS m", "ATTACH"),
        ("PRAGMA user_version = 3", "PRAGMA user_version=3"),
        ("PRAGMA writable_schema = 1", "PRAGMA writable_schema=1"),
        ("PRAGMA wal_checkpoint", "PRAGMA wal_checkpoint"),
        ("BEGIN", "BEGIN (a transaction)"),
        ("SAVEPOINT s", "SAVEPOINT"),
        ("REINDEX", "REINDEX ix_t"),
        ("ANALYZE", "a schema change"),
        ("SELECT load_extension('x')", "function load_extension()"),
        ("SELECT fts3_tokenizer('simple')", "function fts3_tokenizer()"),
        ("VACUUM INTO 'copy.db'", "ATTACH"),
        # a table-valued pragma asks to write the schema table (to declare its virtual
        # table): denied too; the PRAGMA statement form reads the same facts
        ("SELECT * FROM pragma_table_info('t')", "a schema change"),
    ],
)
def test_everything_else_is_denied_and_described(
    guarded: tuple[sqlite3.Connection, SqliteGuard], sql: str, denied: str
) -> None:
    conn, guard = guarded
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute(sql)
    assert guard.denied is not None and guard.denied.startswith(denied)
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)


def test_the_read_pragmas_take_only_object_names() -> None:
    assert not {p for p in READ_PRAGMAS if "check" in p or "optimize" in p or "vacuum" in p}
