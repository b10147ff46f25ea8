"""Attacks on the read-only executor, against SQLite and a real PostgreSQL server.

Each attack is refused (QueryRefused, exit 5; QueryFailed, exit 2, only where the database
itself rejects the syntax), and afterwards nothing changed: the SQLite file is byte-identical
and no file appeared anywhere in the workspace (no -journal, -wal, attached or vacuumed copy);
the PostgreSQL tables have the same rows (counts and checksums), the same objects (no temp or
new table), the same sequence position and no large object. On PostgreSQL the binding logs in
as the tables' *owner*, a role that could write every one of them, and the workspace folder is
writable by the server, so a COPY or a large-object export that ran would leave a file there. A
superuser binding is refused before any SQL is sent (it could write server files from inside a
read-only transaction).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.database import QueryFailed, QueryRefused, run_read_only
from tests.support.postgres import PostgresServer
from tests.support.workspace_database import Backend, postgres_backend, sqlite_backend

R = "refused"  # QueryRefused only
E = "either"  # QueryRefused, or QueryFailed where this database rejects the syntax itself

# (name, SQL with {root} for the workspace folder, expectation on sqlite, on postgresql)
ATTACKS: list[tuple[str, str, str, str]] = [
    ("insert", "INSERT INTO customers (id, name) VALUES (99, 'Mallory')", R, R),
    ("insert returning", "INSERT INTO customers (id, name) VALUES (98, 'M') RETURNING id", R, R),
    ("update", "UPDATE customers SET name = 'Mallory'", R, R),
    ("delete", "DELETE FROM customers", R, R),
    ("replace", "REPLACE INTO customers VALUES (1, 'Mallory', NULL)", R, R),
    ("drop table", "DROP TABLE order_lines", R, R),
    ("create table", "CREATE TABLE evil (x INTEGER)", R, R),
    ("create temp table", "CREATE TEMP TABLE evil (x INTEGER)", R, R),
    ("create index", "CREATE INDEX ix_evil ON customers (name)", R, R),
    ("alter table", "ALTER TABLE customers ADD COLUMN evil INTEGER", R, R),
    ("attach", "ATTACH DATABASE '{root}/attached.db' AS y", R, R),
    ("detach", "DETACH DATABASE main", R, R),
    ("pragma writable_schema", "PRAGMA writable_schema=1", R, R),
    ("pragma journal_mode delete", "PRAGMA journal_mode=delete", R, R),
    ("pragma journal_mode wal", "PRAGMA journal_mode=wal", R, R),
    ("pragma query_only off", "PRAGMA query_only=0", R, R),
    ("pragma user_version", "PRAGMA user_version=7", R, R),
    ("vacuum", "VACUUM", R, R),
    ("vacuum into", "VACUUM INTO '{root}/copy.db'", R, R),
    ("reindex", "REINDEX", R, R),
    ("analyze", "ANALYZE", R, R),
    ("two statements", "SELECT 1; DROP TABLE order_lines", R, R),
    ("statement after a comment", "SELECT 1; -- harmless\nDELETE FROM customers", R, R),
    ("cte delete", "WITH d AS (DELETE FROM customers RETURNING *) SELECT * FROM d", E, R),
    (
        "cte insert",
        "WITH x AS (SELECT 97 AS id) INSERT INTO customers (id, name) SELECT id, 'M' FROM x",
        R,
        R,
    ),
    ("nextval", "SELECT nextval('order_seq')", E, R),
    ("set_config read write", "SELECT set_config('transaction_read_only', 'off', true)", E, R),
    ("copy to file", "COPY customers TO '{root}/leak.csv'", E, R),
    ("copy to program", "COPY (SELECT 1) TO PROGRAM 'touch {root}/pwned'", E, R),
    ("lo_import", "SELECT lo_import('/etc/hostname')", E, R),
    ("lo_export", "SELECT lo_export(0, '{root}/lo.bin')", E, E),
    ("load_extension", "SELECT load_extension('x')", R, E),
    ("select into", "SELECT * INTO newtable FROM customers", E, R),
    ("comment and case", "/* harmless */ DeLeTe FROM customers", R, R),
    ("line comment first", "-- just a read\nDELETE FROM customers", R, R),
    ("begin commit", "BEGIN; DELETE FROM customers; COMMIT", R, R),
    ("begin", "BEGIN", R, R),
    ("savepoint", "SAVEPOINT s1", R, R),
    ("explain a delete", "EXPLAIN DELETE FROM customers", R, R),
    ("do block", "DO $$ BEGIN DELETE FROM customers; END $$", E, R),
    ("truncate", "TRUNCATE customers", E, R),
    (
        "create trigger",
        "CREATE TRIGGER t AFTER INSERT ON customers BEGIN DELETE FROM orders; END",
        R,
        R,
    ),
    ("set session read write", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", E, R),
]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest) -> Iterator[Backend]:
    # a folder the PostgreSQL server (another OS user) could write into, outside pytest's
    # private tmp folders: an attack that wrote a file would leave it here
    root = Path(tempfile.mkdtemp(prefix="tht-attack-"))
    os.chmod(root, 0o777)
    try:
        if request.param == "sqlite":
            yield sqlite_backend(root)
        else:
            server: PostgresServer = request.getfixturevalue("postgres_server")
            yield postgres_backend(server, root, "attack_shop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(
    ("name", "sql", "on_sqlite", "on_postgres"), ATTACKS, ids=[a[0] for a in ATTACKS]
)
def test_every_attack_is_refused_and_changes_nothing(
    target: Backend, name: str, sql: str, on_sqlite: str, on_postgres: str
) -> None:
    expected = on_sqlite if target.name == "sqlite" else on_postgres
    before = target.fingerprint()
    with pytest.raises((QueryRefused, QueryFailed)) as caught:
        run_read_only(target.binding, sql.format(root=target.root), limit=10, timeout_ms=5_000)
    if expected == R:
        assert isinstance(caught.value, QueryRefused), caught.value.message
        assert caught.value.exit_code == 5
        assert caught.value.message.startswith("refused:")
    assert "\n" not in caught.value.message
    assert target.fingerprint() == before


def test_a_setting_changed_by_one_query_does_not_reach_the_next(target: Backend) -> None:
    """``set_config`` in one run (harmless or refused) and then a write: the write is refused,
    because every run has its own read-only connection and transaction."""
    before = target.fingerprint()
    for sql in (
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT set_config('transaction_read_only', 'off', false)",
    ):
        with contextlib.suppress(QueryRefused, QueryFailed):
            run_read_only(target.binding, sql, limit=1, timeout_ms=5_000)
    with pytest.raises(QueryRefused):
        run_read_only(target.binding, "DELETE FROM customers", limit=1, timeout_ms=5_000)
    assert target.fingerprint() == before


def test_reads_still_work_after_the_attacks(target: Backend) -> None:
    result = run_read_only(
        target.binding, "SELECT count(*) AS n FROM customers", limit=1, timeout_ms=5_000
    )
    assert result.rows == ((3,),)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "SELECT lo_import('/etc/hostname')",
        "SELECT lo_export(oid, '{root}/lo.bin') FROM pg_largeobject_metadata",
    ],
)
def test_a_role_that_can_write_server_files_is_refused(
    postgres_server: PostgresServer, sql: str, tmp_path: Path
) -> None:
    """A superuser's read-only transaction can still import and export large objects (files
    on the server): tht refuses to run any SQL as such a role."""
    root = Path(tempfile.mkdtemp(prefix="tht-attack-su-"))
    os.chmod(root, 0o777)
    try:
        backend = postgres_backend(postgres_server, root, "attack_su", superuser=True)
        backend.write("SELECT lo_from_bytea(0, 'secret'::bytea)")  # a large object to export
        before = backend.fingerprint()
        with pytest.raises(QueryRefused, match="can write files on the database server"):
            run_read_only(backend.binding, sql.format(root=root), limit=5, timeout_ms=5_000)
        assert backend.fingerprint() == before
        assert sorted(os.listdir(root)) == []
    finally:
        shutil.rmtree(root, ignore_errors=True)
