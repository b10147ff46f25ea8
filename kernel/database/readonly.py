"""Read-only connections to the Workspace Database (ARCHITECTURE §3.8): the one place tht
opens it, for introspection, the structure version and queries alike.

Read-only is a property of the connection, never of keyword lists:

SQLite (the standard library's ``sqlite3``)
    the file is opened with the URI ``mode=ro`` (a missing file is an error, never created);
    ``PRAGMA query_only=1`` and ``trusted_schema=OFF``; no database may be attached
    (``SQLITE_LIMIT_ATTACHED`` = 0); the allowlist authorizer of :mod:`.sqlite_guard`; no
    implicit transactions (``isolation_level=None``: the driver never sends BEGIN).

PostgreSQL (psycopg 3, imported here and only here)
    ``default_transaction_read_only=on`` for the session, every statement inside a
    ``BEGIN READ ONLY`` transaction that is always rolled back, ``statement_timeout`` and
    ``idle_in_transaction_session_timeout``, ``search_path`` set to the binding's schema.

Errors while connecting are :class:`DatabaseUnavailable` (exit 6) with the database's reason,
scrubbed of the URL and password by the binding.
"""

from __future__ import annotations

import math
import sqlite3
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kernel.database.binding import DatabaseBinding
from kernel.database.errors import DatabaseUnavailable
from kernel.database.sqlite_guard import SqliteGuard
from kernel.errors import NotFoundError
from kernel.log import get_logger

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "check_reachable",
    "connect_postgres",
    "connect_sqlite",
    "postgres_reason",
    "require_schema",
]

logger = get_logger(__name__)

#: seconds libpq waits for a TCP connection (its minimum is 2)
CONNECT_TIMEOUT_S = 10


def connect_sqlite(
    binding: DatabaseBinding, *, busy_ms: int = 5_000
) -> tuple[sqlite3.Connection, SqliteGuard]:
    """A read-only connection to the binding's SQLite file, and its authorizer."""
    path = binding.sqlite_path
    if path is None:
        raise TypeError("not a SQLite binding")
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise DatabaseUnavailable(
            f"workspace database {binding.display}: the file {what} (tht never creates it; "
            "check database.url in workspace.yaml)"
        )
    uri = "file:" + quote(path.as_posix(), safe="/") + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_ms / 1000)
    except sqlite3.Error as err:
        raise DatabaseUnavailable(
            f"workspace database {binding.display}: cannot open: {err}"
        ) from None
    guard = SqliteGuard()
    try:
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA trusted_schema=OFF")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        if hasattr(conn, "enable_load_extension"):  # only where Python was built with it
            conn.enable_load_extension(False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # is it a database?
        conn.set_authorizer(guard)
    except sqlite3.Error as err:
        conn.close()
        raise DatabaseUnavailable(
            f"workspace database {binding.display}: cannot read it as a SQLite database: {err}"
        ) from None
    return conn, guard


def _options(binding: DatabaseBinding, timeout_ms: int) -> str:
    """libpq ``options``: session settings the server applies before any statement."""
    schema = '"' + (binding.schema or "public").replace('"', '""') + '"'
    settings = {
        "default_transaction_read_only": "on",
        "statement_timeout": str(timeout_ms),
        "idle_in_transaction_session_timeout": str(timeout_ms + 10_000),
        "search_path": schema,
    }
    escaped = (f"{k}={v}".replace("\\", "\\\\").replace(" ", "\\ ") for k, v in settings.items())
    return " ".join(f"-c {item}" for item in escaped)


def connect_postgres(binding: DatabaseBinding, *, timeout_ms: int) -> psycopg.Connection[Any]:
    """A read-only psycopg connection; its first statement opens ``BEGIN READ ONLY``."""
    import psycopg

    connect_s = max(2, min(CONNECT_TIMEOUT_S, math.ceil(timeout_ms / 1000)))
    reason = ""
    try:
        conn = psycopg.connect(
            binding._conninfo(),
            autocommit=False,
            connect_timeout=connect_s,
            application_name="tht",
            options=_options(binding, timeout_ms),
        )
    except psycopg.Error as err:
        reason = postgres_reason(binding, err)
    if reason:
        # raised outside the except block: the driver's error (which may quote the URL) is
        # not even kept as the context of ours
        logger.debug("connection to %s failed: %s", binding.display, reason)
        raise DatabaseUnavailable(
            f"cannot reach the workspace database {binding.display}: {reason}"
        )
    conn.read_only = True
    return conn


def postgres_reason(binding: DatabaseBinding, err: BaseException) -> str:
    """The database's reason for ``err``, on one line, without any secret."""
    diag = getattr(err, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = primary or str(err) or type(err).__name__
    return binding.scrub(text)


def require_schema(binding: DatabaseBinding, conn: psycopg.Connection[Any]) -> None:
    """NotFoundError (exit 3) when the bound PostgreSQL schema does not exist: an absent
    schema must not pass for an empty one."""
    row = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s", (binding.schema,)
    ).fetchone()
    if row is None:
        raise NotFoundError(
            f"workspace database {binding.display}: no schema named {binding.schema!r} "
            "(check database.schema in workspace.yaml)"
        )


def check_reachable(binding: DatabaseBinding) -> None:
    """Open the Workspace Database read-only and run one trivial read (on PostgreSQL: that the
    bound schema exists); DatabaseUnavailable (exit 6) with the reason when that fails,
    NotFoundError (exit 3) for a missing schema."""
    if binding.dialect == "sqlite":
        conn, _ = connect_sqlite(binding)
        conn.close()
        return
    import psycopg

    pg = connect_postgres(binding, timeout_ms=binding.timeout_ms)
    reason = ""
    try:
        require_schema(binding, pg)
    except psycopg.Error as err:
        reason = postgres_reason(binding, err)
    finally:
        pg.close()
    if reason:
        raise DatabaseUnavailable(f"workspace database {binding.display}: {reason}")
