"""A cross-process circuit breaker for one provider (spec 000 §19.3).

Hooks are separate processes, so the state lives in a small JSON file that is replaced atomically
(temporary file, flush, rename); read and write errors never affect the caller's decision.

- 401/403 (``auth-error``) opens the circuit at once for ``authErrorOpenDurationMs`` (1 h);
- 429 (``rate-limited``) opens it at once for ``rateLimitOpenDurationMs`` (15 min);
- other provider failures count; ``failureThreshold`` (3) of them within ``windowMs`` (60 s) open
  it for ``openDurationMs`` (5 min);
- once ``retryAfter`` has passed the circuit is half-open: the next call goes through; a success
  closes it, a failure opens it again.

An aborted call or a missing credential says nothing about the provider and is not counted. The
file holds the spec's fields only (``providerKey`` = ``<profile>:<model>``): no key, no prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from kernel.llm._files import read_json, replace_json
from kernel.llm.errors import ProviderErrorKind

__all__ = ["BreakerSettings", "BreakerState", "CircuitBreaker"]

BreakerReason = Literal["auth-error", "rate-limited", "consecutive-failures"]
_NOT_COUNTED: frozenset[str] = frozenset({"aborted", "missing-credential"})


@dataclass(frozen=True)
class BreakerSettings:
    failure_threshold: int = 3
    window_ms: int = 60_000
    open_duration_ms: int = 300_000
    rate_limit_open_duration_ms: int = 900_000
    auth_error_open_duration_ms: int = 3_600_000


@dataclass(frozen=True)
class BreakerState:
    state: Literal["closed", "open", "half-open"]
    reason: BreakerReason | None = None
    retry_after: datetime | None = None
    consecutive_failures: int = 0

    @property
    def allows_call(self) -> bool:
        return self.state != "open"


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


class CircuitBreaker:
    """The breaker for the providers of one feature, persisted in ``path``."""

    def __init__(
        self,
        path: Path,
        *,
        settings: BreakerSettings | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.path = path
        self.settings = settings or BreakerSettings()
        self._clock = clock or (lambda: datetime.now(UTC))

    def _record(self, provider_key: str) -> dict[str, Any] | None:
        data = read_json(self.path)
        if isinstance(data, dict) and data.get("providerKey") == provider_key:
            return data
        return None

    def state(self, provider_key: str) -> BreakerState:
        """The provider's state now (closed when the file is absent, unreadable or another's)."""
        data = self._record(provider_key)
        if data is None or data.get("state") != "open":
            failures = int(data.get("consecutiveFailures", 0)) if data else 0
            return BreakerState("closed", consecutive_failures=max(0, failures))
        retry_after = _parse(data.get("retryAfter"))
        reason = data.get("reason")
        reason = (
            reason if reason in ("auth-error", "rate-limited", "consecutive-failures") else None
        )
        failures = int(data.get("consecutiveFailures", 0) or 0)
        if retry_after is None or self._clock() >= retry_after:
            return BreakerState("half-open", reason, retry_after, failures)
        return BreakerState("open", reason, retry_after, failures)

    def record_success(self, provider_key: str) -> None:
        """A call succeeded: close the circuit (writes only when something changes)."""
        data = self._record(provider_key)
        if data is None:
            return  # no state for this provider: nothing to close
        if data.get("state") == "closed" and not data.get("consecutiveFailures"):
            return
        closed = {
            "providerKey": provider_key,
            "state": "closed",
            "reason": None,
            "openedAt": None,
            "retryAfter": None,
            "consecutiveFailures": 0,
            "windowStartedAt": None,
        }
        replace_json(self.path, closed)

    def record_failure(self, provider_key: str, kind: ProviderErrorKind | str) -> BreakerState:
        """Count one failure of ``kind``; returns the new state."""
        if kind in _NOT_COUNTED:
            return self.state(provider_key)
        now = self._clock()
        data = self._record(provider_key) or {}
        s = self.settings
        window_start = _parse(data.get("windowStartedAt"))
        failures = int(data.get("consecutiveFailures", 0) or 0)
        half_open = data.get("state") == "open"  # open and being recorded: it was let through
        if window_start is None or now - window_start > timedelta(milliseconds=s.window_ms):
            window_start, failures = now, 0
        failures += 1
        reason: BreakerReason | None = None
        duration = 0
        if kind == "auth-error":
            reason, duration = "auth-error", s.auth_error_open_duration_ms
        elif kind == "rate-limited":
            reason, duration = "rate-limited", s.rate_limit_open_duration_ms
        elif failures >= s.failure_threshold or half_open:
            reason, duration = "consecutive-failures", s.open_duration_ms
        record: dict[str, Any] = {
            "providerKey": provider_key,
            "state": "open" if reason else "closed",
            "reason": reason,
            "openedAt": _iso(now) if reason else None,
            "retryAfter": _iso(now + timedelta(milliseconds=duration)) if reason else None,
            "consecutiveFailures": failures,
            "windowStartedAt": _iso(window_start),
        }
        replace_json(self.path, record)
        if reason:
            return BreakerState("open", reason, now + timedelta(milliseconds=duration), failures)
        return BreakerState("closed", consecutive_failures=failures)
