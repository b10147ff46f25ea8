"""The evaluator contracts v1 (spec 000 §12–13): what the model sees and what it may answer.

- :class:`RoutingEvaluationInput` (§12.1) with :class:`RoutingCandidate` (§12.2),
  :class:`McpCandidate` (§12.3) and :class:`EvaluationConstraints` (§12.4);
- :class:`RoutingEvaluation` (§13.1) with :class:`EvaluatedTarget` — only ever built by the
  parser from output that passed every check of §8.5/§13.4;
- :data:`REASON_CODES` — the closed list of §13.2 a target's ``reasonCode`` must come from;
- :func:`evaluation_schema` — the JSON Schema of §13.3, shipped as data
  (``schema/routing-evaluation-v1.json``); it is also what the ``json-schema`` response format
  sends.

Frozen, slotted dataclasses (standard library only: this is on the hook's ambiguous path, where
importing msgspec alone would cost more than the whole evaluation overhead budget). JSON forms
use the spec's camelCase names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "AMBIGUITY_REASONS",
    "PROMPT_CONTRACT_VERSION",
    "REASON_CODES",
    "SCHEMA_VERSION",
    "EvaluatedTarget",
    "EvaluationConstraints",
    "McpCandidate",
    "RoutingCandidate",
    "RoutingEvaluation",
    "RoutingEvaluationInput",
    "evaluation_schema",
]

SCHEMA_VERSION: Literal[1] = 1
PROMPT_CONTRACT_VERSION = 1

REASON_CODES: tuple[str, ...] = (
    "exact-specialist-match",
    "multi-source-analysis",
    "workflow-orchestration",
    "static-review",
    "spec-compliance",
    "runtime-diagnostics",
    "browser-evidence-required",
    "repository-evidence-required",
    "ticket-traceability",
    "documentation-evidence-required",
    "historical-context-required",
    "data-query-required",
    "office-artifact-required",
    "composite-workflow",
    "candidate-too-generic",
    "scope-excluded",
    "insufficient-evidence",
    "no-routing-needed",
)

AMBIGUITY_REASONS: tuple[str, ...] = (
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

Decision = Literal["single", "compose", "none", "uncertain"]
Role = Literal["primary", "secondary", "supporting"]
RoutingRole = Literal["orchestrator", "specialist", "sidecar", "utility"]


@dataclass(frozen=True, slots=True)
class RoutingCandidate:
    """A shortlisted skill as the model sees it: a compact semantic card plus the router's view."""

    id: str
    category: str
    routing_role: RoutingRole
    semantic_summary: str
    capabilities: tuple[str, ...]
    not_for: tuple[str, ...]
    deterministic_score: float
    deterministic_rank: int
    matched_signals: tuple[str, ...]
    matched_intent_ids: tuple[str, ...]
    soft_warnings: tuple[str, ...]
    kind: Literal["skill"] = "skill"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "category": self.category,
            "routingRole": self.routing_role,
            "semanticSummary": self.semantic_summary,
            "capabilities": list(self.capabilities),
            "notFor": list(self.not_for),
            "deterministicScore": self.deterministic_score,
            "deterministicRank": self.deterministic_rank,
            "matchedSignals": list(self.matched_signals),
            "matchedIntentIds": list(self.matched_intent_ids),
            "softWarnings": list(self.soft_warnings),
        }


@dataclass(frozen=True, slots=True)
class McpCandidate:
    id: str
    semantic_summary: str
    capabilities: tuple[str, ...]
    availability: Literal["configured", "unknown"]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "semanticSummary": self.semantic_summary,
            "capabilities": list(self.capabilities),
            "availability": self.availability,
        }


@dataclass(frozen=True, slots=True)
class EvaluationConstraints:
    """The allowlists and limits the answer is validated against (§12.4)."""

    allowed_skill_ids: tuple[str, ...]
    allowed_mcp_ids: tuple[str, ...]
    max_skill_suggestions: int = 2
    max_mcp_suggestions: int = 1
    allow_none: bool = True
    allow_compose: bool = True
    allowed_reason_codes: tuple[str, ...] = REASON_CODES

    def to_json(self) -> dict[str, Any]:
        return {
            "allowedSkillIds": list(self.allowed_skill_ids),
            "allowedMcpIds": list(self.allowed_mcp_ids),
            "maxSkillSuggestions": self.max_skill_suggestions,
            "maxMcpSuggestions": self.max_mcp_suggestions,
            "allowNone": self.allow_none,
            "allowCompose": self.allow_compose,
            "allowedReasonCodes": list(self.allowed_reason_codes),
        }


@dataclass(frozen=True, slots=True)
class RoutingEvaluationInput:
    """Everything the model receives (§12.1); built only by the context builder."""

    request_id: str
    prompt: str
    routing_mode: Literal["full", "light"]
    ambiguity_reasons: tuple[str, ...]
    candidates: tuple[RoutingCandidate, ...]
    mcp_candidates: tuple[McpCandidate, ...]
    constraints: EvaluationConstraints
    prompt_language: str | None = None
    schema_version: Literal[1] = 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schemaVersion": self.schema_version,
            "requestId": self.request_id,
            "prompt": self.prompt,
        }
        if self.prompt_language:
            out["promptLanguage"] = self.prompt_language
        out.update(
            {
                "routingMode": self.routing_mode,
                "ambiguityReasons": list(self.ambiguity_reasons),
                "candidates": [c.to_json() for c in self.candidates],
                "mcpCandidates": [m.to_json() for m in self.mcp_candidates],
                "constraints": self.constraints.to_json(),
            }
        )
        return out


@dataclass(frozen=True, slots=True)
class EvaluatedTarget:
    id: str
    role: Role
    relevance: float
    reason_code: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "relevance": self.relevance,
            "reasonCode": self.reason_code,
        }


@dataclass(frozen=True, slots=True)
class RoutingEvaluation:
    """A validated evaluation (§13.1). Only :func:`parse_evaluator_output` creates one."""

    decision: Decision
    skills: tuple[EvaluatedTarget, ...]
    mcps: tuple[EvaluatedTarget, ...]
    confidence: float
    ambiguity_resolved: bool
    schema_version: Literal[1] = 1

    @property
    def primary(self) -> str | None:
        return next((t.id for t in self.skills if t.role == "primary"), None)

    def to_json(self) -> dict[str, Any]:
        """The §13.1 object — also the mapping the policy resolver reads."""
        return {
            "schemaVersion": self.schema_version,
            "decision": self.decision,
            "skills": [t.to_json() for t in self.skills],
            "mcps": [t.to_json() for t in self.mcps],
            "confidence": self.confidence,
            "ambiguityResolved": self.ambiguity_resolved,
        }


_SCHEMA_FILE = Path(__file__).with_name("schema") / "routing-evaluation-v1.json"


@cache
def _schema_text() -> str:
    return _SCHEMA_FILE.read_text(encoding="utf-8")


def evaluation_schema() -> dict[str, Any]:
    """The JSON Schema of §13.3 (a fresh copy each call)."""
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema
