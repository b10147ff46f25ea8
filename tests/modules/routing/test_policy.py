"""The policy resolver (§18, §26.3 deterministic parts, and the bounded evaluator boost)."""

from __future__ import annotations

from typing import Any

from modules.routing.gate import GATE_CONFIG, assess_ambiguity
from modules.routing.pack import CatalogPack
from modules.routing.policy import resolve, semantic_boost
from modules.routing.router import route

TIE = "quarterly report and weekly digest"
ENABLED = {**GATE_CONFIG, "enabled": True, "mode": "boost-only"}


def _resolve(pack: CatalogPack, prompt: str, **kw: Any):  # type: ignore[no-untyped-def]
    routing = route(prompt, pack.lookup_many, pack.target)
    verdict = assess_ambiguity(routing, config=ENABLED)
    return routing, verdict, resolve(routing, verdict, **kw)


def _evaluation(*targets: tuple[str, float], confidence: float = 0.9, decision: str = "single"):
    skills = [
        {
            "id": t,
            "role": "primary" if i == 0 else "secondary",
            "relevance": r,
            "reasonCode": "exact-specialist-match",
        }
        for i, (t, r) in enumerate(targets)
    ]
    return {
        "schemaVersion": 1,
        "decision": decision,
        "skills": skills,
        "mcps": [],
        "confidence": confidence,
        "ambiguityResolved": True,
    }


def test_boost_bands() -> None:
    assert [semantic_boost(x) for x in (0.5, 0.65, 0.74, 0.75, 0.89, 0.9, 1.0)] == [
        0,
        1,
        1,
        2,
        2,
        3,
        3,
    ]


def test_boost_only_reorders_within_the_bound(rules: CatalogPack) -> None:
    prompt = TIE  # alpha and beta tie on the curated keywords
    _routing, _verdict, base = _resolve(rules, prompt)
    assert base.hints[0].id == "alpha-report"
    _, _, boosted = _resolve(
        rules, prompt, evaluation=_evaluation(("beta-review", 0.95)), mode="boost-only"
    )
    assert boosted.hints[0].id == "beta-review" and boosted.applied
    assert boosted.adjustments == [{"id": "beta-review", "type": "boost", "value": 3}]


def test_low_confidence_and_shadow_apply_nothing(rules: CatalogPack) -> None:
    prompt = TIE
    _, _, low = _resolve(
        rules,
        prompt,
        evaluation=_evaluation(("beta-review", 0.95), confidence=0.3),
        mode="boost-only",
    )
    assert low.hints[0].id == "alpha-report" and low.fallback_reason == "low-confidence"
    _, _, shadow = _resolve(
        rules, prompt, evaluation=_evaluation(("beta-review", 0.95)), mode="shadow"
    )
    assert shadow.hints[0].id == "alpha-report" and not shadow.applied
    assert shadow.evaluator_top == "beta-review" and shadow.changed_top


def test_unknown_id_rejects_the_whole_evaluation(rules: CatalogPack) -> None:
    _, _, out = _resolve(
        rules,
        TIE,
        evaluation=_evaluation(("beta-review", 1.0), ("invented", 1.0)),
        mode="boost-only",
    )
    assert out.fallback_reason == "unknown-id" and out.adjustments == []
    assert out.hints[0].id == "alpha-report"


def test_hard_exclusion_is_never_resurrected(rules: CatalogPack) -> None:
    _routing, _verdict, out = _resolve(
        rules,
        "quarterly report of the marketing copy",
        evaluation=_evaluation(("beta-review", 1.0)),
        mode="hybrid",
    )
    assert "beta-review" not in [h.id for h in out.hints]
    assert out.fallback_reason in ("unknown-id", "policy-rejected-target")


def test_lock_and_explicit_choice_beat_any_boost(rules: CatalogPack) -> None:
    _, _, locked = _resolve(
        rules,
        "security audit of the quarterly report",
        evaluation=_evaluation(("alpha-report", 1.0)),
        mode="boost-only",
    )
    assert locked.hints[0].id == "beta-review"
    _, _, chosen = _resolve(
        rules,
        "!gamma-plan quarterly report",
        evaluation=_evaluation(("alpha-report", 1.0)),
        mode="boost-only",
    )
    assert chosen.hints[0].id == "gamma-plan" and "explicit-user-choice" in chosen.reason_codes


def test_soft_suppression_only_in_hybrid_when_allowed(rules: CatalogPack) -> None:
    ev = _evaluation(("alpha-report", 0.3))
    ev["skills"][0]["reasonCode"] = "candidate-too-generic"
    _, _, disabled = _resolve(rules, TIE, evaluation=ev, mode="hybrid")
    assert all(a["type"] != "soft-penalty" for a in disabled.adjustments)
    _, _, enabled = _resolve(
        rules, TIE, evaluation=ev, mode="hybrid", policy={"allowSoftSuppression": True}
    )
    assert {"id": "alpha-report", "type": "soft-penalty", "value": 2} in enabled.adjustments
    assert enabled.hints[0].id == "beta-review"


def test_at_most_two_skills_and_two_hints(tesisquare: CatalogPack) -> None:
    _, _, out = _resolve(tesisquare, "!mcp-docs-navigator !mcp-office-expert !mcp-database-expert")
    assert len(out.hints) == 2 and all(h.kind == "skill" for h in out.hints)


def test_unavailable_mcp_is_never_suggested(rules: CatalogPack) -> None:
    _, _, out = _resolve(rules, "!vault secret vault access")
    assert "vault" not in [h.id for h in out.hints]
    _, _, ok = _resolve(rules, "!tracker ticket tracker access")
    assert [h.to_json() for h in ok.hints] == [
        {"id": "tracker", "kind": "mcp", "role": "supporting"}
    ]


def test_ties_resolve_deterministically_by_id(rules: CatalogPack) -> None:
    first = [h.id for h in _resolve(rules, TIE)[2].hints]
    assert first == [h.id for h in _resolve(rules, TIE)[2].hints]
    assert first[0] == "alpha-report"  # alpha < beta at equal score


def test_weak_match_gives_no_hint(tesisquare: CatalogPack) -> None:
    _, _, out = _resolve(tesisquare, "grazie mille per oggi")
    assert out.hints == [] and out.reason_codes in (["weak-match"], ["no-candidates"])
