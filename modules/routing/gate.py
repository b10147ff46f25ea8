"""The ambiguity gate (spec 000 §8.3, §9): would a semantic evaluator help on this prompt?

Pure. It reports two things:

- ``ambiguous`` and ``reasons``: which of the nine activation rules of §9.1 fired;
- ``invoke`` and ``skip_reason``: whether an evaluator would actually be called, after the
  non-activation conditions of §9.2 (disabled, mode off, invalid catalog, no admitted candidate,
  one strong candidate with a clear gap, explicit user choice, empty or unminimizable prompt,
  circuit open, model or key missing, light mode, sensitive prompt).

Configuration and the category-overlap matrix (§9.3–9.4) are versioned data in
``data/gate.json``. In milestone A no evaluator exists: the verdict is reported, never acted on.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from modules.routing.router import Candidate, Routing

__all__ = [
    "ACTIVATION_REASONS",
    "GATE_CONFIG",
    "SKIP_REASONS",
    "EvaluatorEnvironment",
    "GateVerdict",
    "assess_ambiguity",
]

with open(os.path.join(os.path.dirname(__file__), "data", "gate.json"), "rb") as _f:
    GATE_CONFIG: dict[str, Any] = json.load(_f)

ACTIVATION_REASONS = (
    "small-top-score-gap",
    "multiple-eligible-candidates",
    "near-threshold-competition",
    "primary-sidecar-overlap",
    "category-overlap",
    "composite-prompt",
    "skill-mcp-split",
    "soft-exclusion-conflict",
    "explicit-intent-mismatch",
)
SKIP_REASONS = (
    "disabled",
    "mode-off",
    "catalog-invalid",
    "empty-prompt",
    "explicit-choice",
    "no-candidates",
    "insufficient-candidates",
    "single-strong-candidate",
    "prompt-too-long",
    "circuit-open",
    "model-missing",
    "key-missing",
    "light-mode-skip",
    "sensitive-prompt",
)


class EvaluatorEnvironment:
    """Facts about the evaluator the gate cannot see in the routing (filled by the evaluator
    side; in milestone A all defaults)."""

    __slots__ = ("circuit_open", "key_missing", "model_missing", "sensitive")

    def __init__(
        self,
        *,
        circuit_open: bool = False,
        model_missing: bool = False,
        key_missing: bool = False,
        sensitive: bool = False,
    ) -> None:
        self.circuit_open = circuit_open
        self.model_missing = model_missing
        self.key_missing = key_missing
        self.sensitive = sensitive


class GateVerdict:
    __slots__ = ("ambiguous", "candidate_ids", "invoke", "reasons", "skip_reason")

    def __init__(
        self,
        *,
        ambiguous: bool,
        reasons: list[str],
        candidate_ids: list[str],
        invoke: bool,
        skip_reason: str | None,
    ) -> None:
        self.ambiguous = ambiguous
        self.reasons = reasons
        self.candidate_ids = candidate_ids
        self.invoke = invoke
        self.skip_reason = skip_reason

    def to_json(self) -> dict[str, Any]:
        return {
            "ambiguous": self.ambiguous,
            "reasons": self.reasons,
            "candidateIds": self.candidate_ids,
            "invoke": self.invoke,
            "skipReason": self.skip_reason,
        }


def _overlap(categories: Sequence[str | None], matrix: Sequence[Sequence[str]]) -> bool:
    """Two candidates whose categories form a configured pair (``[a, a]`` means "same")."""
    for pair in matrix:
        if len(pair) != 2:
            continue
        first, second = pair
        if first == second:
            if categories.count(first) >= 2:
                return True
        elif first in categories and second in categories:
            return True
    return False


def assess_ambiguity(
    routing: Routing,
    *,
    config: Mapping[str, Any] | None = None,
    catalog_valid: bool = True,
    environment: EvaluatorEnvironment | None = None,
) -> GateVerdict:
    """The gate's verdict on one deterministic routing (pure; never changes the routing)."""
    cfg = config or GATE_CONFIG
    env = environment or EvaluatorEnvironment()
    threshold = float(cfg["deterministicThreshold"])
    margin = float(cfg["ambiguityMargin"])
    near = float(cfg["nearThresholdMargin"])
    floor = threshold - near
    skills = [c for c in routing.ranked("skill") if c.score >= floor or c.lock_priority]
    admitted = skills[: int(cfg["topK"])]
    mcps = [
        c
        for c in routing.ranked("mcp")
        if c.score >= floor and c.record.get("availability") != "unavailable"
    ]
    reasons = _activation(routing, admitted, mcps, cfg, threshold, margin, floor)
    ambiguous = bool(reasons)
    ids = [c.id for c in admitted[: int(cfg["maximumCandidateCount"])]]
    skip = _skip_reason(routing, admitted, cfg, catalog_valid, env, threshold, margin)
    invoke = ambiguous and skip is None
    return GateVerdict(
        ambiguous=ambiguous,
        reasons=reasons,
        candidate_ids=ids if ambiguous else [],
        invoke=invoke,
        skip_reason=skip if skip is not None or ambiguous else None,
    )


