"""After-finalize hooks through an outbox (ARCHITECTURE §3.7, glossary "After-finalize hook").

Finalization records one outbox item per task; the items are executed best-effort right after and
retried later by ``tht outbox run``. An item never changes the ledger, the canonical artifacts or
the session's terminal state: a failing task only stays pending (with its error) and is retried
with exponential backoff until ``max_attempts``, then marked ``failed``.

Where items live is an :class:`OutboxPort`: small JSON files under ``<workspace>/.tht/outbox/``
replaced atomically (:class:`OutboxFolder`, the default: one runner at a time, by a lock file), or
the PostgreSQL store's ``tht_outbox`` table (:mod:`kernel.store.postgres_outbox`: each item is
claimed for a lease, so concurrent runners on several machines split the work). The decisions —
due or not, backoff, ``max_attempts`` — are :class:`Outbox`'s, the same on every port. The
handlers are given by the composition root (static, by task name).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal, Protocol

import msgspec

from kernel.clock import Clock, format_ts
from kernel.store.fs import atomic_write

__all__ = ["Outbox", "OutboxFolder", "OutboxItem", "OutboxPort", "OutboxRun", "TaskHandler"]

ItemStatus = Literal["pending", "done", "failed"]
_TASK = re.compile(r"^[a-z][a-z0-9_:.-]{0,63}$")


class OutboxItem(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    session: str
    task: str
    created_at: str
    status: ItemStatus = "pending"
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: str | None = None
    done_at: str | None = None


class OutboxRun(msgspec.Struct, frozen=True, kw_only=True):
    done: tuple[str, ...] = ()
    retrying: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    not_due: tuple[str, ...] = ()


TaskHandler = Callable[[OutboxItem], None]

_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder(OutboxItem)


class OutboxPort(Protocol):
    """Where outbox items live. ``claim`` hands an item to one runner at a time: the item as it
    is now when it is pending, due by ``due_by`` (``None``: whenever) and no other runner holds
    it; else ``None``. ``record`` writes a claimed item's outcome and gives the claim back."""

    def add(self, item: OutboxItem) -> bool:
        """Store a new item; ``False`` (nothing changed) when one with its id exists."""
        ...

    def items(self) -> list[OutboxItem]: ...

    def running(self) -> AbstractContextManager[None]:
        """Held around a whole run (a lock file, or nothing where claims suffice)."""
        ...

    def claim(self, item_id: str, *, due_by: str | None) -> OutboxItem | None: ...

    def record(self, item: OutboxItem) -> bool:
        """``False`` when the claim was lost meanwhile (its lease ran out and another runner
        took the item): at-least-once, the outcome is then the other runner's."""
        ...


class OutboxFolder:
    """The file port: ``<folder>/<id>.json`` per item, a ``.lock`` file around each run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, item_id: str) -> Path:
        return self.folder / f"{item_id}.json"

    def add(self, item: OutboxItem) -> bool:
        if self._path(item.id).exists():
            return False
        atomic_write(self._path(item.id), _ENC.encode(item))
        return True

    def items(self) -> list[OutboxItem]:
        if not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                found.append(_DEC.decode(path.read_bytes()))
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                continue
        return found

    @contextmanager
    def running(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def claim(self, item_id: str, *, due_by: str | None) -> OutboxItem | None:
        # the run's lock is held: the item read now is the item
        try:
            item = _DEC.decode(self._path(item_id).read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        return item if item.status == "pending" and is_due(item, due_by) else None

    def record(self, item: OutboxItem) -> bool:
        atomic_write(self._path(item.id), _ENC.encode(item))
        return True


def is_due(item: OutboxItem, due_by: str | None) -> bool:
    """Whether ``item`` may run at ``due_by`` (a formatted timestamp; ``None``: always)."""
    return due_by is None or not item.next_attempt_at or item.next_attempt_at <= due_by


class Outbox:
    """The outbox's decisions over a port (default: the files under ``folder``)."""

    def __init__(
        self,
        folder: Path | None = None,
        *,
        port: OutboxPort | None = None,
        max_attempts: int = 5,
        base_delay: timedelta = timedelta(seconds=30),
    ) -> None:
        if (folder is None) == (port is None):
            raise ValueError("an Outbox needs a folder or a port (one of them)")
        if port is None:
            assert folder is not None
            port = OutboxFolder(folder)
        self.port: OutboxPort = port
        self.folder = folder
        self.max_attempts = max_attempts
        self.base_delay = base_delay

    def enqueue(self, session: str, tasks: tuple[str, ...], clock: Clock) -> list[OutboxItem]:
        now = format_ts(clock.now())
        items = []
        for task in tasks:
            if not _TASK.match(task):
                raise ValueError(f"bad outbox task name {task!r}")
            item = OutboxItem(
                id=f"{session}.{task.replace(':', '-')}", session=session, task=task, created_at=now
            )
            self.port.add(item)
            items.append(item)
        return items

    def items(self) -> list[OutboxItem]:
        return self.port.items()

    def run(
        self,
        handlers: Mapping[str, TaskHandler],
        clock: Clock,
        *,
        session: str | None = None,
        force: bool = False,
    ) -> OutboxRun:
        """Execute due pending items once each; an item is claimed before it runs (the file
        port: one runner at a time, a lock file)."""
        done: list[str] = []
        retrying: list[str] = []
        failed: list[str] = []
        not_due: list[str] = []
        with self.port.running():
            for listed in self.port.items():
                if listed.status != "pending" or (
                    session is not None and listed.session != session
                ):
                    continue
                now = clock.now()
                due_by = None if force else format_ts(now)
                if not is_due(listed, due_by):
                    not_due.append(listed.id)
                    continue
                item = self.port.claim(listed.id, due_by=due_by)
                if item is None:  # another runner holds it, or ran it meanwhile
                    continue
                updated = self._outcome(item, handlers, now)
                self.port.record(updated)
                if updated.status == "done":
                    done.append(item.id)
                elif updated.status == "failed":
                    failed.append(item.id)
                else:
                    retrying.append(item.id)
        return OutboxRun(
            done=tuple(done), retrying=tuple(retrying), failed=tuple(failed), not_due=tuple(not_due)
        )

    def _outcome(
        self, item: OutboxItem, handlers: Mapping[str, TaskHandler], now: datetime
    ) -> OutboxItem:
        handler = handlers.get(item.task)
        error: str | None = None
        if handler is None:
            error = f"no handler for task {item.task!r}"
        else:
            try:
                handler(item)
            except Exception as exc:  # best effort: any failure is recorded, never raised
                error = f"{type(exc).__name__}: {exc}"[:500]
        attempts = item.attempts + 1
        if error is None:
            return msgspec.structs.replace(
                item, status="done", attempts=attempts, last_error=None, done_at=format_ts(now)
            )
        if attempts >= self.max_attempts:
            return msgspec.structs.replace(
                item, status="failed", attempts=attempts, last_error=error
            )
        delay = self.base_delay * (2 ** (attempts - 1))
        return msgspec.structs.replace(
            item,
            attempts=attempts,
            last_error=error,
            next_attempt_at=format_ts(_plus(now, delay)),
        )


def _plus(now: datetime, delay: timedelta) -> datetime:
    return now + delay
