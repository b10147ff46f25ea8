"""The PostgreSQL store's connection: one libpq connection per store
(:mod:`kernel.store.postgres_driver`), its lock, one reconnection on a broken connection, and
the mapping of driver errors to tht's (ARCHITECTURE §5).

- libpq is loaded by the first connection (``tht session status`` on the filesystem store
  pays nothing for it).
- The connection is in autocommit mode: a single statement is its own short transaction, and
  what must be several statements runs in ``conn.transaction()``. ``synchronous_commit`` is
  raised to ``on`` for the session when the server's default is ``off`` or ``local``: an
  acknowledged append is durable. That and the schema version are read in one round trip
  when the connection opens.
- Every failure of the server rather than of the statement (the server is down, restarted,
  unreachable, timed out, shutting down: :attr:`PgError.unavailable`) is an
  :class:`~kernel.errors.UnavailableError` (exit 6) whose message names the operation and the
  driver's reason, scrubbed: never the DSN, never the password. The driver's exception is not
  even kept as the context of ours (it may quote the URL).
- A forked child never uses (nor closes: that would end the parent's session) the connection it
  inherited; it opens its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import unquote

from kernel.errors import InternalError, UnavailableError, UsageError
from kernel.log import get_logger
from kernel.store.postgres_driver import Connection
from kernel.store.postgres_libpq import UNDEFINED_TABLE, PgError, conninfo

__all__ = ["ConnectionLost", "Database", "installed_version"]

logger = get_logger(__name__)
T = TypeVar("T")

#: seconds libpq waits for the server when the URL does not say (``connect_timeout``)
CONNECT_TIMEOUT_S = 10
#: connections a forked child inherited: kept referenced, never closed (see the module doc)
_INHERITED: list[object] = []


class ConnectionLost(UnavailableError):
    """The connection broke while an operation was under way: its outcome is unknown (an
    append checks, on a new connection, whether its lines landed)."""


class Database:
    """One lazily opened connection to the store's database, shared by a store's ledgers and
    serialized by a lock (a transaction never interleaves with another thread's statements)."""

    def __init__(self, dsn: str, *, required_version: int | None) -> None:
        self._dsn = dsn  # never shown: not in messages, logs or repr
        self._required = required_version
        self._conn: Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._secrets: list[str] | None = None  # worked out on the first error

    def __repr__(self) -> str:
        return "Database(<dsn hidden>)"

    @property
    def dsn(self) -> str:
        """The connection URL (for a second connection, e.g. a listener); never print it."""
        return self._dsn

    def run(self, what: str, work: Callable[[Connection], T], *, retry: bool = True) -> T:
        """``work(conn)`` under the lock. A broken connection is reopened once and ``work``
        run again when ``retry`` (reads, idempotent writes); otherwise :class:`ConnectionLost`."""
        with self._lock:
            attempts = 2 if retry else 1
            failure: UnavailableError | InternalError | UsageError | None = None
            for attempt in range(attempts):
                conn = self._connection(what)
                try:
                    return work(conn)
                except PgError as err:
                    reason = self.reason(err)
                    lost = conn.closed or conn.broken or err.lost
                    if err.sqlstate == UNDEFINED_TABLE:
                        failure = _uninitialized(0)
                    elif lost or err.unavailable:
                        if lost:
                            self._forget()
                            if attempt + 1 < attempts:
                                logger.debug(
                                    "PostgreSQL store: %s: reconnecting (%s)", what, reason
                                )
                                continue
                        kind = ConnectionLost if lost else UnavailableError
                        failure = kind(f"the PostgreSQL store is unavailable ({what}): {reason}")
                    else:
                        failure = InternalError(f"PostgreSQL store: {what} failed: {reason}")
                break
            assert failure is not None
        raise failure

    def _connection(self, what: str) -> Connection:
        conn = self._conn
        if conn is not None and self._pid != os.getpid():
            _INHERITED.append(conn)  # the parent's session: neither used nor closed here
            conn = self._conn = None
            self._pid = os.getpid()
        if conn is not None and not conn.closed:
            return conn
        reason = ""
        options: dict[str, str] | None = None
        try:
            options = conninfo(self._dsn)
        except PgError as err:  # no libpq
            reason = err.message
        if reason:
            raise UnavailableError(f"the PostgreSQL store is unreachable ({what}): {reason}")
        if options is None:
            raise UsageError("the PostgreSQL store URL is malformed (its value is not shown)")
        new: Connection | None = None
        try:
            new = Connection.open(self._dsn, timeout_s=_timeout(options), application_name="tht")
        except PgError as err:
            reason = self.reason(err)
        if new is None:
            logger.debug("PostgreSQL store: cannot connect (%s): %s", what, reason)
            raise UnavailableError(f"the PostgreSQL store is unreachable ({what}): {reason}")
        version = 0
        try:
            version = _setup(new)
        except PgError as err:
            reason = self.reason(err)
        if reason:
            _close_quietly(new)
            raise UnavailableError(f"the PostgreSQL store is unavailable ({what}): {reason}")
        if self._required is not None and version != self._required:
            _close_quietly(new)
            raise _uninitialized(version) if version < self._required else _newer(version)
        self._conn = new
        return new

    def reason(self, err: BaseException) -> str:
        """The driver's reason for ``err``, on one line, without any secret."""
        text = (getattr(err, "message", None) or str(err) or "").strip()
        text = text.splitlines()[0].strip() if text else ""
        if "failed: " in text:  # libpq: connection to server at "h", port p failed: <why>
            text = text.rsplit("failed: ", 1)[1].strip()
        if self._secrets is None:
            self._secrets = _secrets_of(self._dsn)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text or type(err).__name__

    def _forget(self) -> None:
        if self._conn is not None:
            _close_quietly(self._conn)
        self._conn = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                _close_quietly(self._conn)
            self._conn = None


def installed_version(conn: Connection) -> int:
    """The highest migration recorded in the database (0: none, or no table yet)."""
    try:
        row = conn.execute("SELECT coalesce(max(version), 0) FROM tht_schema_migrations").fetchone()
    except PgError as err:
        if err.sqlstate != UNDEFINED_TABLE:
            raise
        return 0
    return int(row[0]) if row is not None else 0


def _timeout(options: dict[str, str]) -> float:
    """Seconds to wait for the server: the URL's ``connect_timeout`` (libpq's reading: at
    least 2 when set), else :data:`CONNECT_TIMEOUT_S`."""
    given = options.get("connect_timeout", "").strip()
    try:
        seconds = int(given) if given else 0
    except ValueError:
        seconds = 0
    return float(max(2, seconds)) if seconds > 0 else float(CONNECT_TIMEOUT_S)


def _setup(conn: Connection) -> int:
    """Durable commits for this session, and the schema version: one round trip."""
    durable = (
        "SELECT set_config('synchronous_commit', 'on', false) "
        "WHERE current_setting('synchronous_commit') IN ('off', 'local')"
    )
    try:
        row = conn.execute(
            f"SELECT (SELECT coalesce(max(version), 0) FROM tht_schema_migrations), ({durable})"
        ).fetchone()
    except PgError as err:
        if err.sqlstate != UNDEFINED_TABLE:
            raise
        conn.execute(durable)
        return 0
    return int(row[0]) if row is not None else 0


def _uninitialized(version: int) -> UsageError:
    return UsageError(
        f"the PostgreSQL store's tables are at schema version {version}, this tht needs "
        f"{_latest()}: run `tht store init`"
    )


def _newer(version: int) -> UsageError:
    return UsageError(
        f"the PostgreSQL store's tables are at schema version {version}, newer than this tht "
        f"knows ({_latest()}): upgrade tht"
    )


def _latest() -> int:
    from kernel.store.postgres_schema import LATEST

    return LATEST


def _secrets_of(dsn: str) -> list[str]:
    """What must never appear in a message: the URL itself and its password (as written and
    URL-decoded), longest first."""
    found = {dsn}
    try:
        password = (conninfo(dsn) or {}).get("password")
    except Exception:  # no libpq: hide what looks like a password
        password = None
    if "://" in dsn and "@" in dsn:
        userinfo = dsn.split("://", 1)[1].rsplit("@", 1)[0]
        if ":" in userinfo:
            raw = userinfo.split(":", 1)[1]
            found.update({raw, unquote(raw)})
    if isinstance(password, str):
        found.add(password)
    return sorted((s for s in found if s), key=len, reverse=True)


def _close_quietly(conn: Connection) -> None:
    try:
        conn.close()
    except Exception as err:  # closing a broken connection: nothing left to save
        logger.debug("PostgreSQL store: closing a connection: %s", type(err).__name__)
