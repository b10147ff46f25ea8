"""The RoutingEvaluator event: exact field names, closed enums, allowlist only."""

from __future__ import annotations

from modules.routing.pack import CatalogPack
from modules.routing.pipeline import run_routing
from modules.routing.telemetry import EVENT_FIELDS, sanitize_event


def test_event_has_exactly_the_spec_fields_in_order(tesisquare: CatalogPack) -> None:
    event = run_routing("query sql sulla tabella ordini", tesisquare, ts="t", request_id="r").event
    assert tuple(event) == EVENT_FIELDS
    assert event["event"] == "RoutingEvaluator" and event["evaluator_status"] == "disabled"
    assert event["final_top"] == "mcp-database-expert" and event["decision"] == "single"


def test_sanitize_drops_unknown_fields_and_bad_values() -> None:
    dirty = {
        "prompt": "secret",
        "api_key": "sk-1",
        "model": "https://host/v1?key=1",
        "evaluator_status": "whatever",
        "candidate_ids": ["ok-id", "/etc/passwd", "A B"],
        "final_top": "../x",
        "latency_ms": "12",
    }
    clean = sanitize_event(dirty)
    assert "prompt" not in clean and "api_key" not in clean
    assert clean["model"] is None and clean["evaluator_status"] == "unexpected-error"
    assert clean["candidate_ids"] == ["ok-id"] and clean["final_top"] is None
    assert clean["latency_ms"] is None
    assert sanitize_event({"model": "ministral-3:3b-cloud"})["model"] == "ministral-3:3b-cloud"
