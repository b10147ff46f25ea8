"""The routing hook's event fields and analytics' allowlist are one list, not two.

``modules/routing/telemetry.py`` (``EVENT_FIELDS``) is the single source: the hook's log writer
sanitizes every line to it. ``tht/analytics/events.py`` derives ``ALLOWED_FIELDS`` from it, less
the envelope analytics keeps as columns. These tests fail when the two drift: a field the hook
writes that analytics neither keeps nor counts as forbidden, or one analytics keeps that the hook
never writes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from modules.routing.telemetry import EVENT_FIELDS, build_event, sanitize_event
from tht.analytics.events import ALLOWED_FIELDS, ENVELOPE_FIELDS, FORBIDDEN_FIELDS
from tht.analytics.normalize import normalize_routing_event

_EVALUATOR_RAN: dict[str, Any] = {
    "evaluator_status": "completed",
    "provider_profile": "local-ollama",
    "provider_family": "ollama",
    "provider_location": "local",
    "model": "ministral-3:3b",
    "model_family": "ministral",
    "model_parameter_class": "3b",
    "model_variant": "instruct",
    "model_quantization": "q4_k_m",
    "evaluator_profile_version": "1",
    "prompt_contract_version": 1,
    "response_format": "json-schema",
    "latency_ms": 412,
    "input_tokens": 900,
    "output_tokens": 40,
    "confidence_bucket": "high",
    "cache_hit": False,
}


def _hook_lines() -> list[dict[str, Any]]:
    """What the hook writes: an event with no evaluator, one with one, and any sanitized line."""
    common: dict[str, Any] = {
        "ts": "2026-07-17T10:00:00.000Z",
        "request_id": "routing-8f77c2f9",
        "verdict": None,
        "resolution": None,
        "config": {"mode": "shadow"},
        "candidate_count": 0,
    }
    return [
        build_event(**common),
        build_event(**common, evaluator=_EVALUATOR_RAN),
        sanitize_event({"prompt": "secret", "api_key": "sk-1", **_EVALUATOR_RAN}),
    ]


def test_every_field_the_hook_writes_is_allowed_or_envelope_and_never_forbidden() -> None:
    kept = set(ALLOWED_FIELDS) | set(ENVELOPE_FIELDS)
    for line in _hook_lines():
        assert set(line) <= kept, sorted(set(line) - kept)
        assert not set(line) & FORBIDDEN_FIELDS
    assert not set(EVENT_FIELDS) & FORBIDDEN_FIELDS


def test_analytics_allows_only_fields_the_hook_writes() -> None:
    for line in _hook_lines():
        assert set(ALLOWED_FIELDS) <= set(line), sorted(set(ALLOWED_FIELDS) - set(line))
    assert set(ENVELOPE_FIELDS) <= set(EVENT_FIELDS)
    assert not set(ENVELOPE_FIELDS) & set(ALLOWED_FIELDS)


def test_the_allowlist_is_the_hook_fields_less_the_envelope_in_the_hook_order() -> None:
    assert tuple(f for f in EVENT_FIELDS if f not in ENVELOPE_FIELDS) == ALLOWED_FIELDS


def test_a_line_the_hook_writes_is_normalised_without_unknown_or_forbidden_fields() -> None:
    for line in _hook_lines()[:2]:
        warnings: Counter[str] = Counter()
        event = normalize_routing_event(line, warnings)
        assert event is not None
        assert warnings["unknown_fields"] == 0
        assert warnings["forbidden_fields"] == 0
        assert list(event.metadata) == list(ALLOWED_FIELDS)
