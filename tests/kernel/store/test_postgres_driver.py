"""The PostgreSQL store's driver (kernel/store/postgres_libpq.py, postgres_driver.py) on a real
server: values both ways, errors with their SQLSTATE, a connection that outlives a failed
statement, prepared statements, posted statements, transactions, the server's notices never
printed, and what an interrupted statement leaves behind."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kernel.errors import InternalError, UnavailableError
from kernel.store.postgres_conn import Database
from kernel.store.postgres_driver import PREPARE_AFTER, Connection
from kernel.store.postgres_libpq import UNIQUE_VIOLATION, PgError, conninfo


@pytest.fixture
def conn(pg_dsn: str) -> Iterator[Connection]:
    opened = Connection.open(pg_dsn, timeout_s=10)
    yield opened
    opened.close()


def _one(conn: Connection, sql: str, params: Any = None) -> tuple[Any, ...]:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row


def test_values_go_and_come_back_unchanged(conn: Connection) -> None:
    row = _one(
        conn,
        "SELECT %(i)s::bigint, %(t)s::text, %(b)s::bytea, %(f)s::boolean, %(n)s::text, "
        "%(j)s::jsonb, %(d)s::float8, 7::int4, 3::int2, 'x'::varchar, 'y'::name",
        {"i": -(2**63), "t": "ünï\tcode", "b": b"\x00\xff\x00", "f": False, "n": None,
         "j": '{"k": [1, "two"]}', "d": 0.5},
    )  # fmt: skip
    assert row == (-(2**63), "ünï\tcode", b"\x00\xff\x00", False, None, {"k": [1, "two"]}, 0.5,
                   7, 3, "x", "y")  # fmt: skip


def test_arrays_unnest_into_rows(conn: Connection) -> None:
    rows = conn.execute(
        "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bytea[], %s::jsonb[])",
        ([1, 2, 3], ["a", None, "c"], [b"\x00", b"", b"z"], ['{"a":1}', None, "[]"]),
    ).fetchall()
    assert rows == [(1, "a", b"\x00", {"a": 1}), (2, None, b"", None), (3, "c", b"z", [])]
    assert conn.execute("SELECT cardinality(%s::bigint[])", ([],)).fetchall() == [(0,)]


def test_a_failed_statement_keeps_its_sqlstate_and_the_connection(conn: Connection) -> None:
    conn.execute("CREATE TEMP TABLE t_unique (k int PRIMARY KEY)")
    conn.execute("INSERT INTO t_unique VALUES (1)")
    with pytest.raises(PgError) as caught:
        conn.execute("INSERT INTO t_unique VALUES (%s)", (1,))
    assert caught.value.sqlstate == UNIQUE_VIOLATION and not caught.value.lost
    assert "duplicate key" in caught.value.message and not caught.value.unavailable
    with pytest.raises(PgError) as syntax:
        conn.execute("SELEC 1")
    assert syntax.value.sqlstate == "42601"
    assert _one(conn, "SELECT count(*) FROM t_unique") == (1,)  # still usable


def test_values_the_store_never_reads_are_an_error_not_a_broken_connection(
    conn: Connection,
) -> None:
    with pytest.raises(PgError, match="oid 1184"):
        conn.execute("SELECT now()")
    with pytest.raises(PgError, match="NUL") as nul:
        conn.execute("SELECT %s::text", ("a\x00b",))
    assert nul.value.sqlstate == "22021" and not conn.broken
    assert _one(conn, "SELECT 1") == (1,)


def test_a_repeated_statement_is_prepared_once(conn: Connection) -> None:
    sql = "SELECT %s::bigint + 1"
    for n in range(PREPARE_AFTER + 3):
        assert _one(conn, sql, (n,)) == (n + 1,)
    prepared = conn.execute(
        "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s", ("%+ 1",)
    ).fetchall()
    assert prepared == [("SELECT $1::bigint + 1",)]


def test_a_posted_statement_is_answered_before_the_next_and_its_error_only_logged(
    conn: Connection, pg_dsn: str
) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS t_posted (k int PRIMARY KEY)")
    conn.execute("TRUNCATE t_posted")
    conn.post("INSERT INTO t_posted VALUES (%s)", (1,))
    assert _one(conn, "SELECT count(*) FROM t_posted") == (1,)  # in order, committed
    conn.post("INSERT INTO t_posted VALUES (%s)", (1,))  # a duplicate: fails quietly
    assert _one(conn, "SELECT count(*) FROM t_posted") == (1,)
    conn.post("INSERT INTO t_posted VALUES (%s)", (2,))
    conn.close()  # right after: the server still runs what it received
    other = Connection.open(pg_dsn, timeout_s=10)
    deadline = time.monotonic() + 10
    while _one(other, "SELECT count(*) FROM t_posted") != (2,):
        assert time.monotonic() < deadline, "the posted insert never ran"
        time.sleep(0.01)
    other.close()


def test_a_transaction_commits_or_rolls_back_whole(conn: Connection) -> None:
    conn.execute("CREATE TEMP TABLE t_tx (k int PRIMARY KEY)")
    with conn.transaction():
        conn.execute("INSERT INTO t_tx VALUES (1)")
    with pytest.raises(RuntimeError), conn.transaction():
        conn.execute("INSERT INTO t_tx VALUES (2)")
        raise RuntimeError("abandon")
    with pytest.raises(PgError, match="rolled back"), conn.transaction():
        conn.execute("INSERT INTO t_tx VALUES (3)")
        with pytest.raises(PgError):  # swallowed inside: the transaction is still failed
            conn.execute("INSERT INTO t_tx VALUES (1)")
    assert conn.execute("SELECT k FROM t_tx ORDER BY k").fetchall() == [(1,)]


def test_the_servers_notices_are_never_printed(
    conn: Connection, capfd: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS t_quiet (k int)")  # NOTICE: skipping
    conn.execute("DO $$ BEGIN RAISE WARNING 'a warning'; END $$")
    out, err = capfd.readouterr()
    assert "skipping" not in out + err and "warning" not in out + err


def test_notifications_arrive_with_their_channel_and_payload(conn: Connection, pg_dsn: str) -> None:
    conn.execute("LISTEN t_channel")
    assert conn.notifies(timeout=0.05) == []
    sender = Connection.open(pg_dsn, timeout_s=10)
    sender.execute("SELECT pg_notify('t_channel', 'one'), pg_notify('other', 'x')")
    sender.execute("NOTIFY t_channel, 'two'")
    got: list[tuple[str, str]] = []
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        got += conn.notifies(timeout=1.0)
    assert got == [("t_channel", "one"), ("t_channel", "two")]
    sender.close()


def test_an_interrupted_statement_closes_its_connection(
    conn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def interrupted(*args: Any) -> Any:
        calls.append(args)
        raise KeyboardInterrupt

    monkeypatch.setattr(select, "select", interrupted)
    with pytest.raises(KeyboardInterrupt):
        conn.execute("SELECT pg_sleep(0.2)")
    monkeypatch.undo()
    assert calls and conn.closed  # its outcome is unknown: never used again
    with pytest.raises(PgError) as caught:
        conn.execute("SELECT 1")
    assert caught.value.lost


def test_a_server_that_never_answers_the_connection_times_out() -> None:
    with socket.socket() as silent:  # accepts the TCP connection, never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        with pytest.raises(PgError, match="timeout") as caught:  # the deadline, not a hang
            Connection.open(f"postgresql://u@127.0.0.1:{port}/d", timeout_s=0.5)
        assert caught.value.lost


def test_conninfo_reads_urls_and_refuses_malformed_ones() -> None:
    found = conninfo("postgresql://ann:p%40ss@db.example:6543/store?connect_timeout=3")
    assert found is not None
    assert (found["user"], found["password"], found["host"], found["port"]) == (
        "ann",
        "p@ss",
        "db.example",
        "6543",
    )
    assert found["dbname"] == "store" and found["connect_timeout"] == "3"
    assert conninfo("host=h port=1 password='x y'") == {"host": "h", "port": "1", "password": "x y"}
    assert conninfo("not a url with password=hunter2") is None


def test_the_store_maps_driver_errors_to_exit_codes(pg_dsn: str) -> None:
    db = Database(pg_dsn, required_version=None)

    def cancelled(conn: Connection) -> object:
        conn.execute("SET statement_timeout = 50")
        try:
            return conn.execute("SELECT pg_sleep(1)")  # 57014: the server gave up, class 57
        finally:
            conn.execute("RESET statement_timeout")

    with pytest.raises(InternalError, match="syntax"):
        db.run("test", lambda c: c.execute("SELEC 1"))
    with pytest.raises(InternalError, match="NUL"):
        db.run("test", lambda c: c.execute("SELECT %s::text", ("\x00",)))
    with pytest.raises(UnavailableError, match=r"unavailable \(test\)"):
        db.run("test", cancelled)
    assert db.run("test", lambda c: c.execute("SELECT 1").fetchone()) == (1,)  # the same one
    db.close()


def test_libpq_is_the_systems_else_the_one_psycopg_binary_ships(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctypes

    from kernel.store import postgres_libpq

    real = ctypes.CDLL
    tried: list[str] = []

    def no_system_libpq(name: str, *args: Any, **kwargs: Any) -> Any:
        tried.append(name)
        if "/" not in name:  # the system's, by its soname
            raise OSError(f"{name}: cannot open shared object file")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(postgres_libpq, "_LIB", None)
    monkeypatch.setattr(ctypes, "CDLL", no_system_libpq)
    bundled = Connection.open(pg_dsn, timeout_s=10)
    assert _one(bundled, "SELECT 1") == (1,)
    bundled.close()
    assert "psycopg_binary.libs" in tried[-1]

    monkeypatch.setattr(postgres_libpq, "_LIB", None)
    monkeypatch.setattr(postgres_libpq, "_candidates", lambda: ["libpq-nowhere.so"])
    with pytest.raises(UnavailableError, match="libpq is not installed") as caught:
        Database(pg_dsn, required_version=None).run("connecting", lambda c: None)
    assert caught.value.exit_code == 6


def test_statements_the_server_forgot_it_prepared_run_again_unprepared(conn: Connection) -> None:
    sql = "SELECT %s::bigint * 2"
    for n in range(PREPARE_AFTER + 1):
        assert _one(conn, sql, (n,)) == (2 * n,)
    conn.execute("DEALLOCATE ALL")  # what a pooler or DISCARD ALL does behind the store's back
    assert _one(conn, sql, (21,)) == (42,)
    assert _one(conn, sql, (4,)) == (8,)
