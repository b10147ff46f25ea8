"""One exception hierarchy; each class maps to a documented exit code (ARCHITECTURE §5).

The CLI catches :class:`ThtError` at the top, prints one line to stderr (and an error object
on stdout under ``--json``) and exits with :attr:`ThtError.exit_code`. Anything else that
escapes is a bug and exits 1.
"""

from __future__ import annotations

import errno as _errno
from collections.abc import Mapping
from os import PathLike
from typing import ClassVar

__all__ = [
    "EXIT_CODES",
    "ConflictError",
    "IntegrityError",
    "InternalError",
    "NotFoundError",
    "PolicyError",
    "ThtError",
    "UnavailableError",
    "UsageError",
]


class ThtError(Exception):
    """Base of every error a user can provoke; never shown with a traceback."""

    exit_code: ClassVar[int] = 1
    code: ClassVar[str] = "internal"

    def __init__(self, message: str, *, details: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, object] = dict(details or {})

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "code": self.code,
            "exit_code": self.exit_code,
            "message": self.message,
        }
        if self.details:
            body["details"] = self.details
        return {"error": body}


class InternalError(ThtError):
    """An invariant the code itself should have kept was broken (exit 1)."""

    exit_code = 1
    code = "internal"


class UsageError(ThtError):
    """Bad arguments or a malformed input file (exit 2)."""

    exit_code = 2
    code = "usage"


class NotFoundError(ThtError):
    """A session, stage, seq, artifact or evidence id does not exist (exit 3)."""

    exit_code = 3
    code = "not_found"


class ConflictError(ThtError):
    """A concurrent append won the race; re-read fresh state and retry (exit 4)."""

    exit_code = 4
    code = "conflict"


class PolicyError(ThtError):
    """The transition or write is not allowed now (exit 5)."""

    exit_code = 5
    code = "refused"


class UnavailableError(ThtError):
    """A dependency (vector store, database, provider) is unreachable; nothing changed (exit 6)."""

    exit_code = 6
    code = "unavailable"


EXIT_CODES: Mapping[int, str] = {
    0: "done",
    1: "unexpected internal error (a bug)",
    2: "usage error: bad arguments, malformed input file",
    3: "not found: session, stage, seq, evidence id",
    4: "conflict: concurrent append lost the race; retry reads fresh state",
    5: "refused by policy: the transition or write is not allowed now",
    6: "unavailable dependency: nothing was changed",
    7: "integrity: a ledger failed verification (schema, seq, hash chain, head anchor)",
}


class IntegrityError(ThtError):
    """A ledger failed verification: schema, gapless seq, hash chain or head anchor (exit 7).

    Not in ARCHITECTURE §5's table, which has no code for "the stored history is damaged"; added
    beside it so scripts can tell tampering or corruption from a bug (1) or a refusal (5).
    """

    exit_code = 7
    code = "integrity"


def unwritable_error(path: str | PathLike[str], err: OSError, doing: str) -> UnavailableError:
    """A store folder or file that the operating system refuses to write (permission, an
    immutable or read-only file system, a full disk or quota, a file size limit): an
    unavailable dependency, like a database server that cannot be used — exit 6, one line
    naming the path and the OS reason. The caller has left nothing half-written.

    ``doing`` completes "cannot …" (``create session folder``, ``append to``). Not in
    ``__all__``: the pinned public API lists the exception classes only."""
    return _store_os_error(path, err, doing, "writable")


def unreadable_error(
    path: str | PathLike[str], err: OSError, doing: str = "read"
) -> UnavailableError:
    """A store folder or file that exists but that the operating system refuses to read
    (permission, an I/O error, a folder where a file belongs): an unavailable dependency, as
    :func:`unwritable_error` is for writes — exit 6, one line naming the path and the OS
    reason, and nothing written. A file that is *missing* is not this: the caller keeps its own
    meaning for that (a missing ledger is an integrity problem, a missing session not found).

    ``doing`` completes "cannot …" (``read``, ``list``)."""
    return _store_os_error(path, err, doing, "readable")


def _store_os_error(
    path: str | PathLike[str], err: OSError, doing: str, state: str
) -> UnavailableError:
    name = _errno.errorcode.get(err.errno, "") if err.errno else ""
    reason = err.strerror or str(err) or type(err).__name__
    shown = str(path)
    if "\n" in shown or "\r" in shown:  # one line, whatever the folder is called
        shown = repr(shown)
    where = f"{reason} [{name}]" if name else reason
    details: dict[str, object] = {"path": str(path), "reason": reason}
    if name:
        details["errno"] = name
    return UnavailableError(
        f"cannot {doing} {shown}: {where}; the workspace store is not {state}, nothing was changed",
        details=details,
    )
