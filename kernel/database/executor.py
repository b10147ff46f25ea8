"""The read-only query executor: ``run_read_only(binding, sql, limit=…, timeout_ms=…)``.

One statement, one query, at most ``limit`` rows (``limit + 1`` are fetched, so ``truncated``
is known without reading the rest), a timeout, and cancellation through a
:class:`threading.Event`. Writing is impossible at the connection level
(:mod:`kernel.database.readonly`); this module only maps what the database answered:

- a write, or anything that is not one query → :class:`QueryRefused` (exit 5);
- the database rejected the SQL (syntax, unknown table or column) → :class:`QueryFailed`
  (exit 2), with the database's reason and, where it gave one, the position;
- past the timeout, or cancelled → :class:`QueryTimeout` (exit 6);
- the database cannot be reached → :class:`DatabaseUnavailable` (exit 6).

The first keyword of the SQL is read only to *word* a refusal the database already made,
never to decide one.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from typing import Any

from kernel.database.binding import DatabaseBinding
from kernel.database.errors import QueryFailed, QueryRefused, QueryTimeout
from kernel.database.types import QueryResult
from kernel.errors import UsageError

__all__ = [
    "COMMAND_KEYWORDS",
    "QUERY_KEYWORDS",
    "ReadOnlySession",
    "first_keyword",
    "line_and_column",
    "read_only_session",
    "refusal",
    "rejected",
    "run_read_only",
    "several_statements",
    "timeout_error",
]

#: the first keywords of a query (what PostgreSQL's DECLARE CURSOR accepts)
QUERY_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})
#: the first keywords of SQL commands that are not queries (PostgreSQL's command list, and
#: SQLite's own): a syntax error the database raised on one of these is worded as a refusal,
#: anything else as a mistake in the SQL. The database has already refused either way.
COMMAND_KEYWORDS = frozenset(
    """ABORT ALTER ANALYZE ATTACH BEGIN CALL CHECKPOINT CLOSE CLUSTER COMMENT COMMIT COPY CREATE
    DEALLOCATE DECLARE DELETE DETACH DISCARD DO DROP END EXECUTE EXPLAIN FETCH GRANT IMPORT
    INSERT LISTEN LOAD LOCK MERGE MOVE NOTIFY PRAGMA PREPARE REASSIGN REFRESH REINDEX RELEASE
    REPLACE RESET REVOKE ROLLBACK SAVEPOINT SECURITY SET SHOW START TRUNCATE UNLISTEN UPDATE
    UPSERT VACUUM""".split()
)

_COMMENT = re.compile(r"\s+|--[^\n]*(?:\n|$)|/\*.*?\*/", re.S)
_WORD = re.compile(r"[A-Za-z_]+")


def _check(sql: str, limit: int, timeout_ms: int, cancel: threading.Event | None) -> None:
    if limit < 0:
        raise UsageError(f"the row limit must be 0 or more, not {limit}")
    if timeout_ms < 1:
        raise UsageError(f"the timeout must be at least 1 ms, not {timeout_ms}")
    if not sql.strip():
        raise QueryFailed("the SQL is empty: give one query (SELECT …)")
    if cancel is not None and cancel.is_set():
        raise timeout_error("cancelled", timeout_ms)


def run_read_only(
    binding: DatabaseBinding,
    sql: str,
    *,
    limit: int,
    timeout_ms: int,
    cancel: threading.Event | None = None,
) -> QueryResult:
    """Run ``sql`` read-only on the Workspace Database and return its first ``limit`` rows."""
    _check(sql, limit, timeout_ms, cancel)
    if binding.dialect == "sqlite":
        from kernel.database.executor_sqlite import run_sqlite

        return run_sqlite(binding, sql, limit, timeout_ms, cancel)
    from kernel.database.executor_postgres import run_postgres

    return run_postgres(binding, sql, limit, timeout_ms, cancel)


class ReadOnlySession:
    """One read-only connection for many queries (:func:`read_only_session`): each query is
    what :func:`run_read_only` would run — the same connection-level read-only guarantees, its
    own timeout and verdict, at most ``limit`` rows — without a connection per query, which on
    a database of thousands of tables costs more than the query (SQLite reads the whole schema
    on each new connection; PostgreSQL starts a backend)."""

    def __init__(self, binding: DatabaseBinding, timeout_ms: int) -> None:
        self.binding = binding
        self.timeout_ms = timeout_ms
        self._sqlite: Any = None
        self._postgres: Any = None

    def run(self, sql: str, *, limit: int, cancel: threading.Event | None = None) -> QueryResult:
        _check(sql, limit, self.timeout_ms, cancel)
        binding, timeout_ms = self.binding, self.timeout_ms
        if binding.dialect == "sqlite":
            from kernel.database.executor_sqlite import query_sqlite
            from kernel.database.readonly import connect_sqlite

            if self._sqlite is None:
                self._sqlite = connect_sqlite(binding, busy_ms=min(timeout_ms, 5_000))
            conn, guard = self._sqlite
            return query_sqlite(conn, guard, binding, sql, limit, timeout_ms, cancel)
        from kernel.database.executor_postgres import query_postgres
        from kernel.database.readonly import connect_postgres

        if self._postgres is None:
            self._postgres = connect_postgres(binding, timeout_ms=timeout_ms)
        return query_postgres(self._postgres, binding, sql, limit, timeout_ms, cancel)

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite[0].close()
            self._sqlite = None
        if self._postgres is not None:
            from kernel.database.executor_postgres import close_connection

            close_connection(self._postgres)
            self._postgres = None


@contextlib.contextmanager
def read_only_session(binding: DatabaseBinding, *, timeout_ms: int) -> Iterator[ReadOnlySession]:
    """Many read-only queries on one connection, opened at the first and closed at the end
    (``timeout_ms`` for each query)."""
    if timeout_ms < 1:
        raise UsageError(f"the timeout must be at least 1 ms, not {timeout_ms}")
    session = ReadOnlySession(binding, timeout_ms)
    try:
        yield session
    finally:
        session.close()


def first_keyword(sql: str) -> str:
    """The first word of ``sql`` after comments, white space and opening parentheses,
    upper-cased ("" when there is none)."""
    position = 0
    while True:
        skipped = _COMMENT.match(sql, position)
        if skipped and skipped.end() > position:
            position = skipped.end()
        elif sql.startswith("(", position):
            position += 1
        else:
            break
    word = _WORD.match(sql, position)
    return word.group(0).upper() if word else ""


def refusal(attempted: str, said: str = "") -> QueryRefused:
    """The refusal of a write (or of anything that is not one query)."""
    message = f"refused: the workspace database is read-only (attempted: {attempted})"
    if said:
        message += f"; the database said: {said}"
    return QueryRefused(message, details={"attempted": attempted})


def several_statements() -> QueryRefused:
    return QueryRefused(
        "refused: the SQL holds more than one statement; one read-only query runs at a time "
        "(the workspace database is read-only)",
        details={"attempted": "several statements"},
    )


def timeout_error(why: str, timeout_ms: int) -> QueryTimeout:
    if why == "cancelled":
        return QueryTimeout("the query was cancelled; nothing was changed", details={"why": why})
    return QueryTimeout(
        f"the query ran past its timeout of {timeout_ms} ms and was stopped; nothing was "
        "changed (raise it with database.timeout_ms or --timeout-ms)",
        details={"why": "timeout", "timeout_ms": timeout_ms},
    )


def rejected(reason: str, *, line: int = 0, column: int = 0) -> QueryFailed:
    where = f" (line {line}, column {column})" if line else ""
    details: dict[str, object] = {"database_reason": reason}
    if line:
        details.update(line=line, column=column)
    return QueryFailed(f"the database rejected the SQL: {reason}{where}", details=details)


def line_and_column(sql: str, offset: int) -> tuple[int, int]:
    """1-based line and column of the 0-based character ``offset`` of ``sql``."""
    offset = max(0, min(offset, len(sql)))
    before = sql[:offset]
    line = before.count("\n") + 1
    return line, offset - (before.rfind("\n") + 1) + 1
