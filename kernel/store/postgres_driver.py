"""The PostgreSQL store's driver, its upper half: :class:`Connection`, one libpq connection in
autocommit mode (the binding itself is :mod:`kernel.store.postgres_libpq`).

- **A statement** at a time, with parameters (:mod:`kernel.store.postgres_codec`), results in
  binary; one that this connection has run before is prepared on the server (parsed and
  planned once: the append runs the same statement every time). Waiting for the answer is a
  ``select`` on the socket, so Ctrl-C works; an interrupted statement closes the connection
  (its outcome is unknown: the store's caller treats that as a lost connection).
- **A statement whose answer nobody waits for** (:meth:`Connection.post`: the NOTIFY after an
  append's commit) is sent and its answer read by the next statement on the connection, by
  when the server has long answered: its cost overlaps the caller's own work. Its error is
  only logged (a lost connection is still the next statement's error). Closing right after is
  fine: the server runs what it received before it reads the goodbye.
- **Transactions**: :meth:`Connection.transaction` (BEGIN … COMMIT, ROLLBACK on an error).
- **Notifications** (LISTEN) are read by :meth:`Connection.notifies`.

A connection is used by one thread at a time (the store's lock); a forked child must not use
its parent's (see :mod:`kernel.store.postgres_conn`).
"""

from __future__ import annotations

import array
import ctypes
import os
import select
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from ctypes import c_char_p, c_uint, c_void_p
from typing import Any

from kernel.log import get_logger
from kernel.store.postgres_codec import Param, bind, encode
from kernel.store.postgres_libpq import (
    NOTICE_PROCESSOR,
    PgError,
    Rows,
    drain_notifies,
    first_line,
    libpq,
    poll_connect,
    read_result,
)

__all__ = ["PREPARE_AFTER", "Connection", "Params"]

logger = get_logger(__name__)

#: runs of one statement text on a connection before it is prepared there
PREPARE_AFTER = 2
_IN_ERROR = 3  # PQtransactionStatus: in a failed transaction
_NO_SUCH_STATEMENT = "26000"  # invalid_sql_statement_name: a prepared statement is gone
Params = Mapping[str, object] | Sequence[object] | None
#: the ctypes array type of a statement's values, by count
_VALUES: dict[int, Any] = {}
#: each statement's parameter formats (its types decide them), as libpq reads them
_FORMATS: dict[tuple[str, tuple[int, ...]], array.array[int]] = {}


class _Statement:
    """A statement ready to send: its text, prepared name (if any), types and values."""

    __slots__ = ("encoded", "formats", "name", "oids", "text")

    def __init__(
        self,
        text: str,
        name: bytes | None,
        oids: tuple[int, ...],
        encoded: list[Param],
        formats: array.array[int],
    ) -> None:
        self.text, self.name, self.oids, self.encoded = text, name, oids, encoded
        self.formats = formats


