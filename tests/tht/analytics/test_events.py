"""The RoutingEvaluator vocabulary and line normalisation: allowlist, forbidden fields, enums."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tht.analytics.events import (
    ALLOWED_FIELDS,
    AMBIGUITY_REASONS,
    EVALUATOR_STATUSES,
    MODES,
    is_identifier,
    normalize_timestamp,
)
from tht.analytics.normalize import normalize_routing_event

from .conftest import HOOK_LOG

SPEC_EXAMPLE: dict[str, Any] = json.loads(HOOK_LOG.read_text(encoding="utf-8").splitlines()[0])


def _normalize(**changes: Any) -> tuple[Any, Counter[str]]:
    warnings: Counter[str] = Counter()
    return normalize_routing_event({**SPEC_EXAMPLE, **changes}, warnings), warnings


def test_the_spec_example_is_kept_field_for_field_without_warnings() -> None:
    event, warnings = _normalize()
    assert warnings == Counter()
    assert event.occurred_at == "2026-07-17T10:00:00.000Z"
    assert event.hook_name == "sophia-user-prompt-submit"
    assert event.request_id == "routing-8f77c2f9"
    assert list(event.metadata) == list(ALLOWED_FIELDS)
    for name in ALLOWED_FIELDS:
        assert event.metadata[name] == SPEC_EXAMPLE[name], name


def test_forbidden_and_unknown_fields_are_dropped_and_counted() -> None:
    event, warnings = _normalize(
        prompt="hello", api_key="sk-1", raw_response="{}", file_path="/x", surprise=1
    )
    assert warnings["forbidden_fields"] == 4
    assert warnings["unknown_fields"] == 1
    assert set(event.metadata) == set(ALLOWED_FIELDS)


def test_unknown_enum_values_are_never_stored_verbatim() -> None:
    event, warnings = _normalize(
        mode="turbo",
        evaluator_status="HTTP 500: body of the provider",
        provider_location="moon",
        fallback_reason="Traceback: ...",
        ambiguity_reasons=["small-top-score-gap", "vibes"],
    )
    meta = event.metadata
    assert meta["mode"] == "unknown"
    assert meta["evaluator_status"] == "unexpected-error"  # never a success
    assert meta["provider_location"] == "unknown"
    assert meta["fallback_reason"] == "unknown"
    assert meta["ambiguity_reasons"] == ["small-top-score-gap", "unknown"]
    assert warnings["unknown_enum_values"] == 5


def test_numbers_are_clamped_and_booleans_must_be_booleans() -> None:
    event, warnings = _normalize(
        latency_ms=-3, input_tokens=10**13, output_tokens=12.6, changed_top="yes", applied=1
    )
    meta = event.metadata
    assert (meta["latency_ms"], meta["input_tokens"], meta["output_tokens"]) == (0, 10_000_000, 13)
    assert meta["changed_top"] is False
    assert meta["applied"] is True
    assert warnings["clamped_numbers"] == 2
    assert warnings["invalid_values"] == 1


def test_identifiers_reject_paths_urls_and_text() -> None:
    assert is_identifier("mistralai/ministral-3-3b")
    assert is_identifier("ministral-3:3b-cloud")
    for bad in ("/home/a/model.gguf", "https://x/y", "C:/x", "../etc", "two words", "", "a" * 129):
        assert not is_identifier(bad), bad
    event, warnings = _normalize(model="/home/a/m.gguf", candidate_ids=["ok-id", "not ok"])
    assert event.metadata["model"] is None
    assert event.metadata["candidate_ids"] == ["ok-id"]
    assert warnings["invalid_values"] == 2


def test_other_events_and_lines_without_a_time_are_not_kept() -> None:
    warnings: Counter[str] = Counter()
    assert (
        normalize_routing_event({"event": "SkillHint", "ts": "2026-07-17T10:00:00Z"}, warnings)
        is None
    )
    assert normalize_routing_event({**SPEC_EXAMPLE, "ts": "yesterday"}, warnings) is None
    assert warnings["invalid_timestamp"] == 1


def test_timestamps_become_canonical_utc_text() -> None:
    assert normalize_timestamp("2026-07-18T09:15:00+02:00") == "2026-07-18T07:15:00.000Z"
    assert normalize_timestamp("2026-07-18T09:15:00.123456Z") == "2026-07-18T09:15:00.123Z"
    assert normalize_timestamp("2026-07-18") == "2026-07-18T00:00:00.000Z"
    assert normalize_timestamp(1_700_000_000) is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    st.dictionaries(
        st.sampled_from([*ALLOWED_FIELDS, "prompt", "api_key", "whatever"]), _json, max_size=20
    )
)
def test_whatever_a_line_holds_only_allowlisted_safe_values_come_out(
    fields: dict[str, Any],
) -> None:
    raw = {**fields, "event": "RoutingEvaluator", "ts": "2026-07-17T10:00:00Z", "request_id": "r1"}
    event = normalize_routing_event(raw, Counter())
    assert event is not None
    meta = event.metadata
    assert list(meta) == list(ALLOWED_FIELDS)
    assert meta["mode"] in MODES | {"unknown"}
    assert meta["evaluator_status"] in EVALUATOR_STATUSES
    assert set(meta["ambiguity_reasons"]) <= AMBIGUITY_REASONS | {"unknown"}
    for value in meta.values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            assert item is None or isinstance(item, bool | int | str)
            if isinstance(item, str):
                assert " " not in item and is_identifier(item)
    latency = meta["latency_ms"]
    assert latency is None or 0 <= latency <= 600_000
