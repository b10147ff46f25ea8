"""The PostgreSQL store's driver, its lower half: a small binding of libpq (ctypes) for the
few calls the store makes — loading the library, connecting, reading a result, notifications,
parsing a URL — and :class:`PgError`. :mod:`kernel.store.postgres_driver` is the upper half
(statements, transactions). Why not psycopg: importing it costs about 60 ms (asyncio, logging,
ssl, every adapter), which alone is more than ``tht session status`` on this store may add to
the filesystem store's whole run (ARCHITECTURE §3.5: ≤ 1.5×, about 75 ms); loading libpq costs
3-4 ms.

- **libpq**: the system's (``libpq.so.5``: Debian's ``libpq5``, which the ``postgresql``
  package brings), else the copy ``psycopg[binary]`` ships in ``psycopg_binary.libs``.
- **Connecting** (:func:`poll_connect`) is non-blocking with a deadline, so Ctrl-C and an
  unreachable host both end it; the server's notices (``CREATE TABLE IF NOT EXISTS …,
  skipping``) are dropped, never printed (:data:`NOTICE_PROCESSOR`).
- **Results** arrive in binary and are decoded by type (:mod:`kernel.store.postgres_codec`).
- **Errors** are :class:`PgError`: the SQLSTATE (None when the server never answered), the
  server's primary message or libpq's first line, and ``lost`` when the connection is gone.
"""

from __future__ import annotations

import ctypes
import os
import select
import time
from collections.abc import Iterator
from ctypes import POINTER, c_char_p, c_int, c_uint, c_void_p
from typing import Any

from kernel.store.postgres_codec import decoder

__all__ = [
    "FOREIGN_KEY_VIOLATION",
    "NOTICE_PROCESSOR",
    "UNDEFINED_TABLE",
    "UNIQUE_VIOLATION",
    "PgError",
    "Rows",
    "conninfo",
    "drain_notifies",
    "first_line",
    "libpq",
    "poll_connect",
    "read_result",
]

UNIQUE_VIOLATION = "23505"
FOREIGN_KEY_VIOLATION = "23503"
UNDEFINED_TABLE = "42P01"
#: SQLSTATE classes of a server that is not serving (psycopg's OperationalError)
_UNAVAILABLE_CLASSES = ("08", "53", "57", "58")

_CONNECTION_BAD = 1
_POLLING_FAILED, _POLLING_READING, _POLLING_WRITING, _POLLING_OK = 0, 1, 2, 3
_COMMAND_OK, _TUPLES_OK, _EMPTY_QUERY = 1, 2, 0
_DIAG_SQLSTATE, _DIAG_PRIMARY = ord("C"), ord("M")


class PgError(Exception):
    """A statement or a connection failed."""

    def __init__(self, message: str, *, sqlstate: str | None = None, lost: bool = False):
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.lost = lost

    @property
    def unavailable(self) -> bool:
        """The server is gone or not serving (not a problem of the statement)."""
        return self.lost or (self.sqlstate or "")[:2] in _UNAVAILABLE_CLASSES


class _Notify(ctypes.Structure):
    _fields_ = [("relname", c_char_p), ("be_pid", c_int), ("extra", c_char_p), ("next", c_void_p)]


class _Option(ctypes.Structure):
    _fields_ = [
        ("keyword", c_char_p),
        ("envvar", c_char_p),
        ("compiled", c_char_p),
        ("val", c_char_p),
        ("label", c_char_p),
        ("dispchar", c_char_p),
        ("dispsize", c_int),
    ]


_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "PQconnectStartParams": (c_void_p, [POINTER(c_char_p), POINTER(c_char_p), c_int]),
    "PQconnectPoll": (c_int, [c_void_p]),
    "PQstatus": (c_int, [c_void_p]),
    "PQerrorMessage": (c_char_p, [c_void_p]),
    "PQfinish": (None, [c_void_p]),
    "PQsocket": (c_int, [c_void_p]),
    "PQbackendPID": (c_int, [c_void_p]),
    "PQtransactionStatus": (c_int, [c_void_p]),
    "PQsetNoticeProcessor": (c_void_p, [c_void_p, c_void_p, c_void_p]),
    "PQsendQueryParams": (
        c_int,
        [c_void_p, c_char_p, c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_int],
    ),
    "PQsendPrepare": (c_int, [c_void_p, c_char_p, c_char_p, c_int, c_void_p]),
    "PQsendQueryPrepared": (
        c_int,
        [c_void_p, c_char_p, c_int, c_void_p, c_void_p, c_void_p, c_int],
    ),
    "PQconsumeInput": (c_int, [c_void_p]),
    "PQisBusy": (c_int, [c_void_p]),
    "PQgetResult": (c_void_p, [c_void_p]),
    "PQresultStatus": (c_int, [c_void_p]),
    "PQresultErrorField": (c_char_p, [c_void_p, c_int]),
    "PQresultErrorMessage": (c_char_p, [c_void_p]),
    "PQntuples": (c_int, [c_void_p]),
    "PQnfields": (c_int, [c_void_p]),
    "PQftype": (c_uint, [c_void_p, c_int]),
    "PQgetvalue": (c_void_p, [c_void_p, c_int, c_int]),
    "PQgetlength": (c_int, [c_void_p, c_int, c_int]),
    "PQgetisnull": (c_int, [c_void_p, c_int, c_int]),
    "PQclear": (None, [c_void_p]),
    "PQnotifies": (POINTER(_Notify), [c_void_p]),
    "PQfreemem": (None, [c_void_p]),
    "PQconninfoParse": (POINTER(_Option), [c_char_p, POINTER(c_void_p)]),
    "PQconninfoFree": (None, [POINTER(_Option)]),
}

