"""Live updates: server-sent events that follow the ledger (ARCHITECTURE §5).

A page subscribes to ``/sessions/{id}/events`` (one session) or ``/events`` (the inbox). The
stream says *that* a ledger moved — ``event: ledger`` with ``{"session", "last_seq"}`` — never
what it holds: the page then fetches itself again through the same authenticated, verified path.

How a move is noticed:
- every store: the ledger's tail (its last complete line) is read again every
  :data:`POLL_SECONDS` — on the filesystem store a read of the file's end, never the whole file;
- PostgreSQL: ``LISTEN`` on the store's ``NOTIFY`` channel wakes the stream at once (a notice
  carries the ledger and seq only; the stream still reads the tail through the store, so a forged
  notice can only cause a harmless re-read).

A comment line every :data:`HEARTBEAT_SECONDS` keeps proxies from closing an idle stream and lets
the server notice a page that went away.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

__all__ = ["HEARTBEAT_SECONDS", "POLL_SECONDS", "Wakeup", "follow", "ledger_positions"]

POLL_SECONDS = 0.2
HEARTBEAT_SECONDS = 15.0
#: how often a listening stream looks at its wake-up flag between polls
WAKE_CHECK_SECONDS = 0.02


def ledger_positions(app: Any, session: str | None) -> dict[str, int]:
    """The last seq of one session's ledger (or of every session's), read from the tails."""
    store = app.kernel.store
    ids = [session] if session is not None else store.session_ids()
    positions: dict[str, int] = {}
    for sid in ids:
        try:
            positions[sid] = store.ledger(sid).tail().last_seq
        except Exception:  # a session removed meanwhile: no position, no crash of the stream
            continue
    return positions


class Wakeup:
    """Set when the PostgreSQL store notifies an append of this workspace (else never: the
    stream then simply polls)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, app: Any, session: str | None) -> None:
        source = _listen_source(app)
        if source is None:
            return
        self._thread = threading.Thread(
            target=self._run, args=(source, session), name="tht-listen", daemon=True
        )
        self._thread.start()

    def _run(self, source: Callable[[], Any], session: str | None) -> None:
        # the server went away: polling goes on
        with contextlib.suppress(Exception), source() as notices:
            while not self._stop.is_set():
                for notice in notices.wait(timeout=1.0):
                    if session is None or notice.session_id == session:
                        self.event.set()

    @property
    def listening(self) -> bool:
        return self._thread is not None

    def wait(self, timeout: float) -> bool:
        woke = self.event.wait(timeout)
        self.event.clear()
        return woke

    def stop(self) -> None:
        self._stop.set()


def _listen_source(app: Any) -> Callable[[], Any] | None:
    """A ``listen()`` context for the app's PostgreSQL store, or None on any other store."""
    store = app.kernel.store
    database = getattr(store, "database", None)
    workspace = getattr(store, "workspace", None)
    if database is None or not isinstance(workspace, str):
        return None
    from kernel.store.postgres_listen import listen

    dsn = database.dsn
    return lambda: listen(dsn, workspace=workspace)


async def follow(
    app: Any,
    session: str | None,
    since: dict[str, int],
    *,
    is_disconnected: Callable[[], Any],
    poll: float = POLL_SECONDS,
) -> AsyncIterator[str]:
    """The SSE stream: one ``ledger`` event per ledger that moved past ``since``."""
    import time

    from starlette.concurrency import run_in_threadpool

    wakeup = Wakeup()
    wakeup.start(app, session)
    last_beat = time.monotonic()
    known = dict(since)
    try:
        yield "retry: 1000\n\n"
        while True:
            if await is_disconnected():
                return
            positions = await run_in_threadpool(ledger_positions, app, session)
            for sid, seq in sorted(positions.items()):
                if known.get(sid) != seq:
                    known[sid] = seq
                    yield _message({"session": sid, "last_seq": seq})
            if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                last_beat = time.monotonic()
                yield ": alive\n\n"
            await _pause(wakeup, poll)
    finally:
        wakeup.stop()


async def _pause(wakeup: Wakeup, poll: float) -> None:
    """Until the next poll, or earlier when a notice wakes the stream — on the event loop, never
    holding one of the server's worker threads (a page left open must not starve the others)."""
    import asyncio

    if not wakeup.listening:
        await asyncio.sleep(poll)
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + poll
    while loop.time() < deadline:
        if wakeup.event.is_set():
            wakeup.event.clear()
            return
        await asyncio.sleep(WAKE_CHECK_SECONDS)


def _message(data: dict[str, Any]) -> str:
    return f"event: ledger\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
