"""Signed-in reviewers of one ``tht serve`` process (ARCHITECTURE §5, docs/security.md).

A sign-in makes a browser session: a random id (256 bits) in an ``HttpOnly; SameSite=Strict``
cookie, mapped *in this process's memory* to the reviewer, a CSRF token and — in signed mode —
the reviewer's unlocked key. Nothing of it is written anywhere: a restart signs everyone out, and
the key never reaches a disk, a log or a cookie. A session ends at sign-out, after
:data:`IDLE_SECONDS` without a request, or after :data:`MAX_SECONDS` in all.

Sign-in attempts are throttled per reviewer id and per client address: after
:data:`MAX_FAILURES` failures within :data:`FAILURE_WINDOW` seconds, further attempts are refused
until the window passes (scrypt already makes each passphrase guess slow).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kernel.trust import ReviewerSigner

__all__ = ["BrowserSession", "Sessions", "Throttle"]

IDLE_SECONDS = 30 * 60
MAX_SECONDS = 12 * 60 * 60
MAX_FAILURES = 5
FAILURE_WINDOW = 60.0


@dataclass
class BrowserSession:
    id: str
    reviewer: str
    csrf: str
    #: the reviewer's unlocked key (signed mode), in memory only
    key: ReviewerSigner | None = field(default=None, repr=False)
    #: the SHA-256 of the token it signed in with (solo mode): revoking it ends the session
    token_sha256: str | None = field(default=None, repr=False)
    started: float = 0.0
    seen: float = 0.0

    def csrf_ok(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(self.csrf, str(offered))


class Sessions:
    """The browser sessions of this process; safe to use from the server's threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._by_id: dict[str, BrowserSession] = {}

    def open(
        self, reviewer: str, key: ReviewerSigner | None = None, token_sha256: str | None = None
    ) -> BrowserSession:
        now = self._clock()
        session = BrowserSession(
            id=secrets.token_urlsafe(32), reviewer=reviewer, csrf=secrets.token_urlsafe(32),
            key=key, token_sha256=token_sha256, started=now, seen=now,
        )  # fmt: skip
        with self._lock:
            self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None) -> BrowserSession | None:
        """The live session with this id (its idle time restarts), else None."""
        if not session_id:
            return None
        now = self._clock()
        with self._lock:
            found = self._by_id.get(session_id)
            if found is None:
                return None
            if now - found.seen > IDLE_SECONDS or now - found.started > MAX_SECONDS:
                del self._by_id[session_id]
                found.key = None
                return None
            found.seen = now
            return found

    def close(self, session_id: str | None) -> None:
        if not session_id:
            return
        with self._lock:
            found = self._by_id.pop(session_id, None)
        if found is not None:
            found.key = None

    def count(self) -> int:
        with self._lock:
            return len(self._by_id)


class Throttle:
    """Failed sign-ins per key (reviewer id, client address) within a sliding window."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, list[float]] = {}

    def blocked(self, *keys: str) -> bool:
        now = self._clock()
        with self._lock:
            for key in keys:
                recent = [t for t in self._failures.get(key, []) if now - t < FAILURE_WINDOW]
                self._failures[key] = recent
                if len(recent) >= MAX_FAILURES:
                    return True
        return False

    def failed(self, *keys: str) -> None:
        now = self._clock()
        with self._lock:
            for key in keys:
                self._failures.setdefault(key, []).append(now)

    def succeeded(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._failures.pop(key, None)
