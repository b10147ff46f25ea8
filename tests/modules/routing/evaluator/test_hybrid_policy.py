"""The hybrid policy resolver with a validated evaluation: every case of spec 000 §26.3.

The deterministic routing is real (the compiled tesisquare catalog); the evaluation is the §13.1
mapping a validated evaluator answer becomes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modules.routing.gate import GATE_CONFIG, assess_ambiguity
from modules.routing.pack import CatalogPack, open_pack
from modules.routing.policy import resolve, semantic_boost
from modules.routing.router import Routing, route

PACK = Path(__file__).resolve().parents[4] / "golden" / "routing" / "compiled" / "tesisquare.pack"
PROMPT = "crea un word con la procedura"  # office-expert 3.4 vs docs-navigator 3.2: a weak tie
GATE = {**GATE_CONFIG, "enabled": True, "mode": "boost-only"}
POLICY = {"minimumConfidence": 0.7, "minimumRelevance": 0.65, "allowSoftSuppression": True}


@pytest.fixture(scope="module")
def pack() -> CatalogPack:
    return open_pack(PACK)


def routed(pack: CatalogPack, prompt: str = PROMPT) -> tuple[Routing, Any]:
    routing = route(prompt, pack.lookup_many, pack.target)
    return routing, assess_ambiguity(routing, config=GATE)


def ev(
    *targets: tuple[str, str, float, str], decision: str = "single", confidence: float = 0.9
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "decision": decision,
        "skills": [{"id": i, "role": r, "relevance": v, "reasonCode": c} for i, r, v, c in targets],
        "mcps": [],
        "confidence": confidence,
        "ambiguityResolved": True,
    }


DOCS = ("mcp-docs-navigator", "primary", 0.95, "documentation-evidence-required")


@pytest.mark.parametrize(
    ("relevance", "boost"),
    [(0.0, 0), (0.64, 0), (0.65, 1), (0.74, 1), (0.75, 2), (0.89, 2), (0.9, 3), (1.0, 3)],
)
def test_boost_follows_the_relevance_bands(pack: CatalogPack, relevance: float, boost: int) -> None:
    assert semantic_boost(relevance) == boost
    routing, verdict = routed(pack)
    out = resolve(
        routing,
        verdict,
        evaluation=ev(("mcp-docs-navigator", "primary", relevance, "static-review")),
        mode="boost-only",
        policy=POLICY,
    )
    applied = [a["value"] for a in out.adjustments if a["type"] == "boost"]
    assert applied == ([boost] if boost else [])


def test_a_raised_minimum_relevance_withholds_the_boost(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    out = resolve(
        routing,
        verdict,
        evaluation=ev(("mcp-docs-navigator", "primary", 0.8, "static-review")),
        mode="boost-only",
        policy={**POLICY, "minimumRelevance": 0.85},
    )
    assert out.adjustments == []


def test_the_boost_can_change_the_top_within_bounds(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    before = resolve(routing, verdict)
    out = resolve(routing, verdict, evaluation=ev(DOCS), mode="boost-only", policy=POLICY)
    assert before.deterministic_top == "mcp-office-expert"
    assert out.final_top == "mcp-docs-navigator"
    assert (out.source, out.applied, out.changed_top) == ("hybrid", True, True)
    assert "evaluator-boost-applied" in out.reason_codes


def test_low_confidence_applies_no_boost(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    out = resolve(
        routing, verdict, evaluation=ev(DOCS, confidence=0.5), mode="boost-only", policy=POLICY
    )
    assert (out.adjustments, out.fallback_reason, out.applied) == ([], "low-confidence", False)
    assert [h.id for h in out.hints] == [h.id for h in resolve(routing, verdict).hints]


def test_uncertain_applies_nothing(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    out = resolve(
        routing,
        verdict,
        evaluation=ev(DOCS, decision="uncertain"),
        mode="boost-only",
        policy=POLICY,
    )
    assert (out.adjustments, out.fallback_reason) == ([], "evaluation-uncertain")


def test_an_id_outside_the_shortlist_rejects_the_whole_evaluation(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    stranger = ("mcp-database-expert", "secondary", 0.9, "data-query-required")
    out = resolve(
        routing,
        verdict,
        evaluation=ev(DOCS, stranger, decision="compose"),
        mode="boost-only",
        policy=POLICY,
    )
    assert (out.fallback_reason, out.rejected, out.adjustments) == (
        "unknown-id",
        ["mcp-database-expert"],
        [],
    )


def test_a_hard_excluded_candidate_cannot_be_resurrected(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    target = next(c for c in routing.candidates if c.id == "mcp-docs-navigator")
    target.hard_excluded = True  # e.g. the user wrote "non usare docs-navigator"
    out = resolve(routing, verdict, evaluation=ev(DOCS), mode="hybrid", policy=POLICY)
    assert out.fallback_reason in ("policy-rejected-target", "unknown-id")
    assert "mcp-docs-navigator" not in [h.id for h in out.hints]


def test_a_positive_lock_is_never_overtaken(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    locked = next(c for c in routing.candidates if c.id == "mcp-office-expert")
    locked.lock_priority = 50
    out = resolve(routing, verdict, evaluation=ev(DOCS), mode="hybrid", policy=POLICY)
    assert out.hints[0].id == "mcp-office-expert"


def test_an_explicit_user_choice_is_neither_replaced_nor_suppressed(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    chosen = next(c for c in routing.candidates if c.id == "mcp-office-expert")
    chosen.explicit = True
    chosen.lock_priority = 1000
    generic = ("mcp-office-expert", "secondary", 0.1, "candidate-too-generic")
    out = resolve(
        routing,
        verdict,
        evaluation=ev(DOCS, generic, decision="compose"),
        mode="hybrid",
        policy=POLICY,
    )
    assert out.hints[0].id == "mcp-office-expert"
    assert not [a for a in out.adjustments if a["type"] == "soft-penalty"]


def test_soft_suppression_is_off_unless_enabled_and_in_hybrid(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    generic = ("mcp-office-expert", "secondary", 0.1, "candidate-too-generic")
    evaluation = ev(DOCS, generic, decision="compose")
    for mode, policy in (
        ("boost-only", POLICY),
        ("hybrid", {**POLICY, "allowSoftSuppression": False}),
    ):
        out = resolve(routing, verdict, evaluation=evaluation, mode=mode, policy=policy)
        assert not [a for a in out.adjustments if a["type"] == "soft-penalty"], mode


def test_soft_suppression_enabled_penalizes_by_two(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    generic = ("mcp-office-expert", "secondary", 0.1, "candidate-too-generic")
    out = resolve(
        routing,
        verdict,
        evaluation=ev(DOCS, generic, decision="compose"),
        mode="hybrid",
        policy=POLICY,
    )
    assert {"id": "mcp-office-expert", "type": "soft-penalty", "value": 2} in out.adjustments
    assert "evaluator-soft-suppression" in out.reason_codes
    assert out.hints[0].id == "mcp-docs-navigator"


def test_the_only_candidate_above_threshold_is_never_suppressed(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    generic = ("mcp-office-expert", "primary", 0.1, "candidate-too-generic")
    out = resolve(routing, verdict, evaluation=ev(generic), mode="hybrid", policy=POLICY)
    # docs-navigator is at 3.0: office-expert is not alone above threshold, so the penalty applies
    assert [a["type"] for a in out.adjustments] == ["soft-penalty"]
    lone = next(c for c in routing.candidates if c.id == "mcp-docs-navigator")
    lone.hard_excluded = True  # now office-expert is the only one left above the threshold
    routing2, verdict2 = routing, assess_ambiguity(routing, config=GATE)
    out2 = resolve(routing2, verdict2, evaluation=ev(generic), mode="hybrid", policy=POLICY)
    assert not [a for a in out2.adjustments if a["type"] == "soft-penalty"]


def test_never_more_than_two_hints(pack: CatalogPack) -> None:
    prompt = (
        "Parti da un ticket con allegato DOCX, verifica commit correlati e allinea con DB QA "
        "prima di rispondere"
    )
    routing, verdict = routed(pack, prompt)
    ids = verdict.candidate_ids[:2]
    targets = [(ids[0], "primary", 1.0, "composite-workflow")] + [
        (i, "secondary", 1.0, "composite-workflow") for i in ids[1:]
    ]
    out = resolve(
        routing, verdict, evaluation=ev(*targets, decision="compose"), mode="hybrid", policy=POLICY
    )
    assert len(out.hints) <= 2


def test_equal_inputs_give_equal_outputs(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    first = resolve(routing, verdict, evaluation=ev(DOCS), mode="hybrid", policy=POLICY).to_json()
    routing, verdict = routed(pack)
    assert (
        resolve(routing, verdict, evaluation=ev(DOCS), mode="hybrid", policy=POLICY).to_json()
        == first
    )


def test_shadow_and_observe_record_but_never_change(pack: CatalogPack) -> None:
    routing, verdict = routed(pack)
    base = [h.to_json() for h in resolve(routing, verdict).hints]
    for mode in ("shadow", "observe", "force-evaluate"):
        out = resolve(routing, verdict, evaluation=ev(DOCS), mode=mode, policy=POLICY)
        assert [h.to_json() for h in out.hints] == base
        assert (out.applied, out.evaluator_top) == (False, "mcp-docs-navigator")


def test_an_applied_single_admits_no_unendorsed_secondary(pack: CatalogPack) -> None:
    prompt = "rivedi il codice coldfusion e aggiorna la documentazione"
    routing, verdict = routed(pack, prompt)
    routing.composite = True  # the deterministic rule would add a secondary on a composite prompt
    plain = resolve(routing, verdict, evaluation=None, mode="boost-only", policy=POLICY)
    cf = ("mcp-coldfusion-developer", "primary", 0.95, "exact-specialist-match")
    single = resolve(routing, verdict, evaluation=ev(cf), mode="boost-only", policy=POLICY)
    assert len(plain.hints) == 2 and plain.hints[1].kind == "skill"
    assert [h.id for h in single.hints if h.kind == "skill"] == ["mcp-coldfusion-developer"]


def test_a_candidate_judged_irrelevant_is_not_added_as_secondary(pack: CatalogPack) -> None:
    prompt = "rivedi il codice coldfusion e aggiorna la documentazione"
    routing, verdict = routed(pack, prompt)
    routing.composite = True
    cf = ("mcp-coldfusion-developer", "primary", 0.95, "exact-specialist-match")
    docs = ("mcp-docs-navigator", "secondary", 0.2, "candidate-too-generic")
    out = resolve(
        routing,
        verdict,
        evaluation=ev(cf, docs, decision="compose"),
        mode="boost-only",
        policy=POLICY,
    )
    assert "mcp-docs-navigator" not in [h.id for h in out.hints]
    endorsed = ("mcp-docs-navigator", "secondary", 0.8, "documentation-evidence-required")
    out2 = resolve(
        routing,
        verdict,
        evaluation=ev(cf, endorsed, decision="compose"),
        mode="boost-only",
        policy=POLICY,
    )
    assert [h.id for h in out2.hints][:2] == ["mcp-coldfusion-developer", "mcp-docs-navigator"]