#: libpq's notice processor: the server's notices and warnings are dropped
NOTICE_PROCESSOR = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)(lambda arg, message: None)
_LIB: Any = None


def _candidates() -> list[str]:
    names = ["libpq.so.5", "libpq.5.dylib", "libpq.dll"]
    try:
        import importlib.util

        spec = importlib.util.find_spec("psycopg_binary")  # found, not imported
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        libs = os.path.join(os.path.dirname(folder), "psycopg_binary.libs")
        if os.path.isdir(libs):
            names += sorted(
                os.path.join(libs, n) for n in os.listdir(libs) if n.startswith("libpq")
            )
    return names


def libpq() -> Any:
    """libpq, loaded once; :class:`PgError` (lost) when there is none."""
    global _LIB
    if _LIB is not None:
        return _LIB
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        for function, (restype, argtypes) in _SIGNATURES.items():
            entry = getattr(lib, function)
            entry.restype, entry.argtypes = restype, argtypes
        _LIB = lib
        return lib
    raise PgError(
        "libpq is not installed (Debian: apt-get install libpq5; or psycopg[binary])",
        lost=True,
    )


def first_line(raw: bytes | None) -> str:
    text = (raw or b"").decode(errors="replace").strip()
    return text.splitlines()[0].strip() if text else ""


def conninfo(dsn: str) -> dict[str, str] | None:
    """The options a URL or ``key=value`` string sets, as libpq reads them (the password
    decoded); None when it is malformed."""
    lib = libpq()
    error = c_void_p()
    options = lib.PQconninfoParse(dsn.encode(), ctypes.byref(error))
    if not options:
        if error.value:
            lib.PQfreemem(error)
        return None
    found: dict[str, str] = {}
    try:
        index = 0
        while options[index].keyword is not None:
            option = options[index]
            if option.val is not None:
                found[option.keyword.decode()] = option.val.decode(errors="replace")
            index += 1
    finally:
        lib.PQconninfoFree(options)
    return found


class Rows:
    """What one statement returned: its rows (tuples of Python values) and command tag."""

    __slots__ = ("returns_rows", "rows")

    def __init__(self, rows: list[tuple[Any, ...]], returns_rows: bool) -> None:
        self.rows = rows
        self.returns_rows = returns_rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)


def poll_connect(lib: Any, pg: int, deadline: float) -> None:
    if lib.PQstatus(pg) == _CONNECTION_BAD:
        raise PgError(first_line(lib.PQerrorMessage(pg)) or "cannot connect", lost=True)
    status = _POLLING_WRITING
    while status != _POLLING_OK:
        if status == _POLLING_FAILED:
            raise PgError(first_line(lib.PQerrorMessage(pg)) or "cannot connect", lost=True)
        left = deadline - time.monotonic()
        sock = lib.PQsocket(pg)
        if left <= 0 or sock < 0:
            raise PgError("connection timeout expired", lost=True)
        reading = status == _POLLING_READING
        ready = select.select([sock] if reading else [], [] if reading else [sock], [], left)
        if not any(ready):
            raise PgError("connection timeout expired", lost=True)
        status = lib.PQconnectPoll(pg)


def read_result(lib: Any, res: int) -> Rows | PgError:
    status = lib.PQresultStatus(res)
    if status in (_COMMAND_OK, _EMPTY_QUERY):
        return Rows([], False)
    if status != _TUPLES_OK:
        sqlstate = lib.PQresultErrorField(res, _DIAG_SQLSTATE)
        primary = lib.PQresultErrorField(res, _DIAG_PRIMARY)
        message = first_line(primary) or first_line(lib.PQresultErrorMessage(res))
        return PgError(
            message or "the statement failed", sqlstate=sqlstate.decode() if sqlstate else None
        )
    rows, fields = lib.PQntuples(res), lib.PQnfields(res)
    try:
        decoders = [decoder(lib.PQftype(res, column)) for column in range(fields)]
    except LookupError as err:
        return PgError(str(err))
    at, null, length, value = ctypes.string_at, lib.PQgetisnull, lib.PQgetlength, lib.PQgetvalue
    out = []
    for row in range(rows):
        out.append(
            tuple(
                [
                    None
                    if null(res, row, column)
                    else read(at(value(res, row, column), length(res, row, column)))
                    for column, read in enumerate(decoders)
                ]
            )
        )
    return Rows(out, True)


def drain_notifies(lib: Any, pg: int) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    while True:
        note = lib.PQnotifies(pg)
        if not note:
            return found
        try:
            found.append(
                (
                    (note.contents.relname or b"").decode(errors="replace"),
                    (note.contents.extra or b"").decode(errors="replace"),
                )
            )
        finally:
            lib.PQfreemem(ctypes.cast(note, c_void_p))
