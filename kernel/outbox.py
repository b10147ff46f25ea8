"""After-finalize hooks through an outbox (ARCHITECTURE §3.7, glossary "After-finalize hook").

Finalization records one outbox item per task; the items are executed best-effort right after and
retried later by ``tht outbox run``. An item never changes the ledger, the canonical artifacts or
the session's terminal state: a failing task only stays pending (with its error) and is retried
with exponential backoff until ``max_attempts``, then marked ``failed``.

Items are small JSON files under ``<workspace>/.tht/outbox/`` replaced atomically; the handlers are
given by the composition root (static, by task name).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

import msgspec

from kernel.clock import Clock, format_ts
from kernel.store.fs import atomic_write

__all__ = ["Outbox", "OutboxItem", "OutboxRun", "TaskHandler"]

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


class Outbox:
    def __init__(
        self, folder: Path, *, max_attempts: int = 5, base_delay: timedelta = timedelta(seconds=30)
    ) -> None:
        self.folder = folder
        self.max_attempts = max_attempts
        self.base_delay = base_delay

    def _path(self, item_id: str) -> Path:
        return self.folder / f"{item_id}.json"

    def enqueue(self, session: str, tasks: tuple[str, ...], clock: Clock) -> list[OutboxItem]:
        now = format_ts(clock.now())
        items = []
        for task in tasks:
            if not _TASK.match(task):
                raise ValueError(f"bad outbox task name {task!r}")
            item = OutboxItem(
                id=f"{session}.{task.replace(':', '-')}", session=session, task=task, created_at=now
            )
            if not self._path(item.id).exists():
                atomic_write(self._path(item.id), _ENC.encode(item))
            items.append(item)
        return items

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
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def run(
        self,
        handlers: Mapping[str, TaskHandler],
        clock: Clock,
        *,
        session: str | None = None,
        force: bool = False,
    ) -> OutboxRun:
        """Execute due pending items once each; one runner at a time (a lock file)."""
        done: list[str] = []
        retrying: list[str] = []
        failed: list[str] = []
        not_due: list[str] = []
        with self._locked():
            for item in self.items():
                if item.status != "pending" or (session is not None and item.session != session):
                    continue
                now = clock.now()
                if not force and item.next_attempt_at and item.next_attempt_at > format_ts(now):
                    not_due.append(item.id)
                    continue
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
                    updated = msgspec.structs.replace(
                        item,
                        status="done",
                        attempts=attempts,
                        last_error=None,
                        done_at=format_ts(now),
                    )
                    done.append(item.id)
                elif attempts >= self.max_attempts:
                    updated = msgspec.structs.replace(
                        item, status="failed", attempts=attempts, last_error=error
                    )
                    failed.append(item.id)
                else:
                    delay = self.base_delay * (2 ** (attempts - 1))
                    updated = msgspec.structs.replace(
                        item,
                        attempts=attempts,
                        last_error=error,
                        next_attempt_at=format_ts(_plus(now, delay)),
                    )
                    retrying.append(item.id)
                atomic_write(self._path(item.id), _ENC.encode(updated))
        return OutboxRun(
            done=tuple(done), retrying=tuple(retrying), failed=tuple(failed), not_due=tuple(not_due)
        )


def _plus(now: datetime, delay: timedelta) -> datetime:
    return now + delay
