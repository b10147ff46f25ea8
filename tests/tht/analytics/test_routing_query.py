"""``routing-evaluator`` query results against an independent computation over the fixture."""

from __future__ import annotations

import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tht.analytics.hooklog import scan_hook_log
from tht.analytics.routing_query import RoutingEvaluatorQuery, routing_evaluator, statements
from tht.analytics.store import AnalyticsStore, open_store

from .conftest import HOOK_LOG, NOW

# Spelled out from spec 000 §22.4/§22.8 rather than imported, so the check stays independent.
INVOKED = {
    "completed", "low-confidence", "invalid-output", "model-unavailable", "timeout",
    "rate-limited", "auth-error", "http-error", "network-error", "unexpected-error",
}  # fmt: skip


def _fixture_events(date_from: str, date_to: str) -> list[dict[str, Any]]:
    """The fixture's distinct RoutingEvaluator lines within [from, to] (all clean in that span)."""
    seen: set[str] = set()
    events = []
    for line in HOOK_LOG.read_text(encoding="utf-8").splitlines():
        if line in seen:
            continue
        seen.add(line)
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "RoutingEvaluator" and date_from <= event["ts"] <= date_to:
            events.append(event)
    return events


def _expected(events: list[dict[str, Any]]) -> dict[str, Any]:
    invoked = [e for e in events if e["evaluator_status"] in INVOKED]
    completed = [e for e in events if e["evaluator_status"] == "completed"]
    latencies = sorted(e["latency_ms"] for e in invoked if e["latency_ms"] is not None)

    def rate(n: int, d: int) -> float | None:
        return None if d == 0 else round(n / d, 4)

    fallbacks = len(invoked) - len(completed)
    return {
        "totals": {
            "routing_decisions": len(events),
            "ambiguity_detected": sum(e["ambiguity_detected"] for e in events),
            "evaluator_invoked": len(invoked),
            "completed": len(completed),
            "fallbacks": fallbacks,
            "changed_top_shadow": sum(e["changed_top"] and not e["applied"] for e in events),
            "changed_top_applied": sum(e["changed_top"] and e["applied"] for e in events),
            "cache_hits": sum(e["cache_hit"] for e in events),
            "sensitive_skips": sum(e["sensitive_skip"] for e in events),
            "input_tokens": sum(e["input_tokens"] or 0 for e in events),
            "output_tokens": sum(e["output_tokens"] or 0 for e in events),
        },
        "rates": {
            "ambiguity_rate": rate(sum(e["ambiguity_detected"] for e in events), len(events)),
            "invocation_rate": rate(len(invoked), len(events)),
            "completion_rate": rate(len(completed), len(invoked)),
            "fallback_rate": rate(fallbacks, len(invoked)),
            "invalid_output_rate": rate(
                sum(e["evaluator_status"] == "invalid-output" for e in events), len(invoked)
            ),
            "timeout_rate": rate(
                sum(e["evaluator_status"] == "timeout" for e in events), len(invoked)
            ),
            "disagreement_rate": rate(
                sum(e["evaluator_top"] != e["deterministic_top"] for e in completed), len(completed)
            ),
        },
        "latency_ms": _latency(latencies),
    }


def _latency(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"avg": None, "p50": None, "p95": None, "max": None}
    p95 = (
        statistics.quantiles(values, n=100, method="inclusive")[94]
        if len(values) > 1
        else values[0]
    )
    return {
        "avg": round(statistics.fmean(values), 2),
        "p50": round(float(statistics.median(values)), 2),
        "p95": round(float(p95), 2),
        "max": max(values),
    }


@pytest.fixture
def loaded(store: AnalyticsStore) -> AnalyticsStore:
    scan_hook_log(store, HOOK_LOG, now=NOW)
    return store


def test_unfiltered_totals_rates_and_latency_match_an_independent_computation(
    loaded: AnalyticsStore,
) -> None:
    result = routing_evaluator(
        loaded.conn, RoutingEvaluatorQuery(date_from="2026-07-10", date_to="2026-07-17")
    )
    expected = _expected(_fixture_events("2026-07-10", "2026-07-17T23:59:59.999Z"))
    assert result == {"ok": True, **expected, "groups": []}
    assert result["totals"]["evaluator_invoked"] > 20  # the fixture exercises the rates


def test_every_filter_restricts_to_exactly_the_matching_events(loaded: AnalyticsStore) -> None:
    query = RoutingEvaluatorQuery(
        date_from="2026-07-11T00:00:00Z",
        date_to="2026-07-16",
        provider_profiles=("ollama-cloud", "lmstudio-local", "lmstudio-lan"),
        provider_locations=("cloud", "local"),
        models=("ministral-3:3b-cloud", "mistralai/ministral-3-3b"),
        model_families=("ministral-3",),
        model_variants=("instruct",),
        evaluator_profile_versions=("ministral-3-3b-routing-v1",),
        modes=("shadow", "boost-only"),
    )
    events = [
        e
        for e in _fixture_events("2026-07-11T00:00:00.000Z", "2026-07-16T23:59:59.999Z")
        if e["provider_profile"] in {"ollama-cloud", "lmstudio-local", "lmstudio-lan"}
        and e["provider_location"] in {"cloud", "local"}
        and e["evaluator_profile_version"] == "ministral-3-3b-routing-v1"
        and e["mode"] in {"shadow", "boost-only"}
    ]
    result = routing_evaluator(loaded.conn, query)
    assert result == {"ok": True, **_expected(events), "groups": []}
    assert 0 < result["totals"]["routing_decisions"] < 100


