"""A small cross-process cache of *validated* model results (spec 000 §20).

One JSON file, replaced atomically; entries keyed by a SHA-256 hex digest the caller computes
(so no prompt text can be a key: anything that is not 64 hex digits is refused), each with the time
it was stored and last used. Reads honour the TTL; writes drop expired entries and evict the least
recently used beyond ``max_entries``. Every I/O error is a miss or a no-op: the cache never changes
a decision, it only saves a call.

What goes in is the caller's business and must already be validated and free of prompt text (the
routing evaluator stores the §13.1 evaluation: ids, roles, scores and reason codes only).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kernel.llm._files import read_json, replace_json

__all__ = ["ResultCache"]

_KEY = re.compile(r"^[0-9a-f]{64}$")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class ResultCache:
    """TTL + LRU-bounded results in ``path``."""

    def __init__(
        self,
        path: Path,
        *,
        ttl_s: float = 900.0,
        max_entries: int = 256,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.path = path
        self.ttl = timedelta(seconds=ttl_s)
        self.max_entries = max_entries
        self._clock = clock or (lambda: datetime.now(UTC))

    def _entries(self) -> dict[str, dict[str, Any]]:
        data = read_json(self.path)
        entries = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if _KEY.match(k) and isinstance(v, dict)}

    def _fresh(self, entry: dict[str, Any], now: datetime) -> bool:
        stored = _parse(entry.get("storedAt"))
        return stored is not None and now - stored <= self.ttl

    def get(self, key: str) -> Any | None:
        """The stored value, or ``None`` (absent, expired, or unreadable). A hit refreshes its
        last-used time."""
        if not _KEY.match(key):
            return None
        now = self._clock()
        entries = self._entries()
        entry = entries.get(key)
        if entry is None or not self._fresh(entry, now) or "value" not in entry:
            return None
        entry["usedAt"] = _iso(now)
        self._write(entries, now)
        return entry["value"]

    def put(self, key: str, value: Any) -> None:
        if not _KEY.match(key):
            raise ValueError("cache keys are SHA-256 hex digests")
        now = self._clock()
        entries = self._entries()
        entries[key] = {"storedAt": _iso(now), "usedAt": _iso(now), "value": value}
        self._write(entries, now)

    def clear(self) -> None:
        replace_json(self.path, {"version": 1, "entries": {}})

    def __len__(self) -> int:
        now = self._clock()
        return sum(1 for e in self._entries().values() if self._fresh(e, now))

    def _write(self, entries: dict[str, dict[str, Any]], now: datetime) -> None:
        live = {k: v for k, v in entries.items() if self._fresh(v, now)}
        if len(live) > self.max_entries:
            order = sorted(live, key=lambda k: str(live[k].get("usedAt", "")), reverse=True)
            live = {k: live[k] for k in order[: self.max_entries]}
        replace_json(self.path, {"version": 1, "entries": live})
