"""Typed failures of the Workspace Database mechanism (ARCHITECTURE §3.8, §5).

Every message is one line a person can act on, and none carries the binding's URL or password:
messages are built from the binding's redacted ``display`` and from the database's own reason
after the binding has scrubbed every secret out of it. ``details["reason"]`` is a stable code.

- :class:`DatabaseUnavailable` (exit 6): the file is missing, the server unreachable, the login
  refused; nothing was changed.
- :class:`QueryRefused` (exit 5): the SQL tried to write, or to run anything but one query.
- :class:`QueryFailed` (exit 2): the database rejected the SQL (syntax, unknown column, …).
- :class:`QueryTimeout` (exit 6): the query ran past its timeout, or was cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from kernel.errors import PolicyError, ThtError, UnavailableError, UsageError

__all__ = ["DatabaseUnavailable", "QueryFailed", "QueryRefused", "QueryTimeout"]


class _Reasoned(ThtError):
    reason: ClassVar[str] = ""

    def __init__(self, message: str, *, details: Mapping[str, object] | None = None) -> None:
        super().__init__(message, details={"reason": self.reason, **(details or {})})


class DatabaseUnavailable(_Reasoned, UnavailableError):
    """The Workspace Database cannot be reached or opened; nothing was changed (exit 6)."""

    reason = "database_unavailable"


class QueryRefused(_Reasoned, PolicyError):
    """The SQL is not one read-only query: the workspace database is never written (exit 5)."""

    reason = "query_refused"


class QueryFailed(_Reasoned, UsageError):
    """The database rejected the SQL; the message carries the database's reason (exit 2)."""

    reason = "query_failed"


class QueryTimeout(_Reasoned, UnavailableError):
    """The query ran past its timeout or was cancelled; nothing was changed (exit 6)."""

    reason = "query_timeout"