def test_status_filter_and_latency_of_failures(loaded: AnalyticsStore) -> None:
    query = RoutingEvaluatorQuery(statuses=("timeout", "invalid-output"), date_to="2026-07-17")
    events = [
        e
        for e in _fixture_events("0", "2026-07-17T23:59:59.999Z")
        if e["evaluator_status"] in {"timeout", "invalid-output"}
    ]
    result = routing_evaluator(loaded.conn, query)
    assert result["totals"] == _expected(events)["totals"]
    assert result["latency_ms"] == _expected(events)["latency_ms"]
    assert result["rates"]["completion_rate"] == 0.0


def test_groups_carry_their_own_metrics_and_add_up_to_the_totals(loaded: AnalyticsStore) -> None:
    query = RoutingEvaluatorQuery(
        date_from="2026-07-10",
        date_to="2026-07-17",
        group_by=("provider_profile", "model_quantization", "day"),
    )
    result = routing_evaluator(loaded.conn, query)
    by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in _fixture_events("2026-07-10", "2026-07-17T23:59:59.999Z"):
        by_key[(e["provider_profile"], e["model_quantization"], e["ts"][:10])].append(e)
    assert [
        (g["provider_profile"], g["model_quantization"], g["day"]) for g in result["groups"]
    ] == sorted(by_key)
    for group in result["groups"]:
        key = (group["provider_profile"], group["model_quantization"], group["day"])
        expected = _expected(by_key[key])
        assert {k: group[k] for k in ("totals", "rates", "latency_ms")} == expected, key
    for field in ("routing_decisions", "evaluator_invoked", "completed", "input_tokens"):
        assert sum(g["totals"][field] for g in result["groups"]) == result["totals"][field]


def test_locations_are_distinguished(loaded: AnalyticsStore) -> None:
    result = routing_evaluator(loaded.conn, RoutingEvaluatorQuery(group_by=("provider_location",)))
    locations = [g["provider_location"] for g in result["groups"]]
    assert {"local", "lan", "cloud"} <= set(locations)


def test_bad_input_names_the_field() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="group_by"):
        RoutingEvaluatorQuery(group_by=("weekday",))
    with pytest.raises(ValidationError, match="statuses"):
        RoutingEvaluatorQuery(statuses=("great",))
    with pytest.raises(ValidationError, match="date_from"):
        RoutingEvaluatorQuery(date_from="last tuesday")
    with pytest.raises(ValidationError, match="extra"):
        RoutingEvaluatorQuery.model_validate({"modles": ["x"]})


def test_every_statement_of_a_filtered_query_uses_the_spec_indexes(
    loaded: AnalyticsStore,
) -> None:
    def plans(query: RoutingEvaluatorQuery) -> list[str]:
        return [
            " ".join(row[-1] for row in loaded.conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            for sql, params in statements(query)
        ]

    dated = RoutingEvaluatorQuery(
        date_from="2026-07-12", date_to="2026-07-13", group_by=("provider_profile", "day")
    )
    assert len(plans(dated)) == 4
    for plan in plans(dated):
        assert "USING INDEX idx_routing_evaluations_occurred_at" in plan, plan
    profiled = RoutingEvaluatorQuery(provider_profiles=("ollama-cloud",), statuses=("completed",))
    for plan in plans(profiled):
        assert "USING INDEX idx_routing_evaluations_profile_status" in plan, plan


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["p-a", "p-b"]), st.integers(0, 5000), st.booleans()),
        min_size=1,
        max_size=40,
    )
)
def test_percentiles_equal_statistics_on_the_same_rows(rows: list[tuple[str, int, bool]]) -> None:
    lines = [
        json.dumps(
            {
                "ts": f"2026-07-01T00:00:{i % 60:02d}.{i:03d}Z",
                "event": "RoutingEvaluator",
                "request_id": f"r-{i}",
                "mode": "shadow",
                "activation": "ambiguous-only",
                "evaluator_status": "completed" if invoked else "cache-hit",
                "provider_profile": profile,
                "latency_ms": latency,
            }
        )
        for i, (profile, latency, invoked) in enumerate(rows)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with open_store(Path(tmp) / "a.sqlite", now=NOW) as store:
            scan_hook_log(store, log, now=NOW)
            result = routing_evaluator(
                store.conn, RoutingEvaluatorQuery(group_by=("provider_profile",))
            )
    assert result["latency_ms"] == _latency(sorted(lat for _, lat, inv in rows if inv))
    for group in result["groups"]:
        mine = sorted(lat for p, lat, inv in rows if inv and p == group["provider_profile"])
        assert group["latency_ms"] == _latency(mine)
