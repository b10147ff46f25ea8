"""Live views of a PostgreSQL store: every append (and repair) sends ``NOTIFY tht_ledger,
'<workspace>:<ledger>:<last seq>'`` right after it commits; :func:`listen` receives them.

A notice says *that* a ledger moved, never what it holds: a view re-reads the ledger (from the
seq it has) through the store. Notices of other workspaces on the same server are dropped.

Writers send notices only while a listener holds its workspace's listening lock (taken by
:meth:`LedgerListener.start`, released with its connection); a plain ``LISTEN tht_ledger``
without it gets none. A notice is sent only after a commit, but one can be lost: the writer
crashed (or lost its connection) between the commit and the notice
(:mod:`kernel.store.postgres_write` says why it is sent after the commit), or this listener's
connection dropped (``wait`` raises; ``start`` again). So a live view also re-reads on a
timer: ``wait`` returns ``[]`` at its timeout, and that is when. Notices of one ledger may
arrive out of order; ``seq`` is a lower bound.

    with listen(dsn, workspace="team") as notices:
        for notice in notices.wait(timeout=15):
            ...  # notice.session_id moved on to notice.seq
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

from kernel.errors import UnavailableError
from kernel.store.postgres_conn import Database
from kernel.store.postgres_driver import Connection
from kernel.store.postgres_libpq import PgError
from kernel.store.postgres_statements import CHANNEL, listening_key

__all__ = ["LedgerListener", "LedgerNotice", "listen", "parse_notice"]

_LOCK_TRIES = 200


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
        self._conn: Connection | None = None

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
        """LISTEN (idempotent): notices committed from now on are kept until :meth:`wait`.
        Then the workspace's listening lock (shared), which makes writers send notices
        (:mod:`kernel.store.postgres_statements`); a writer holds it for microseconds, so a
        few tries get it (and if another session kept it, every writer notifies anyway)."""

        def work(conn: Connection) -> None:
            conn.execute(f"LISTEN {CHANNEL}")
            key = listening_key(self.workspace)
            for _ in range(_LOCK_TRIES):
                row = conn.execute("SELECT pg_try_advisory_lock_shared(%s)", (key,)).fetchone()
                if row is not None and row[0]:
                    break
                time.sleep(0.005)
            self._conn = conn

        if self._conn is None:
            self._db.run("listening for appends", work)

    def wait(self, timeout: float) -> list[LedgerNotice]:
        """The notices of this workspace that arrive within ``timeout`` seconds (returns at the
        first one, with any already queued behind it); ``[]`` when none came.
        ``UnavailableError`` when the connection is lost (start again to resume; appends made
        meanwhile are only seen by re-reading the ledgers)."""
        self.start()
        conn = self._conn
        assert conn is not None
        found: list[LedgerNotice] = []
        reason = ""
        deadline = time.monotonic() + max(0.0, timeout)
        try:
            while True:  # until one of this workspace's notices (or the deadline)
                left = max(0.0, deadline - time.monotonic())
                self._take(conn.notifies(timeout=left), found)
                if found or time.monotonic() >= deadline:
                    break
        except PgError as err:
            reason = self._db.reason(err)
        if reason:
            self.close()
            raise UnavailableError(f"the PostgreSQL store is unavailable (listening): {reason}")
        return found

    def _take(self, notes: Iterable[tuple[str, str]], found: list[LedgerNotice]) -> None:
        for channel, payload in notes:
            notice = parse_notice(payload) if channel == CHANNEL else None
            if notice is not None and notice.workspace == self.workspace:
                found.append(notice)

    def close(self) -> None:
        self._conn = None
        self._db.close()


def listen(dsn: str, *, workspace: str) -> LedgerListener:
    """A listener of ``workspace``'s appends (use it as a context manager)."""
    return LedgerListener(dsn, workspace=workspace)
