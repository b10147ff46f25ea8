"""The outbox on the PostgreSQL store (ARCHITECTURE §3.5, §3.7): a team's after-finalize items in
the shared server's ``tht_outbox`` table (schema migration 2), one row per item, namespaced by
``workspace`` like every other row.

An :class:`~kernel.outbox.OutboxPort`: :class:`~kernel.outbox.Outbox` makes the decisions (due,
backoff, ``max_attempts``); this stores them. Concurrent ``tht outbox run``\\ s, on any machine,
split the work: a runner *claims* an item before running it — one ``UPDATE … WHERE status =
'pending' AND`` (unclaimed ``OR`` its lease ran out) ``RETURNING``, in its own short transaction:
a second runner's UPDATE waits for the row, re-checks the condition and gets nothing — and its
outcome is written only while the claim is still its own. No transaction stays open while a
handler runs. A runner that dies leaves its claim to run out (:attr:`PostgresOutbox.lease_s`,
server time), then another runner takes the item: at least once, as on the file outbox.

Timestamps of the item (``created_at``, ``next_at``, ``done_at``) are the clock's formatted text,
exactly as the file item holds them; only the lease is the server's ``timestamptz``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kernel.outbox import OutboxItem

if TYPE_CHECKING:
    from kernel.store.postgres import PostgresStore
    from kernel.store.postgres_conn import Database
    from kernel.store.postgres_driver import Connection

__all__ = ["OUTBOX_TABLE", "PostgresOutbox"]

#: the migration's statements (:mod:`kernel.store.postgres_schema`, version 2)
OUTBOX_TABLE = (
    """CREATE TABLE tht_outbox (
        workspace text NOT NULL,
        id text NOT NULL,
        session text NOT NULL,
        task text NOT NULL,
        created_at text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
        attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        next_at text,
        last_error text,
        done_at text,
        claimed_by text,
        claimed_until timestamptz,
        PRIMARY KEY (workspace, id)
    )""",
)

_COLUMNS = "id, session, task, created_at, status, attempts, last_error, next_at, done_at"
_ADD = (
    "INSERT INTO tht_outbox (workspace, id, session, task, created_at, status, attempts, "
    "last_error, next_at, done_at) VALUES (%(ws)s, %(id)s, %(session)s, %(task)s, "
    "%(created_at)s, %(status)s, %(attempts)s::integer, %(last_error)s::text, %(next_at)s::text, "
    "%(done_at)s::text) ON CONFLICT DO NOTHING RETURNING 1"
)
_ITEMS = f'SELECT {_COLUMNS} FROM tht_outbox WHERE workspace = %(ws)s ORDER BY id COLLATE "C"'
# the claim: pending, due, and free (never claimed, its lease over, or already ours: a retried
# statement after a lost connection finds its own claim)
_CLAIM = f"""
UPDATE tht_outbox SET claimed_by = %(me)s,
    claimed_until = now() + make_interval(secs => %(lease)s::integer)
WHERE workspace = %(ws)s AND id = %(id)s AND status = 'pending'
  AND (%(due)s::text IS NULL OR next_at IS NULL OR next_at <= %(due)s::text)
  AND (claimed_until IS NULL OR claimed_until < now() OR claimed_by = %(me)s)
RETURNING {_COLUMNS}
"""
_RECORD = (
    "UPDATE tht_outbox SET status = %(status)s, attempts = %(attempts)s::integer, "
    "last_error = %(last_error)s::text, next_at = %(next_at)s::text, done_at = %(done_at)s::text, "
    "claimed_by = NULL, claimed_until = NULL "
    "WHERE workspace = %(ws)s AND id = %(id)s AND claimed_by = %(me)s RETURNING 1"
)


class PostgresOutbox:
    """``OutboxPort`` on the store's database, for one workspace of it."""

    def __init__(self, database: Database, *, workspace: str, lease_s: int = 900) -> None:
        self._db = database
        self.workspace = workspace
        #: seconds a claim holds an item (a runner that died gives it back when they pass)
        self.lease_s = lease_s
        #: this runner, in ``claimed_by`` (host, process, and a random part)
        self.runner = f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"

    @classmethod
    def of(cls, store: PostgresStore, *, lease_s: int = 900) -> PostgresOutbox:
        """The outbox of a store's workspace, on the store's own connection."""
        return cls(store.database, workspace=store.workspace, lease_s=lease_s)

    def __repr__(self) -> str:
        return f"PostgresOutbox(workspace={self.workspace!r})"

    def _rows(self, what: str, sql: str, **params: object) -> list[tuple[Any, ...]]:
        def work(conn: Connection) -> list[tuple[Any, ...]]:
            return conn.execute(sql, {"ws": self.workspace, **params}).fetchall()

        return self._db.run(what, work)

    def add(self, item: OutboxItem) -> bool:
        return bool(self._rows("adding an outbox item", _ADD, **_params(item)))

    def items(self) -> list[OutboxItem]:
        return [_item(row) for row in self._rows("listing the outbox", _ITEMS)]

    @contextmanager
    def running(self) -> Iterator[None]:
        yield  # every item is claimed on its own: runners never wait for each other

    def claim(self, item_id: str, *, due_by: str | None) -> OutboxItem | None:
        rows = self._rows(
            "claiming an outbox item",
            _CLAIM,
            id=item_id,
            due=due_by,
            me=self.runner,
            lease=self.lease_s,
        )
        return _item(rows[0]) if rows else None

    def record(self, item: OutboxItem) -> bool:
        params = _params(item)
        params.pop("session")
        params.pop("task")
        params.pop("created_at")
        return bool(self._rows("recording an outbox outcome", _RECORD, me=self.runner, **params))


def _params(item: OutboxItem) -> dict[str, object]:
    return {
        "id": item.id,
        "session": item.session,
        "task": item.task,
        "created_at": item.created_at,
        "status": item.status,
        "attempts": item.attempts,
        "last_error": None if item.last_error is None else _text(item.last_error),
        "next_at": item.next_attempt_at,
        "done_at": item.done_at,
    }


def _text(value: str) -> str:
    """An error's text for a text column (no NUL, no lone surrogate)."""
    return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _item(row: tuple[Any, ...]) -> OutboxItem:
    item_id, session, task, created_at, status, attempts, last_error, next_at, done_at = row
    return OutboxItem(
        id=item_id,
        session=session,
        task=task,
        created_at=created_at,
        status=status,
        attempts=int(attempts),
        last_error=last_error,
        next_attempt_at=next_at,
        done_at=done_at,
    )
