"""Context builder (spec 000 §8.4, §24.2) and the evaluator plug in-process (§24.1, §20.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from modules.routing.evaluator import RoutingEvaluatorPlug
from modules.routing.evaluator.context import ContextLimits, build_evaluation_input
from modules.routing.gate import GATE_CONFIG, assess_ambiguity
from modules.routing.pack import CatalogPack, open_pack
from modules.routing.router import route
from tests.support.openai_server import OpenAITestServer

PACK = Path(__file__).resolve().parents[4] / "golden" / "routing" / "compiled" / "tesisquare.pack"
PROMPT = "crea un word con la procedura"
GATE = {**GATE_CONFIG, "enabled": True, "mode": "boost-only"}


@pytest.fixture(scope="module")
def pack() -> CatalogPack:
    return open_pack(PACK)


class FakeCandidate:
    def __init__(self, ident: str, kind: str = "skill", **record: Any) -> None:
        self.id, self.kind, self.rank = ident, kind, 0
        self.record = {"id": ident, "kind": kind, **record}
        self.signals = ["curated:diff", "catalog:diff", "name:review"] + [
            f"catalog:s{i}" for i in range(30)
        ]
        self.soft_warnings: list[str] = []
        self.intents: dict[str, tuple[int, float]] = {}
        self.score = 4.0


def build(shortlisted: list[Any], mcps: list[Any] = (), top_k: int = 5) -> Any:  # type: ignore[assignment]
    return build_evaluation_input(
        request_id="routing-00000000",
        prompt="p",
        language="it",
        context_mode="full",
        ambiguity_reasons=["small-top-score-gap", "small-top-score-gap", "not-a-reason"],
        shortlisted=shortlisted,
        mcps=list(mcps),
        top_k=top_k,
        max_skill_suggestions=2,
        max_mcp_suggestions=1,
    )


def test_only_the_shortlist_with_bounded_compact_cards() -> None:
    long = FakeCandidate(
        "a",
        semanticSummary="x " * 500,
        capabilities=[f"c{i}" for i in range(50)],
        body="SKILL.md body",
    )
    built = build([long, FakeCandidate("b"), FakeCandidate("c"), FakeCandidate("d")], top_k=3)
    assert [c.id for c in built.candidates] == ["a", "b", "c"]
    card = built.to_json()["candidates"][0]
    assert set(card) == {
        "id",
        "kind",
        "category",
        "routingRole",
        "semanticSummary",
        "capabilities",
        "notFor",
        "deterministicScore",
        "deterministicRank",
        "matchedSignals",
        "matchedIntentIds",
        "softWarnings",
    }
    assert len(card["semanticSummary"]) <= ContextLimits.summary_chars
    assert len(card["capabilities"]) == ContextLimits.max_capabilities
    assert card["matchedSignals"][:2] == ["diff", "review"]  # de-duplicated, first-seen order
    assert len(card["matchedSignals"]) == ContextLimits.max_signals
    assert "SKILL.md body" not in json.dumps(built.to_json())
    assert built.constraints.allowed_skill_ids == ("a", "b", "c")
    assert built.ambiguity_reasons == ("small-top-score-gap",)


def test_only_suggestable_available_mcps_are_offered() -> None:
    mcps = [
        FakeCandidate("git-node", "mcp", availability="configured"),
        FakeCandidate("gone-node", "mcp", availability="unavailable"),
        FakeCandidate("tool-node", "mcp", suggestOnly=False),
        FakeCandidate("maybe-node", "mcp"),
    ]
    built = build([FakeCandidate("a")], mcps)
    assert [(m.id, m.availability) for m in built.mcp_candidates] == [
        ("git-node", "configured"),
        ("maybe-node", "unknown"),
    ]
    assert built.constraints.allowed_mcp_ids == ("git-node", "maybe-node")


def test_the_input_from_a_real_routing_is_stable(pack: CatalogPack) -> None:
    routing = route(PROMPT, pack.lookup_many, pack.target)
    verdict = assess_ambiguity(routing, config=GATE)
    by_id = {c.id: c for c in routing.candidates}
    shortlisted = [by_id[i] for i in verdict.candidate_ids]
    one = build(shortlisted, routing.ranked("mcp")).to_json()
    two = build(shortlisted, routing.ranked("mcp")).to_json()
    assert one == two
    assert [c["id"] for c in one["candidates"]] == verdict.candidate_ids


def plug_for(server: OpenAITestServer, tmp_path: Path, **over: Any) -> RoutingEvaluatorPlug:
    section: dict[str, Any] = {
        "version": 2,
        "enabled": True,
        "mode": "boost-only",
        "profiles": {"ollama-local": {"baseUrl": server.base_url}},
    }
    section.update(over)
    return RoutingEvaluatorPlug(section, {}, state_dir=tmp_path)


ANSWER = json.dumps(
    {
        "schemaVersion": 1,
        "decision": "single",
        "skills": [
            {
                "id": "mcp-docs-navigator",
                "role": "primary",
                "relevance": 0.95,
                "reasonCode": "documentation-evidence-required",
            }
        ],
        "mcps": [],
        "confidence": 0.9,
        "ambiguityResolved": True,
    }
)


def test_a_cached_evaluation_is_revalidated_and_reused(pack: CatalogPack, tmp_path: Path) -> None:
    with OpenAITestServer(models=["ministral-3:3b"], default_answer=ANSWER) as server:
        plug = plug_for(server, tmp_path)
        routing = route(PROMPT, pack.lookup_many, pack.target)
        verdict = assess_ambiguity(routing, config=GATE)
        first = plug(routing, verdict)
        second = plug(routing, verdict)
        assert (first.status, second.status) == ("completed", "cache-hit")
        assert second.telemetry["cache_hit"] is True
        assert len(server.chat_requests()) == 1
        assert first.evaluation == second.evaluation
        # a tampered cache entry (an id outside the shortlist) is not used
        cache = tmp_path / "routing-evaluator-cache.json"
        data = json.loads(cache.read_text())
        for entry in data["entries"].values():
            entry["value"]["skills"][0]["id"] = "mcp-invented"
        cache.write_text(json.dumps(data))
        assert plug(routing, verdict).status == "completed"
        assert len(server.chat_requests()) == 2


def test_the_cache_key_holds_no_prompt_and_follows_catalog_model_and_policy(
    pack: CatalogPack, tmp_path: Path
) -> None:
    with OpenAITestServer(models=["ministral-3:3b"]) as server:
        routing = route(PROMPT, pack.lookup_many, pack.target)
        verdict = assess_ambiguity(routing, config=GATE)
        by_id = {c.id: c for c in routing.candidates}
        evaluation_input = build([by_id[i] for i in verdict.candidate_ids])
        plug = plug_for(server, tmp_path)
        settings = plug.settings()
        assert settings is not None
        key = plug.cache_key(evaluation_input, settings)
        assert len(key) == 64 and "documento" not in key
        plug.catalog_fingerprint = "sha256:other"
        assert plug.cache_key(evaluation_input, settings) != key
        for over in (
            {"policy": {"minimumConfidence": 0.8}},
            {"profiles": {"ollama-local": {"baseUrl": server.base_url, "model": "qwen3:4b"}}},
        ):
            other = plug_for(server, tmp_path, **over)
            other_settings = other.settings()
            assert other_settings is not None
            assert other.cache_key(evaluation_input, other_settings) != key


def test_an_invalid_configuration_is_off(pack: CatalogPack, tmp_path: Path) -> None:
    plug = RoutingEvaluatorPlug(
        {"version": 3, "enabled": True, "mode": "hybrid"}, {}, state_dir=tmp_path
    )
    routing = route(PROMPT, pack.lookup_many, pack.target)
    outcome = plug(routing, assess_ambiguity(routing, config=GATE))
    assert (outcome.status, outcome.mode, outcome.evaluation) == ("config-invalid", "off", None)
