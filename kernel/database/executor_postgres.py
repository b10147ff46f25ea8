"""``run_read_only`` on PostgreSQL (psycopg 3, imported lazily).

The SQL runs as ``DECLARE tht_result NO SCROLL CURSOR FOR <sql>`` inside the connection's
``BEGIN READ ONLY`` transaction (:mod:`kernel.database.readonly`), sent with the extended query
protocol (a prepared statement), then ``FETCH FORWARD limit+1``; the transaction is always
rolled back. So, besides the read-only transaction, the server itself guarantees that:

- exactly one statement runs (the extended protocol cannot carry two);
- it is a query: ``DECLARE CURSOR`` accepts only SELECT/VALUES/TABLE/WITH, and refuses a
  ``WITH`` holding a data-modifying statement and ``SELECT … INTO``; COPY, SET, BEGIN, DDL and
  DML are syntax errors there;
- only ``limit + 1`` rows are computed and sent.

Before the SQL is sent, a role that can write server files from inside a read-only
transaction (a superuser; a member of ``pg_write_server_files`` or ``pg_execute_server_program``;
a role granted ``lo_export``) is refused: bind a role that can only read.

A watcher thread cancels the running statement (``cancel_safe``, PostgreSQL's cancel request)
at the deadline or when ``cancel`` is set; ``statement_timeout`` is the server-side backstop.
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING, Any

from kernel.database.binding import DatabaseBinding
from kernel.database.canonical import canonical_row, result_hash
from kernel.database.errors import DatabaseUnavailable, QueryRefused
from kernel.database.executor import (
    COMMAND_KEYWORDS,
    first_keyword,
    line_and_column,
    refusal,
    rejected,
    several_statements,
    timeout_error,
)
from kernel.database.readonly import connect_postgres, postgres_reason
from kernel.database.types import QueryResult, ResultColumn
from kernel.errors import ThtError
from kernel.log import get_logger

if TYPE_CHECKING:
    import psycopg

__all__ = ["close_connection", "query_postgres", "run_postgres"]

logger = get_logger(__name__)

_DECLARE = "DECLARE tht_result NO SCROLL CURSOR FOR "
_NEAR = re.compile(r'at or near "([A-Za-z_]+)"')

#: what a read-only transaction does not stop: a superuser, or a role granted the server-file
#: roles or ``lo_export``, can write files on the database server from inside one (large-object
#: export; adminpack). Such a role is refused before the SQL is even sent.
_PRIVILEGES = """
SELECT r.rolname, r.rolsuper,
       pg_catalog.pg_has_role(r.oid, 'pg_write_server_files', 'MEMBER'),
       pg_catalog.pg_has_role(r.oid, 'pg_execute_server_program', 'MEMBER'),
       pg_catalog.has_function_privilege('pg_catalog.lo_export(oid, text)', 'EXECUTE')
FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
"""
#: how often the watcher looks at ``cancel`` (seconds)
_POLL_S = 0.02


class _Watcher(threading.Thread):
    """Cancels the connection's running statement at the deadline or on ``cancel``."""

    def __init__(
        self, conn: psycopg.Connection[Any], timeout_ms: int, cancel: threading.Event | None
    ) -> None:
        super().__init__(name="tht-query-watch", daemon=True)
        self.conn = conn
        self.deadline = time.monotonic() + timeout_ms / 1000
        self.cancel = cancel
        self.done = threading.Event()
        self.why = ""

    def run(self) -> None:
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self._stop_query("timeout")
                return
            wait = left if self.cancel is None else min(left, _POLL_S)
            if self.done.wait(wait):
                return
            if self.cancel is not None and self.cancel.is_set():
                self._stop_query("cancelled")
                return

    def _stop_query(self, why: str) -> None:
        if self.done.is_set():
            return
        self.why = why
        try:
            self.conn.cancel_safe(timeout=5.0)
        except Exception as err:  # the query's own error path reports the outcome
            logger.debug("cancel request failed: %s", type(err).__name__)

    def finish(self) -> None:
        self.done.set()
        self.join()


def run_postgres(
    binding: DatabaseBinding,
    sql: str,
    limit: int,
    timeout_ms: int,
    cancel: threading.Event | None,
) -> QueryResult:
    conn = connect_postgres(binding, timeout_ms=timeout_ms)
    try:
        return query_postgres(conn, binding, sql, limit, timeout_ms, cancel)
    finally:
        close_connection(conn)


