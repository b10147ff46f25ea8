"""The evaluator context builder (spec 000 §8.4, §12, §21.1, §24.2). Pure.

From the deterministic routing and the gate's verdict it builds the one thing the model will see, a
:class:`RoutingEvaluationInput`:

- the prompt without hotwords, redacted (keys, tokens, passwords, connection strings, key blocks,
  JWTs, cookies, home paths) and bounded to ``maxPromptChars``;
- only the gate's shortlisted skills (at most ``topK``), each as a compact semantic card from the
  catalog (category, role, summary, capabilities, notFor) plus the router's view (score, rank,
  matched signals and intents, soft warnings) — never a SKILL.md body, a path, a tool schema;
- only MCP servers that scored, are suggest-only and are not ``unavailable``;
- allowlists (exactly those ids) and the closed reason codes;
- stable order (the verdict's order; signals de-duplicated in first-seen order) and hard size
  limits on every list and string, so the serialized input is bounded whatever the catalog holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from modules.routing.evaluator.contracts import (
    AMBIGUITY_REASONS,
    REASON_CODES,
    EvaluationConstraints,
    McpCandidate,
    RoutingCandidate,
    RoutingEvaluationInput,
)

__all__ = ["ContextLimits", "build_evaluation_input"]

_ROLES = ("orchestrator", "specialist", "sidecar", "utility")


class ContextLimits:
    """Hard bounds of the serialized input (besides the prompt's own ``max_prompt_chars``)."""

    summary_chars = 240
    item_chars = 60
    max_capabilities = 8
    max_not_for = 6
    max_signals = 8
    max_intents = 4
    max_warnings = 4
    max_mcps = 3


class _Candidate(Protocol):  # the router's Candidate, structurally
    id: str
    kind: str
    record: dict[str, Any]
    signals: list[str]
    soft_warnings: list[str]
    intents: dict[str, tuple[int, float]]
    rank: int

    @property
    def score(self) -> float: ...


def _text(value: Any, limit: int) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text[:limit]


def _items(
    values: Iterable[Any] | None, count: int, limit: int = ContextLimits.item_chars
) -> tuple[str, ...]:
    out: list[str] = []
    seen: set[str] = set()
    for value in values or ():
        text = _text(value, limit)
        if text and text not in seen:
            seen.add(text)
            out.append(text)
        if len(out) >= count:
            break
    return tuple(out)


def _signal_label(signal: str) -> str:
    """``curated:diff`` → ``diff``; the signal's kind is the router's business."""
    return signal.split(":", 1)[1] if ":" in signal else signal


def _card(candidate: _Candidate, position: int) -> RoutingCandidate:
    record: Mapping[str, Any] = candidate.record
    role = record.get("routingRole")
    return RoutingCandidate(
        id=candidate.id,
        category=_text(record.get("category") or "general", ContextLimits.item_chars),
        routing_role=role if role in _ROLES else "specialist",
        semantic_summary=_text(
            record.get("semanticSummary") or record.get("description") or "",
            ContextLimits.summary_chars,
        ),
        capabilities=_items(record.get("capabilities"), ContextLimits.max_capabilities),
        not_for=_items(record.get("notFor"), ContextLimits.max_not_for),
        deterministic_score=round(float(candidate.score), 2),
        deterministic_rank=int(candidate.rank or position),
        matched_signals=_items(
            (_signal_label(s) for s in candidate.signals), ContextLimits.max_signals
        ),
        matched_intent_ids=_items(sorted(candidate.intents), ContextLimits.max_intents),
        soft_warnings=_items(candidate.soft_warnings, ContextLimits.max_warnings),
    )


def _mcp(candidate: _Candidate) -> McpCandidate:
    record = candidate.record
    return McpCandidate(
        id=candidate.id,
        semantic_summary=_text(record.get("semanticSummary") or "", ContextLimits.summary_chars),
        capabilities=_items(record.get("capabilities"), ContextLimits.max_capabilities),
        availability="configured" if record.get("availability") == "configured" else "unknown",
    )


def build_evaluation_input(
    *,
    request_id: str,
    prompt: str,
    language: str | None,
    context_mode: str,
    ambiguity_reasons: Sequence[str],
    shortlisted: Sequence[_Candidate],
    mcps: Sequence[_Candidate],
    top_k: int,
    max_skill_suggestions: int,
    max_mcp_suggestions: int,
) -> RoutingEvaluationInput:
    """The minimized input. ``prompt`` must already be redacted and bounded (``redact_prompt``);
    ``shortlisted`` is the gate's candidate list in its order; ``mcps`` the router's MCP ranking."""
    skills = [c for c in shortlisted if c.kind == "skill"][: max(0, top_k)]
    cards = tuple(_card(c, i + 1) for i, c in enumerate(skills))
    servers = tuple(
        _mcp(c)
        for c in [
            m
            for m in mcps
            if m.kind == "mcp"
            and m.record.get("availability") != "unavailable"
            and m.record.get("suggestOnly") is not False
        ][: ContextLimits.max_mcps]
    )
    reasons = tuple(r for r in dict.fromkeys(ambiguity_reasons) if r in AMBIGUITY_REASONS)
    return RoutingEvaluationInput(
        request_id=request_id,
        prompt=prompt,
        prompt_language=language if language in ("it", "en") else None,
        routing_mode="light" if context_mode == "light" else "full",
        ambiguity_reasons=reasons,
        candidates=cards,
        mcp_candidates=servers,
        constraints=EvaluationConstraints(
            allowed_skill_ids=tuple(c.id for c in cards),
            allowed_mcp_ids=tuple(m.id for m in servers),
            max_skill_suggestions=max_skill_suggestions,
            max_mcp_suggestions=min(max_mcp_suggestions, len(servers)),
            allow_none=True,
            allow_compose=True,
            allowed_reason_codes=REASON_CODES,
        ),
    )
