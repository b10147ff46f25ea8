"""The ambiguity gate: every activation rule (§9.1) and non-activation condition (§9.2, §26.1)."""

from __future__ import annotations

from typing import Any

import pytest

from modules.routing.gate import GATE_CONFIG, EvaluatorEnvironment, assess_ambiguity
from modules.routing.hotwords import parse_hotwords
from modules.routing.router import Candidate, Routing
from modules.routing.text import analyze

ENABLED = {**GATE_CONFIG, "enabled": True, "mode": "shadow"}


def _routing(
    *cands: tuple[str, float], prompt: str = "x y", composite: bool = False, **extra: Any
) -> Routing:
    parsed = parse_hotwords(prompt)
    routing = Routing(parsed, analyze(parsed.text), {})
    out = []
    for index, (ident, score) in enumerate(cands):
        role = extra.get("roles", {}).get(ident, "specialist")
        kind = "mcp" if ident.startswith("srv") else "skill"
        record = {
            "id": ident,
            "kind": kind,
            "routingRole": role,
            "category": extra.get("categories", {}).get(ident),
            "availability": extra.get("availability", {}).get(ident, "configured"),
        }
        cand = Candidate(index, record)
        cand.positive = score + extra.get("penalties", {}).get(ident, 0.0)
        cand.penalty = extra.get("penalties", {}).get(ident, 0.0)
        cand.explicit = ident in extra.get("explicit", ())
        cand.lock_priority = 1000 if cand.explicit else 0
        out.append(cand)
    routing.candidates = sorted(out, key=lambda c: (-c.lock_priority, -c.score, c.id))
    routing.composite = composite
    routing.explicit_ids = [c.id for c in out if c.explicit]
    routing.top_intent = extra.get("top_intent")
    return routing


def test_disabled_evaluator_reports_but_never_invokes() -> None:
    verdict = assess_ambiguity(_routing(("a", 5), ("b", 4.5)), config=GATE_CONFIG)
    assert verdict.ambiguous and not verdict.invoke and verdict.skip_reason == "disabled"


def test_single_strong_candidate_is_not_ambiguous() -> None:
    verdict = assess_ambiguity(_routing(("a", 8)), config=ENABLED)
    assert not verdict.ambiguous and verdict.skip_reason == "single-strong-candidate"


def test_two_candidates_with_a_wide_gap_do_not_invoke() -> None:
    verdict = assess_ambiguity(_routing(("a", 9), ("b", 3.2)), config=ENABLED)
    assert "small-top-score-gap" not in verdict.reasons
    assert not verdict.invoke and verdict.skip_reason == "single-strong-candidate"


def test_two_candidates_with_a_small_gap_invoke() -> None:
    verdict = assess_ambiguity(_routing(("a", 6), ("b", 5)), config=ENABLED)
    assert {"small-top-score-gap", "multiple-eligible-candidates"} <= set(verdict.reasons)
    assert verdict.invoke and verdict.candidate_ids == ["a", "b"]


def test_near_threshold_competition() -> None:
    near = float(ENABLED["deterministicThreshold"]) - 0.5  # within nearThresholdMargin below it
    verdict = assess_ambiguity(_routing(("a", 4), ("b", near)), config=ENABLED)
    assert "near-threshold-competition" in verdict.reasons
    assert "multiple-eligible-candidates" not in verdict.reasons


def test_orchestrator_and_specialist_both_eligible() -> None:
    r = _routing(("plan", 6), ("spec", 5.5), roles={"plan": "orchestrator"})
    assert "primary-sidecar-overlap" in assess_ambiguity(r, config=ENABLED).reasons


def test_configured_category_overlap() -> None:
    r = _routing(("a", 9), ("b", 2.5), categories={"a": "analysis", "b": "review"})
    assert "category-overlap" in assess_ambiguity(r, config=ENABLED).reasons
    r2 = _routing(("a", 9), ("b", 2.5), categories={"a": "analysis", "b": "office"})
    assert "category-overlap" not in assess_ambiguity(r2, config=ENABLED).reasons


def test_composite_prompt() -> None:
    r = _routing(("a", 6), ("b", 1), composite=True)
    assert "composite-prompt" in assess_ambiguity(r, config=ENABLED).reasons


def test_skill_and_mcp_split() -> None:
    r = _routing(("a", 6), ("srv-x", 3))
    assert "skill-mcp-split" in assess_ambiguity(r, config=ENABLED).reasons
    unavailable = _routing(("a", 6), ("srv-x", 3), availability={"srv-x": "unavailable"})
    assert "skill-mcp-split" not in assess_ambiguity(unavailable, config=ENABLED).reasons


def test_soft_exclusion_conflict() -> None:
    r = _routing(("a", 2.5), ("b", 2), penalties={"a": 2})
    assert "soft-exclusion-conflict" in assess_ambiguity(r, config=ENABLED).reasons


def test_explicit_intent_mismatch() -> None:
    r = _routing(("a", 7), ("b", 6), top_intent=("reporting", "b", 5))
    assert "explicit-intent-mismatch" in assess_ambiguity(r, config=ENABLED).reasons


def test_light_mode_skips_the_evaluator() -> None:
    r = _routing(("a", 6), ("b", 5), prompt="!light do it")
    verdict = assess_ambiguity(r, config=ENABLED)
    assert verdict.ambiguous and not verdict.invoke and verdict.skip_reason == "light-mode-skip"


def test_invalid_catalog_and_no_candidates() -> None:
    r = _routing(("a", 6), ("b", 5))
    assert assess_ambiguity(r, config=ENABLED, catalog_valid=False).skip_reason == "catalog-invalid"
    empty = assess_ambiguity(_routing(), config=ENABLED)
    assert not empty.ambiguous and not empty.invoke


def test_explicit_choice_and_empty_prompt_skip() -> None:
    r = _routing(("a", 6), ("b", 5), explicit=("a",))
    assert assess_ambiguity(r, config=ENABLED).skip_reason == "explicit-choice"
    blank = _routing(("a", 6), ("b", 5), prompt="   ")
    assert assess_ambiguity(blank, config=ENABLED).skip_reason == "empty-prompt"


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        (EvaluatorEnvironment(circuit_open=True), "circuit-open"),
        (EvaluatorEnvironment(model_missing=True), "model-missing"),
        (EvaluatorEnvironment(key_missing=True), "key-missing"),
        (EvaluatorEnvironment(sensitive=True), "sensitive-prompt"),
    ],
)
def test_evaluator_environment_conditions(env: EvaluatorEnvironment, reason: str) -> None:
    verdict = assess_ambiguity(_routing(("a", 6), ("b", 5)), config=ENABLED, environment=env)
    assert verdict.ambiguous and not verdict.invoke and verdict.skip_reason == reason


def test_mode_off_and_overlong_prompt() -> None:
    off = {**ENABLED, "mode": "off"}
    assert assess_ambiguity(_routing(("a", 6), ("b", 5)), config=off).skip_reason == "mode-off"
    long = _routing(("a", 6), ("b", 5), prompt="x " * 13000)
    assert assess_ambiguity(long, config=ENABLED).skip_reason == "prompt-too-long"


def test_gate_configuration_is_versioned_data() -> None:
    assert GATE_CONFIG["version"] == 1 and GATE_CONFIG["enabled"] is False
    assert ["analysis", "review"] in GATE_CONFIG["categoryOverlap"]
