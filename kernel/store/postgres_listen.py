"""Live views of a PostgreSQL store: every append (and repair) sends ``NOTIFY tht_ledger,
'<workspace>:<ledger>:<last seq>'`` when it commits; :func:`listen` receives them.

A notice says *that* a ledger moved, never what it holds: a view re-reads the ledger (from the
seq it has) through the store. Notices of other workspaces on the same server are dropped.

    with listen(dsn, workspace="team") as notices:
        for notice in notices.wait(timeout=15):
            ...  # notice.session_id moved on to notice.seq
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kernel.errors import UnavailableError
from kernel.store.postgres_conn import Database
from kernel.store.postgres_ledger import CHANNEL

if TYPE_CHECKING:
    import psycopg

__all__ = ["LedgerListener", "LedgerNotice", "listen", "parse_notice"]


@dataclass(frozen=True)
class LedgerNotice:
    """One committed append: ``ledger`` is ``session:<id>``, ``catalog`` or ``memory``."""

    workspace: str
    ledger: str
    seq: int

    @property
    def session_id(self) -> str | None:
        kind, _, rest = self.ledger.partition(":")
        return rest if kind == "session" and rest else None


def parse_notice(payload: str) -> LedgerNotice | None:
    """A notice from its payload; None for one tht did not send."""
    head, _, seq = payload.rpartition(":")
    workspace, _, ledger = head.partition(":")
    if not (workspace and ledger and seq.isdigit()):
        return None
    return LedgerNotice(workspace, ledger, int(seq))


class LedgerListener:
    """A dedicated connection that LISTENs on the appends of one workspace."""

    def __init__(self, dsn: str, *, workspace: str) -> None:
        self.workspace = workspace
        self._db = Database(dsn, required_version=None)
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> LedgerListener:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        """LISTEN (idempotent): notices committed from now on are kept until :meth:`wait`."""

        def work(conn: psycopg.Connection[Any]) -> None:
            conn.execute(f"LISTEN {CHANNEL}")
            self._conn = conn

        if self._conn is None:
            self._db.run("listening for appends", work)

    def wait(self, timeout: float) -> list[LedgerNotice]:
        """The notices of this workspace that arrive within ``timeout`` seconds (returns at the
        first one, with any already queued behind it); ``[]`` when none came.
        ``UnavailableError`` when the connection is lost (start again to resume; appends made
        meanwhile are only seen by re-reading the ledgers)."""
        import psycopg

        self.start()
        conn = self._conn
        assert conn is not None
        found: list[LedgerNotice] = []
        reason = ""
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            while True:  # until one of this workspace's notices (or the deadline) ...
                left = max(0.0, deadline - time.monotonic())
                self._take(conn.notifies(timeout=left, stop_after=1), found)
                if found or time.monotonic() >= deadline:
                    break
            if found:  # ... then whatever is queued behind it
                self._take(conn.notifies(timeout=0.0), found)
        except psycopg.Error as err:
            reason = self._db.reason(err)
        if reason:
            self.close()
            raise UnavailableError(f"the PostgreSQL store is unavailable (listening): {reason}")
        return found

    def _take(self, notes: Iterable[psycopg.Notify], found: list[LedgerNotice]) -> None:
        for note in notes:
            notice = parse_notice(note.payload)
            if notice is not None and notice.workspace == self.workspace:
                found.append(notice)

    def close(self) -> None:
        self._conn = None
        self._db.close()


def listen(dsn: str, *, workspace: str) -> LedgerListener:
    """A listener of ``workspace``'s appends (use it as a context manager)."""
    return LedgerListener(dsn, workspace=workspace)
