"""The cross-process circuit breaker (spec 000 §19.3) and the result cache (§20)."""

from __future__ import annotations

import json
import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kernel.llm.breaker import CircuitBreaker
from kernel.llm.cache import ResultCache

KEY = "ollama-cloud:ministral-3:3b-cloud"
T0 = datetime(2026, 7, 17, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_three_failures_within_the_window_open_for_five_minutes(
    tmp_path: Path, clock: Clock
) -> None:
    breaker = CircuitBreaker(tmp_path / "circuit.json", clock=clock)
    for _ in range(2):
        assert breaker.record_failure(KEY, "timeout").state == "closed"
        clock.advance(seconds=10)
    opened = breaker.record_failure(KEY, "http-error")
    assert (opened.state, opened.reason) == ("open", "consecutive-failures")
    assert opened.retry_after == clock.now + timedelta(minutes=5)
    clock.advance(minutes=4, seconds=59)
    assert not breaker.state(KEY).allows_call
    clock.advance(seconds=2)
    assert breaker.state(KEY).state == "half-open"


def test_failures_spread_beyond_the_window_do_not_open(tmp_path: Path, clock: Clock) -> None:
    breaker = CircuitBreaker(tmp_path / "circuit.json", clock=clock)
    for _ in range(5):
        assert breaker.record_failure(KEY, "timeout").state == "closed"
        clock.advance(seconds=61)


def test_429_opens_short_and_401_403_open_long(tmp_path: Path, clock: Clock) -> None:
    breaker = CircuitBreaker(tmp_path / "circuit.json", clock=clock)
    limited = breaker.record_failure(KEY, "rate-limited")
    assert (limited.reason, limited.retry_after) == ("rate-limited", T0 + timedelta(minutes=15))
    auth = breaker.record_failure(KEY, "auth-error")
    assert (auth.reason, auth.retry_after) == ("auth-error", T0 + timedelta(hours=1))


def test_half_open_success_closes_and_failure_reopens(tmp_path: Path, clock: Clock) -> None:
    breaker = CircuitBreaker(tmp_path / "circuit.json", clock=clock)
    breaker.record_failure(KEY, "rate-limited")
    clock.advance(minutes=16)
    assert breaker.state(KEY).state == "half-open"
    assert breaker.record_failure(KEY, "timeout").state == "open"  # one failure is enough now
    clock.advance(minutes=6)
    breaker.record_success(KEY)
    assert breaker.state(KEY).state == "closed"
    assert json.loads((tmp_path / "circuit.json").read_text())["consecutiveFailures"] == 0


def test_aborts_and_missing_keys_are_not_counted(tmp_path: Path, clock: Clock) -> None:
    breaker = CircuitBreaker(tmp_path / "circuit.json", clock=clock)
    for _ in range(5):
        breaker.record_failure(KEY, "aborted")
        breaker.record_failure(KEY, "missing-credential")
    assert breaker.state(KEY).state == "closed"
    assert not (tmp_path / "circuit.json").exists()


def test_the_file_has_the_spec_fields_and_nothing_else(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "circuit.json"
    CircuitBreaker(path, clock=clock).record_failure(KEY, "rate-limited")
    data = json.loads(path.read_text())
    assert data == {
        "providerKey": KEY,
        "state": "open",
        "reason": "rate-limited",
        "openedAt": "2026-07-17T10:00:00.000Z",
        "retryAfter": "2026-07-17T10:15:00.000Z",
        "consecutiveFailures": 1,
        "windowStartedAt": "2026-07-17T10:00:00.000Z",
    }


def test_another_providers_state_and_a_corrupt_file_read_as_closed(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "circuit.json"
    breaker = CircuitBreaker(path, clock=clock)
    breaker.record_failure("other:model", "auth-error")
    assert breaker.state(KEY).state == "closed"
    path.write_text("{not json")
    assert breaker.state(KEY).state == "closed"
    assert breaker.record_failure(KEY, "rate-limited").state == "open"


def test_an_unwritable_location_never_raises(tmp_path: Path, clock: Clock) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    breaker = CircuitBreaker(blocker / "sub" / "circuit.json", clock=clock)
    assert breaker.record_failure(KEY, "rate-limited").state == "open"  # decided, not persisted
    assert breaker.state(KEY).state == "closed"


def _fail_in_child(path: str) -> None:
    CircuitBreaker(Path(path)).record_failure(KEY, "rate-limited")


def test_state_is_shared_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "circuit.json"
    child = multiprocessing.get_context("spawn").Process(target=_fail_in_child, args=(str(path),))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert CircuitBreaker(path).state(KEY).state == "open"


# -- cache ------------------------------------------------------------------------------------

H = [f"{i:064x}" for i in range(10)]


def test_a_stored_value_is_returned_until_the_ttl(tmp_path: Path, clock: Clock) -> None:
    cache = ResultCache(tmp_path / "cache.json", ttl_s=900, clock=clock)
    cache.put(H[0], {"decision": "none"})
    clock.advance(minutes=14)
    assert cache.get(H[0]) == {"decision": "none"}
    clock.advance(minutes=2)
    assert cache.get(H[0]) is None


def test_the_least_recently_used_entry_is_evicted(tmp_path: Path, clock: Clock) -> None:
    cache = ResultCache(tmp_path / "cache.json", max_entries=2, clock=clock)
    cache.put(H[0], 0)
    clock.advance(seconds=1)
    cache.put(H[1], 1)
    clock.advance(seconds=1)
    assert cache.get(H[0]) == 0  # H[0] is now more recent than H[1]
    clock.advance(seconds=1)
    cache.put(H[2], 2)
    assert (cache.get(H[0]), cache.get(H[1]), cache.get(H[2])) == (0, None, 2)
    assert len(cache) == 2


def test_keys_must_be_digests_so_no_prompt_text_can_be_a_key(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache.json")
    with pytest.raises(ValueError):
        cache.put("review my diff please", 1)
    assert cache.get("review my diff please") is None


def test_a_corrupt_cache_file_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    path.write_text("[1, 2")
    cache = ResultCache(path)
    assert cache.get(H[0]) is None
    cache.put(H[0], "v")
    assert cache.get(H[0]) == "v"
