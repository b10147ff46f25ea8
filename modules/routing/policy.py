"""The deterministic policy resolver (spec 000 §8.6, §18; milestone A).

The only component that turns candidates into final hints. Authority, strongest first (§7.1):
explicit user choice → hard exclusion / hard suppression → deterministic locks → high-confidence
deterministic match → semantic advice (bounded boost, only with a validated evaluation and a mode
that applies it) → weak lexical signals. At most two hints; MCP servers only from the catalog,
``suggestOnly`` and not ``unavailable``; nothing on a weak match, unless one skill leads it
clearly (the weak-match rescue). Every decision carries reason codes from a closed set. Pure.
"""

from __future__ import annotations

from modules.routing.router import ROUTING_CONFIG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from modules.routing.gate import GateVerdict
    from modules.routing.router import Candidate, Routing

__all__ = ["REASON_CODES", "Hint", "Resolution", "resolve", "semantic_boost"]

REASON_CODES = (
    "no-routing-requested",
    "explicit-user-choice",
    "deterministic-lock",
    "deterministic-match",
    "secondary-skill",
    "mcp-supporting",
    "weak-match",
    "weak-match-rescue",
    "semantic-rescue",
    "no-candidates",
    "ambiguous-kept-deterministic",
    "ambiguous-weak-tie",
    "agent-paired",
    "agent-unavailable",
    "evaluator-boost-applied",
    "evaluator-soft-suppression",
    "evaluator-observed",
)
FALLBACK_REASONS = (
    "no-evaluation",
    "low-confidence",
    "policy-rejected-target",
    "unknown-id",
    "evaluation-uncertain",
)


class Hint:
    __slots__ = ("agent", "id", "kind", "role")

    def __init__(self, id: str, kind: str, role: str, agent: str | None = None) -> None:
        self.id = id
        self.kind = kind
        self.role = role
        self.agent = agent

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "role": self.role}
        if self.agent:
            out["agent"] = self.agent
        return out


class Resolution:
    __slots__ = (
        "adjustments",
        "applied",
        "deterministic_top",
        "evaluator_top",
        "fallback_reason",
        "hints",
        "reason_codes",
        "rejected",
        "source",
    )

    def __init__(self) -> None:
        self.source = "deterministic"
        self.hints: list[Hint] = []
        self.reason_codes: list[str] = []
        self.fallback_reason: str | None = None
        self.adjustments: list[dict[str, Any]] = []
        self.rejected: list[str] = []
        self.deterministic_top: str | None = None
        self.evaluator_top: str | None = None
        self.applied = False

    @property
    def final_top(self) -> str | None:
        return self.hints[0].id if self.hints else None

    @property
    def changed_top(self) -> bool:
        return self.evaluator_top is not None and self.evaluator_top != self.deterministic_top

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "hints": [h.to_json() for h in self.hints],
            "reasonCodes": self.reason_codes,
            "fallbackReason": self.fallback_reason,
            "appliedSemanticAdjustments": self.adjustments,
            "rejectedEvaluatorItems": self.rejected,
            "deterministicTop": self.deterministic_top,
            "evaluatorTop": self.evaluator_top,
            "finalTop": self.final_top,
        }


def semantic_boost(relevance: float) -> int:
    """§18.4: relevance → bounded boost (0..3)."""
    if relevance >= 0.9:
        return 3
    if relevance >= 0.75:
        return 2
    if relevance >= 0.65:
        return 1
    return 0


def _pick(routing: Routing, scores: Mapping[str, float], cfg: Mapping[str, Any]) -> list[Candidate]:
    """Skills in final order: explicit, then locks, then by (possibly boosted) score, then id."""
    skills = routing.ranked("skill")
    return sorted(skills, key=lambda c: (-c.lock_priority, -scores.get(c.id, c.score), c.id))