def _activation(
    routing: Routing,
    admitted: list[Candidate],
    mcps: list[Candidate],
    cfg: Mapping[str, Any],
    threshold: float,
    margin: float,
    floor: float,
) -> list[str]:
    reasons: list[str] = []
    eligible = [c for c in admitted if c.score >= threshold]
    if len(admitted) >= 2 and admitted[0].score - admitted[1].score <= margin:
        reasons.append("small-top-score-gap")
    if len(eligible) >= 2:
        reasons.append("multiple-eligible-candidates")
    if eligible and any(floor <= c.score < threshold for c in admitted):
        reasons.append("near-threshold-competition")
    roles = {c.record.get("routingRole") for c in eligible}
    if "orchestrator" in roles and roles - {"orchestrator"}:
        reasons.append("primary-sidecar-overlap")
    if len(admitted) >= 2 and _overlap(
        [c.record.get("category") for c in admitted], cfg.get("categoryOverlap", [])
    ):
        reasons.append("category-overlap")
    if cfg.get("evaluateComposites", True) and routing.composite:
        reasons.append("composite-prompt")
    if eligible and mcps and eligible[0].record.get("routingRole") != "utility":
        reasons.append("skill-mcp-split")
    if any(c.raw_score >= threshold and c.penalty > 0 for c in admitted):
        reasons.append("soft-exclusion-conflict")
    if routing.top_intent is not None and admitted and routing.top_intent[1] != admitted[0].id:
        reasons.append("explicit-intent-mismatch")
    return reasons


def _skip_reason(
    routing: Routing,
    admitted: list[Candidate],
    cfg: Mapping[str, Any],
    catalog_valid: bool,
    env: EvaluatorEnvironment,
    threshold: float,
    margin: float,
) -> str | None:
    text = routing.prompt.text
    if not cfg.get("enabled", False):
        return "disabled"
    if cfg.get("mode", "off") == "off":
        return "mode-off"
    if not catalog_valid:
        return "catalog-invalid"
    if not text.strip():
        return "empty-prompt"
    if routing.explicit_ids:
        return "explicit-choice"
    if not admitted:
        return "no-candidates"
    if len(admitted) < int(cfg.get("minimumCandidateCount", 2)):
        first = admitted[0]
        return "single-strong-candidate" if first.score >= threshold else "insufficient-candidates"
    if admitted[0].score >= threshold and admitted[0].score - admitted[1].score > margin:
        return "single-strong-candidate"
    if len(text) > 4 * int(cfg.get("maxPromptChars", 6000)):
        return "prompt-too-long"
    if env.circuit_open:
        return "circuit-open"
    if env.model_missing:
        return "model-missing"
    if env.key_missing:
        return "key-missing"
    if routing.prompt.context_mode == "light" and cfg.get("skipEvaluatorInLightMode", True):
        return "light-mode-skip"
    if env.sensitive:
        return "sensitive-prompt"
    return None