class Connection:
    """One libpq connection in autocommit mode (every statement its own transaction, unless in
    :meth:`transaction`)."""

    def __init__(self, pgconn: int) -> None:
        self._pg: int | None = pgconn
        self._pid = os.getpid()
        self._broken = False
        self._runs: dict[tuple[str, tuple[int, ...]], int] = {}
        self._prepared: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self._posted = False  # a posted statement's answer is still to be read

    @classmethod
    def open(cls, dsn: str, *, timeout_s: float, application_name: str = "tht") -> Connection:
        """Connect (``PgError``, lost, when it cannot)."""
        lib = libpq()
        keywords = [b"dbname", b"application_name", None]
        values = [dsn.encode(), application_name.encode(), None]
        pg = lib.PQconnectStartParams((c_char_p * 3)(*keywords), (c_char_p * 3)(*values), 1)
        if not pg:
            raise MemoryError("libpq could not allocate a connection")
        try:
            poll_connect(lib, pg, time.monotonic() + timeout_s)
        except BaseException:
            lib.PQfinish(pg)
            raise
        lib.PQsetNoticeProcessor(pg, ctypes.cast(NOTICE_PROCESSOR, c_void_p), None)
        return cls(pg)

    # ------------------------------------------------------------------ state

    @property
    def closed(self) -> bool:
        return self._pg is None

    @property
    def broken(self) -> bool:
        return self._broken or (self._pg is not None and libpq().PQstatus(self._pg) != 0)

    @property
    def backend_pid(self) -> int:
        return int(libpq().PQbackendPID(self._live()))

    def _live(self) -> int:
        if self._pg is None:
            raise PgError("the connection is closed", lost=True)
        return self._pg

    def close(self) -> None:
        pg, self._pg = self._pg, None
        if pg is not None and self._pid == os.getpid():
            libpq().PQfinish(pg)

    def __del__(self) -> None:  # a connection dropped unclosed: end it (never a parent's)
        with suppress(Exception):  # at interpreter exit libpq may be gone already
            self.close()

    def _lost(self, message: str = "") -> PgError:
        self._broken = True
        pg = self._pg
        text = message or (first_line(libpq().PQerrorMessage(pg)) if pg else "")
        return PgError(text or "the connection to the server was lost", lost=True)

    # ------------------------------------------------------------------ statements

    def execute(self, sql: str, params: Params = None) -> Rows:
        """Run one statement; its rows (binary results, decoded)."""
        lib = libpq()
        pg = self._live()
        statement = self._statement(lib, pg, sql, params)
        self._dispatch(lib, pg, statement)
        try:
            return self._result(lib, pg)
        except PgError as err:
            if err.sqlstate != _NO_SUCH_STATEMENT or statement.name is None:
                raise
        # the server forgot what it had prepared (a pooler, DISCARD ALL): refused before it
        # ran, so it runs again, unprepared
        self._prepared.clear()
        self._runs.clear()
        self._dispatch(lib, pg, self._statement(lib, pg, sql, params))
        return self._result(lib, pg)

    def post(self, sql: str, params: Params = None) -> None:
        """Send one statement without waiting for its answer (see the module doc)."""
        lib = libpq()
        pg = self._live()
        self._dispatch(lib, pg, self._statement(lib, pg, sql, params))
        self._posted = True

    def _settle(self, lib: Any, pg: int) -> None:
        """Read the answer of the statement posted last (a failure of its own is logged)."""
        self._posted = False
        try:
            self._result(lib, pg)
        except PgError as err:
            if err.lost:
                raise
            if err.sqlstate == _NO_SUCH_STATEMENT:  # prepared statements forgotten: again
                self._prepared.clear()
                self._runs.clear()
            logger.debug("PostgreSQL store: a posted statement failed: %s", err.message)

    def _statement(self, lib: Any, pg: int, sql: str, params: Params) -> _Statement:
        """What to send: the statement's name once prepared (prepared now when it is due)."""
        if self._posted:
            self._settle(lib, pg)
        text, values = bind(sql, params)
        try:
            encoded = [encode(value) for value in values]
        except ValueError as err:
            raise PgError(str(err), sqlstate="22021") from None
        oids = tuple([oid for oid, _, _ in encoded])
        key = (text, oids)
        name = self._prepared.get(key)
        if name is None:
            runs = self._runs[key] = self._runs.get(key, 0) + 1
            if runs >= PREPARE_AFTER:
                name = self._prepare(lib, pg, key)
        formats = _FORMATS.get(key)
        if formats is None:
            formats = _FORMATS[key] = array.array("i", [fmt for _, fmt, _ in encoded])
        return _Statement(text, name, oids, encoded, formats)

    def _dispatch(self, lib: Any, pg: int, statement: _Statement) -> None:
        n = len(statement.encoded)
        kind = _VALUES.get(n)
        if kind is None:
            kind = _VALUES[n] = c_char_p * n
        values = [value for _, _, value in statement.encoded]
        data = kind(*values)
        sizes = array.array("i", [0 if value is None else len(value) for value in values])
        # the arrays' addresses: both stay referenced (alive) until the call returns
        lengths, formats = sizes.buffer_info()[0], statement.formats.buffer_info()[0]
        if statement.name is not None:
            sent = lib.PQsendQueryPrepared(pg, statement.name, n, data, lengths, formats, 1)
        else:
            types = (c_uint * n)(*statement.oids)
            text = statement.text.encode()
            sent = lib.PQsendQueryParams(pg, text, n, types, data, lengths, formats, 1)
        if not sent:
            raise self._lost() if self.broken else PgError(self._message(lib, pg))

    def _prepare(self, lib: Any, pg: int, key: tuple[str, tuple[int, ...]]) -> bytes:
        name = f"tht_{len(self._prepared) + 1}".encode()
        oids = (c_uint * len(key[1]))(*key[1])
        if not lib.PQsendPrepare(pg, name, key[0].encode(), len(key[1]), oids):
            raise self._lost() if self.broken else PgError(self._message(lib, pg))
        self._result(lib, pg)
        self._prepared[key] = name
        return name

    @staticmethod
    def _message(lib: Any, pg: int) -> str:
        return first_line(lib.PQerrorMessage(pg)) or "the statement could not be sent"

    def _result(self, lib: Any, pg: int) -> Rows:
        try:
            outcome = self._collect(lib, pg)
        except BaseException:
            self._broken = True  # interrupted mid-statement: its outcome is unknown
            self.close()
            raise
        return self._outcome(outcome)

    def _collect(self, lib: Any, pg: int) -> Rows | PgError | None:
        """Every result of one statement: its rows, or its error."""
        outcome: Rows | PgError | None = None
        while True:
            self._wait(lib, pg)
            res = lib.PQgetResult(pg)
            if not res:
                break
            try:
                if outcome is None or isinstance(outcome, Rows):
                    outcome = read_result(lib, res)
            except Exception as err:  # an unreadable value: keep draining the results
                outcome = PgError(f"a value could not be read: {type(err).__name__}: {err}")
            finally:
                lib.PQclear(res)
        return outcome

    def _outcome(self, outcome: Rows | PgError | None) -> Rows:
        if isinstance(outcome, PgError):
            if self.broken:
                outcome.lost = True
                self._broken = True
            raise outcome
        if outcome is None:
            raise self._lost()
        return outcome

    def _wait(self, lib: Any, pg: int) -> None:
        """Until the next result can be read without blocking: input is read only when libpq
        has none buffered (no read of an empty socket, one system call, per result)."""
        while lib.PQisBusy(pg):
            sock = lib.PQsocket(pg)
            if sock < 0:
                raise self._lost()
            select.select([sock], [], [])
            if not lib.PQconsumeInput(pg):
                raise self._lost()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN … COMMIT; ROLLBACK when the block raises (or a statement in it failed)."""
        self.execute("BEGIN")
        try:
            yield
        except BaseException:
            if not self.closed and not self.broken:
                with suppress(PgError):  # the server ends it with the session anyway
                    self.execute("ROLLBACK")
            raise
        if libpq().PQtransactionStatus(self._live()) == _IN_ERROR:
            self.execute("ROLLBACK")
            raise PgError("a statement of the transaction failed: rolled back")
        self.execute("COMMIT")

    # ------------------------------------------------------------------ notifications

    def notifies(self, timeout: float) -> list[tuple[str, str]]:
        """The notifications (channel, payload) that arrive within ``timeout`` seconds:
        returns as soon as there is one, with any others already received; [] when none."""
        lib = libpq()
        pg = self._live()
        if self._posted:
            self._settle(lib, pg)
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if not lib.PQconsumeInput(pg):
                raise self._lost()
            found = drain_notifies(lib, pg)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            select.select([lib.PQsocket(pg)], [], [], left)