def resolve(
    routing: Routing,
    verdict: GateVerdict | None = None,
    *,
    evaluation: Mapping[str, Any] | None = None,
    mode: str = "off",
    policy: Mapping[str, Any] | None = None,
    agents_for: Callable[[str], list[dict[str, Any]]] | None = None,
) -> Resolution:
    """Final hints for one routing. ``evaluation`` must already be validated (§13); it only acts
    in ``boost-only`` or ``hybrid`` mode, and never above explicit choice, exclusions or locks."""
    cfg = dict(ROUTING_CONFIG)
    if policy:
        cfg.update(policy)
    out = Resolution()
    if routing.prompt.none:
        out.reason_codes.append("no-routing-requested")
        return out
    threshold = float(cfg["deterministicThreshold"])
    scores = {c.id: c.score for c in routing.candidates}
    ranked = _pick(routing, scores, cfg)
    out.deterministic_top = next(
        (c.id for c in ranked if c.lock_priority or c.score >= threshold), None
    )
    if evaluation is not None:
        _apply_evaluation(out, routing, verdict, evaluation, mode, cfg, scores)
        ranked = _pick(routing, scores, cfg)

    skills = [c for c in ranked if c.lock_priority or scores[c.id] >= threshold]
    rescued = not skills and _rescue(routing, ranked, scores, cfg)
    if rescued:
        skills = ranked[:1]
    max_skills = int(cfg.get("maxSkillHints", 2))
    max_hints = int(cfg.get("maxHints", 2))
    chosen: list[Hint] = []
    if skills:
        primary = skills[0]
        if rescued:
            out.reason_codes.append("weak-match-rescue")
        elif primary.explicit:
            out.reason_codes.append("explicit-user-choice")
        elif primary.lock_priority:
            out.reason_codes.append("deterministic-lock")
        else:
            out.reason_codes.append("deterministic-match")
        if (
            verdict is not None
            and verdict.ambiguous
            and not out.applied
            and not primary.lock_priority
            and len(skills) >= 2
            and not skills[1].lock_priority
            and scores[primary.id] < threshold + float(cfg.get("ambiguousWeakMargin", 1))
            and scores[primary.id] - scores[skills[1].id] <= 0.5
            and not primary.intents
        ):
            out.reason_codes = ["ambiguous-weak-tie"]
            return out
        chosen.append(Hint(primary.id, "skill", "primary"))
        top_score = scores[primary.id]
        # an applied evaluation that says "single" admits no unendorsed secondary, and one it
        # judged irrelevant (too generic, out of scope, below minimumRelevance) is never added as
        # a secondary on the deterministic rule alone (§13.4, §18)
        single = out.applied and evaluation is not None and evaluation.get("decision") == "single"
        vetoed = _vetoed(evaluation, cfg) if out.applied and evaluation is not None else set()
        for other in [] if rescued else skills[1:]:
            if len(chosen) >= min(max_skills, max_hints):
                break
            if (
                other.explicit
                or other.lock_priority
                or (
                    not single
                    and other.id not in vetoed
                    and scores[other.id] >= float(cfg.get("secondaryRatio", 0.5)) * top_score
                    and (routing.composite or primary.record.get("routingRole") == "orchestrator")
                )
            ):
                chosen.append(Hint(other.id, "skill", "secondary"))
                out.reason_codes.append("secondary-skill")
            break
        if verdict is not None and verdict.ambiguous and not out.applied:
            out.reason_codes.append("ambiguous-kept-deterministic")
    elif routing.candidates:
        out.reason_codes.append("weak-match")
    else:
        out.reason_codes.append("no-candidates")

    if len(chosen) < max_hints:
        mcp = _mcp(routing, chosen, skills[0] if skills else None, cfg)
        if mcp is not None:
            chosen.append(Hint(mcp.id, "mcp", "supporting"))
            out.reason_codes.append("mcp-supporting")
            if "weak-match" in out.reason_codes:
                out.reason_codes.remove("weak-match")
    if routing.prompt.agents and chosen and chosen[0].kind == "skill" and agents_for is not None:
        agent = _agent(agents_for(chosen[0].id))
        if agent is not None:
            chosen[0].agent = agent
            out.reason_codes.append("agent-paired")
        else:
            out.reason_codes.append("agent-unavailable")
    out.hints = chosen[:max_hints]
    return out


def _rescue(
    routing: Routing, ranked: list[Candidate], scores: Mapping[str, float], cfg: Mapping[str, Any]
) -> bool:
    """Weak-match rescue (issue 17): no skill reached the threshold, but one leads clearly.

    The leader needs ``rescueFloor`` points from ``rescueMinSignals`` separate matches (no single
    word rescues a prompt), a ``rescueMargin`` gap and ``rescueRatio`` times the runner-up's
    score; no penalty, negation or anti-pattern of its own; and the prompt has no injection cues.
    A rescued skill is a primary alone (no secondary skill)."""
    floor = float(cfg.get("rescueFloor", 0))
    if not floor or not ranked or routing.injected:
        return False
    top = ranked[0]
    score = scores[top.id]
    others = [  # every other skill with evidence, eligible or not (a negated one still competes)
        scores.get(c.id, c.score) for c in routing.candidates if c.kind == "skill" and c is not top
    ]
    second = max([0.0, *others])
    return (
        score >= floor
        and score - second >= float(cfg.get("rescueMargin", 0.5))
        and score >= float(cfg.get("rescueRatio", 1.3)) * second
        and len(top.signals) >= int(cfg.get("rescueMinSignals", 3))
        and not (top.penalty or top.negated or top.anti or top.lock_priority)
    )


