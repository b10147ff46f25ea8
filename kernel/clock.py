"""Clock and identifier capabilities: the only sources of time and randomness in the kernel.

Tests inject :class:`FixedClock` / :class:`SeededIds` so ledgers and goldens are byte-stable.
"""

from __future__ import annotations

import os
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = [
    "Clock",
    "FixedClock",
    "IdFactory",
    "SeededIds",
    "SystemClock",
    "SystemIds",
    "format_ts",
    "new_ulid",
]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A deterministic clock: starts at ``start`` and advances ``step`` on every reading."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        step: timedelta = timedelta(seconds=1),
    ) -> None:
        self._next = start
        self._step = step

    def now(self) -> datetime:
        current = self._next
        self._next = current + self._step
        return current


def format_ts(instant: datetime) -> str:
    """RFC 3339 UTC with millisecond precision, e.g. ``2026-11-30T21:00:00.000Z``."""
    u = instant.astimezone(UTC)
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}."
        f"{u.microsecond // 1000:03d}Z"
    )


class IdFactory(Protocol):
    def session_id(self, now: datetime) -> str:
        """A new, lexicographically time-sortable session id."""
        ...


def new_ulid(now: datetime, randomness: int) -> str:
    """A ULID: 48-bit millisecond timestamp + 80 random bits, Crockford base32 (26 chars)."""
    millis = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | (randomness & ((1 << 80) - 1))
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


class SystemIds:
    def session_id(self, now: datetime) -> str:
        return new_ulid(now, int.from_bytes(os.urandom(10), "big"))


class SeededIds:
    """Deterministic ids for tests and goldens."""

    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)

    def session_id(self, now: datetime) -> str:
        return new_ulid(now, self._random.getrandbits(80))


def monotonic() -> float:
    """Seconds from an arbitrary origin, for measuring durations only."""
    return time.monotonic()
