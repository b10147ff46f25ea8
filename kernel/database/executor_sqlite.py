"""``run_read_only`` on SQLite: the connection of :func:`~kernel.database.readonly.connect_sqlite`
plus a progress handler that stops the query at its deadline or when ``cancel`` is set.

``sqlite3`` compiles one statement and refuses SQL with more (``You can only execute one
statement at a time``); the authorizer refuses every write while the statement compiles, so
nothing runs before the refusal. SQLite reports no declared types for a result, so a column's
type is the storage class of its first non-null value (``INTEGER``, ``REAL``, ``TEXT``,
``BLOB``) or ``""`` when the returned rows hold none.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from kernel.database.binding import DatabaseBinding
from kernel.database.canonical import canonical_row, result_hash
from kernel.database.errors import DatabaseUnavailable, QueryFailed
from kernel.database.executor import (
    first_keyword,
    refusal,
    rejected,
    several_statements,
    timeout_error,
)
from kernel.database.readonly import connect_sqlite
from kernel.database.sqlite_guard import SqliteGuard
from kernel.database.types import QueryResult, ResultColumn
from kernel.errors import ThtError

__all__ = ["PROGRESS_STEPS", "query_sqlite", "run_sqlite"]

#: virtual-machine steps between two checks of the deadline and of ``cancel`` (a check costs
#: a clock read; at this spacing a busy query is stopped within a millisecond or so)
PROGRESS_STEPS = 4_000

_STORAGE = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB"}


class _Watch:
    """The progress handler: non-zero stops the running statement (SQLITE_INTERRUPT)."""

    __slots__ = ("cancel", "deadline", "why")

    def __init__(self, timeout_ms: int, cancel: threading.Event | None) -> None:
        self.deadline = time.monotonic() + timeout_ms / 1000
        self.cancel = cancel
        self.why = ""

    def __call__(self) -> int:
        if self.cancel is not None and self.cancel.is_set():
            self.why = "cancelled"
            return 1
        if time.monotonic() >= self.deadline:
            self.why = "timeout"
            return 1
        return 0


def run_sqlite(
    binding: DatabaseBinding,
    sql: str,
    limit: int,
    timeout_ms: int,
    cancel: threading.Event | None,
) -> QueryResult:
    conn, guard = connect_sqlite(binding, busy_ms=min(timeout_ms, 5_000))
    try:
        return query_sqlite(conn, guard, binding, sql, limit, timeout_ms, cancel)
    finally:
        conn.close()


def query_sqlite(
    conn: sqlite3.Connection,
    guard: SqliteGuard,
    binding: DatabaseBinding,
    sql: str,
    limit: int,
    timeout_ms: int,
    cancel: threading.Event | None,
) -> QueryResult:
    """One query on a connection of :func:`connect_sqlite` (kept open by a read-only session,
    :func:`kernel.database.executor.read_only_session`): its own deadline, its own verdict."""
    guard.denied = None  # what an earlier query of the session was refused is not this one's
    watch = _Watch(timeout_ms, cancel)
    conn.set_progress_handler(watch, PROGRESS_STEPS)
    started = time.perf_counter()
    try:
        cursor = conn.execute(sql)
        description = cursor.description
        if description is None:
            raise QueryFailed("the SQL returns no rows: give one query (SELECT …)")
        fetched = cursor.fetchmany(limit + 1)
        cursor.close()
    except (sqlite3.Error, sqlite3.Warning) as err:
        raise _translate(err, sql, guard, watch, timeout_ms, binding) from None
    finally:
        conn.set_progress_handler(None, PROGRESS_STEPS)
    elapsed_ms = (time.perf_counter() - started) * 1000
    returned = fetched[:limit]
    rows = tuple(canonical_row(r) for r in returned)
    columns = tuple(
        ResultColumn(name=d[0], type=_storage_class(returned, i)) for i, d in enumerate(description)
    )
    return QueryResult(
        columns=columns,
        rows=rows,
        row_count=len(rows),
        truncated=len(fetched) > limit,
        elapsed_ms=round(elapsed_ms, 3),
        sha256=result_hash(columns, rows),
    )


def _storage_class(rows: list[Any], index: int) -> str:
    """The storage class of the first non-null value of column ``index`` (driver values)."""
    for row in rows:
        value = row[index]
        if value is not None:
            return _STORAGE.get(type(value), "")
    return ""


def _translate(
    err: sqlite3.Error | sqlite3.Warning,
    sql: str,
    guard: SqliteGuard,
    watch: _Watch,
    timeout_ms: int,
    binding: DatabaseBinding,
) -> ThtError:
    name = getattr(err, "sqlite_errorname", "") or ""
    text = str(err)
    if "one statement at a time" in text:
        return several_statements()
    if name == "SQLITE_AUTH" or guard.denied is not None:
        denied = guard.denied or first_keyword(sql) or "a write"
        keyword = first_keyword(sql)
        attempted = denied if not keyword or denied.startswith(keyword) else f"{keyword}: {denied}"
        return refusal(attempted)
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return refusal(first_keyword(sql) or "a write", text)
    if name == "SQLITE_INTERRUPT" or text == "interrupted":
        return timeout_error(watch.why or "cancelled", timeout_ms)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return DatabaseUnavailable(
            f"workspace database {binding.display}: busy (another process holds a lock): {text}"
        )
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return DatabaseUnavailable(f"workspace database {binding.display}: cannot read it: {text}")
    return rejected(text)