def _mcp(
    routing: Routing, chosen: list[Hint], primary: Candidate | None, cfg: Mapping[str, Any]
) -> Candidate | None:
    threshold = float(cfg.get("mcpThreshold", 3))
    for mcp in routing.ranked("mcp"):
        record = mcp.record
        if record.get("availability") == "unavailable" or record.get("suggestOnly") is False:
            continue
        if not (mcp.explicit or mcp.lock_priority or mcp.score >= threshold):
            continue
        if primary is None or mcp.explicit:
            return mcp
        compatible = mcp.id in (primary.record.get("compatibleWith") or []) or primary.id in (
            record.get("compatibleWith") or []
        )
        if compatible or mcp.score >= primary.score:
            return mcp
    return None


def _agent(agents: list[dict[str, Any]]) -> str | None:
    usable = [a for a in agents if a.get("availability") != "unavailable"]
    specialists = sorted(str(a["id"]) for a in usable if not a.get("generic"))
    if specialists:
        return specialists[0]
    generic = sorted(str(a["id"]) for a in usable if a.get("generic"))
    return generic[0] if generic else None


def _vetoed(evaluation: Mapping[str, Any], cfg: Mapping[str, Any]) -> set[str]:
    minimum = float(cfg.get("minimumRelevance", 0.65))
    return {
        str(t.get("id"))
        for t in evaluation.get("skills") or []
        if t.get("reasonCode") in ("candidate-too-generic", "scope-excluded")
        or float(t.get("relevance", 0)) < minimum
    }


def _apply_evaluation(
    out: Resolution,
    routing: Routing,
    verdict: GateVerdict | None,
    evaluation: Mapping[str, Any],
    mode: str,
    cfg: Mapping[str, Any],
    scores: dict[str, float],
) -> None:
    """Bounded semantic adjustment (§18.4–18.5). Any policy violation rejects it whole."""
    skills = list(evaluation.get("skills") or [])
    if skills:
        out.evaluator_top = next(
            (str(t["id"]) for t in skills if t.get("role") == "primary"), str(skills[0]["id"])
        )
    allowed = set(verdict.candidate_ids) if verdict is not None else set()
    by_id = {c.id: c for c in routing.candidates}
    for target in skills:
        candidate = by_id.get(str(target.get("id")))
        if candidate is None or candidate.id not in allowed:
            out.rejected.append(str(target.get("id")))
            out.fallback_reason = "unknown-id"
            out.source = "fallback"
            return
        if not candidate.eligible:
            out.rejected.append(candidate.id)
            out.fallback_reason = "policy-rejected-target"
            out.source = "fallback"
            return
    if evaluation.get("decision") == "uncertain":
        out.fallback_reason = "evaluation-uncertain"
        out.source = "fallback"
        return
    if float(evaluation.get("confidence", 0)) < float(cfg.get("minimumConfidence", 0.7)):
        out.fallback_reason = "low-confidence"
        out.source = "fallback"
        return
    if mode not in ("boost-only", "hybrid"):
        out.reason_codes.append("evaluator-observed")
        return
    minimum_relevance = float(cfg.get("minimumRelevance", 0.65))
    for target in skills:
        relevance = float(target.get("relevance", 0))
        boost = semantic_boost(relevance) if relevance >= minimum_relevance else 0
        if boost:
            scores[str(target["id"])] = round(scores[str(target["id"])] + boost, 2)
            out.adjustments.append({"id": target["id"], "type": "boost", "value": boost})
    if mode == "hybrid" and cfg.get("allowSoftSuppression", False):
        threshold = float(cfg["deterministicThreshold"])
        above = [c for c in routing.ranked("skill") if scores[c.id] >= threshold]
        for target in skills:
            candidate = by_id[str(target["id"])]
            if (  # §18.5: every condition, or no suppression
                target.get("reasonCode") in ("candidate-too-generic", "scope-excluded")
                and float(target.get("relevance", 0)) < minimum_relevance
                and not candidate.lock_priority
                and not candidate.explicit
                and any(other.id != candidate.id for other in above)
            ):
                scores[candidate.id] = round(scores[candidate.id] - 2, 2)
                out.adjustments.append({"id": candidate.id, "type": "soft-penalty", "value": 2})
                if "evaluator-soft-suppression" not in out.reason_codes:
                    out.reason_codes.append("evaluator-soft-suppression")
    out.source = "hybrid"
    out.applied = bool(out.adjustments)
    if out.applied:
        out.reason_codes.append("evaluator-boost-applied")