def query_postgres(
    conn: psycopg.Connection[Any],
    binding: DatabaseBinding,
    sql: str,
    limit: int,
    timeout_ms: int,
    cancel: threading.Event | None,
) -> QueryResult:
    """One query on a connection of :func:`connect_postgres` (kept open by a read-only session,
    :func:`kernel.database.executor.read_only_session`), in its own ``BEGIN READ ONLY``
    transaction, always rolled back: the next query starts from nothing this one left."""
    import psycopg

    watcher = _Watcher(conn, timeout_ms, cancel)
    started = time.perf_counter()
    watcher.start()
    try:
        with conn.cursor() as cursor:
            _refuse_powerful_roles(cursor)
            cursor.execute(_DECLARE + sql, prepare=True)
            cursor.execute(f"FETCH FORWARD {int(limit) + 1} FROM tht_result")
            description = cursor.description or []
            fetched = cursor.fetchall()
    except psycopg.Error as err:
        watcher.finish()
        raise _translate(err, sql, watcher.why, timeout_ms, binding) from None
    finally:
        watcher.finish()
        _end_transaction(conn)
    elapsed_ms = (time.perf_counter() - started) * 1000
    rows = tuple(canonical_row(r) for r in fetched[:limit])
    columns = tuple(ResultColumn(name=c.name, type=c.type_display or "") for c in description)
    return QueryResult(
        columns=columns,
        rows=rows,
        row_count=len(rows),
        truncated=len(fetched) > limit,
        elapsed_ms=round(elapsed_ms, 3),
        sha256=result_hash(columns, rows),
    )


def _refuse_powerful_roles(cursor: psycopg.Cursor[Any]) -> None:
    row = cursor.execute(_PRIVILEGES).fetchone()
    if row is None or not any(row[1:]):
        return
    raise QueryRefused(
        f"refused: the workspace database role {row[0]!r} can write files on the database "
        "server (a superuser, or granted pg_write_server_files, pg_execute_server_program or "
        "lo_export), which a read-only transaction does not prevent; bind a role that can only "
        "read (docs/database.md)",
        details={"attempted": "a query as a role that can write server files"},
    )


def _end_transaction(conn: psycopg.Connection[Any]) -> None:
    import psycopg

    try:
        conn.rollback()
    except psycopg.Error as err:
        logger.debug("rollback after the query failed: %s", type(err).__name__)


def close_connection(conn: psycopg.Connection[Any]) -> None:
    """Roll back what is open and close (the end of a query, or of a read-only session)."""
    try:
        _end_transaction(conn)
    finally:
        conn.close()


def _translate(
    err: psycopg.Error, sql: str, why: str, timeout_ms: int, binding: DatabaseBinding
) -> ThtError:
    import psycopg

    state = err.sqlstate or ""
    reason = postgres_reason(binding, err)
    keyword = first_keyword(sql)
    if isinstance(err, psycopg.errors.QueryCanceled) or state == "57014":
        return timeout_error(why or "timeout", timeout_ms)
    if state == "42601" and "multiple commands" in reason:
        return several_statements()
    if state.startswith("25") or state == "42501":  # read-only transaction, no privilege
        return refusal(keyword or "a write", reason)
    if state == "0A000" and ("data-modifying" in reason or "INTO" in reason):
        return refusal(f"{keyword} with a data-modifying statement", reason)
    near = _NEAR.search(reason)
    token = near.group(1).upper() if near else ""
    if state == "42601" and (keyword in COMMAND_KEYWORDS or token in COMMAND_KEYWORDS):
        attempted = keyword if keyword in COMMAND_KEYWORDS else f"{token} inside {keyword}"
        return refusal(attempted, "only a query (SELECT, WITH, VALUES, TABLE) can run")
    if state == "42601" and "SELECT ... INTO" in reason:
        return refusal("SELECT … INTO (creates a table)", reason)
    if not state or state.startswith(("08", "28", "3D", "53", "57P", "58", "XX")):
        return DatabaseUnavailable(f"workspace database {binding.display}: {reason}")
    line = column = 0
    position = getattr(err.diag, "statement_position", None)
    if position:
        line, column = line_and_column(sql, int(position) - 1 - len(_DECLARE))
    hint = getattr(err.diag, "message_hint", None)
    if hint:
        reason += f"; hint: {binding.scrub(hint)}"
    return rejected(reason, line=line, column=column)
