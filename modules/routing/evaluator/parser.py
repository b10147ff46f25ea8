"""The evaluator output parser and validator (spec 000 §8.5, §13.4, §24.3). Pure.

The model's text passes, in order: size limit → safe JSON extraction → JSON parse → schema (§13.3)
→ version → allowlisted ids → numeric ranges → cardinality → decision coherence → no extra fields
→ allowed reason codes. The first violation rejects the *whole* evaluation: nothing of a rejected
answer is ever applied (§13.4: rejecting whole is safer than applying in part).

Production accepts only a pure JSON object (optional surrounding whitespace). ``diagnostic=True``
(eval runs only) also digs an object out of a code fence or surrounding prose, to measure how often
a model *would* have been usable.

A rejection carries a closed code (:data:`REJECTIONS`) and a field path built from the contract's
own names (``skills[1].reasonCode``) — never text from the model's answer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from modules.routing.evaluator.contracts import (
    EvaluatedTarget,
    EvaluationConstraints,
    RoutingEvaluation,
)

__all__ = ["REJECTIONS", "ParseOutcome", "Rejection", "parse_evaluator_output"]

Rejection = Literal[
    "empty-output",
    "response-too-large",
    "not-pure-json-object",
    "truncated-json",
    "invalid-json",
    "anomalous-keys",
    "schema-violation",
    "version-mismatch",
    "unknown-id",
    "out-of-range",
    "cardinality",
    "incoherent-decision",
    "extra-fields",
    "unknown-reason-code",
]
REJECTIONS: tuple[Rejection, ...] = get_args(Rejection)

DEFAULT_MAX_CHARS = 8000
_TOP_FIELDS = ("schemaVersion", "decision", "skills", "mcps", "confidence", "ambiguityResolved")
_TARGET_FIELDS = ("id", "role", "relevance", "reasonCode")
_DECISIONS = ("single", "compose", "none", "uncertain")
_ROLES = ("primary", "secondary", "supporting")
_ANOMALOUS = frozenset({"__proto__", "constructor", "prototype"})
_FENCE = re.compile(r"```(?:json|JSON)?\s*(\{.*\})\s*```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """Either a validated ``evaluation`` or a ``rejection`` (with a safe ``where``)."""

    evaluation: RoutingEvaluation | None
    rejection: Rejection | None = None
    where: str | None = None

    @property
    def ok(self) -> bool:
        return self.evaluation is not None


class _Reject(Exception):
    def __init__(self, code: Rejection, where: str | None = None) -> None:
        self.code: Rejection = code
        self.where = where


def parse_evaluator_output(
    raw_text: str,
    constraints: EvaluationConstraints,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    diagnostic: bool = False,
) -> ParseOutcome:
    """Validate one model answer against the v1 contract and ``constraints``."""
    try:
        return ParseOutcome(_parse(raw_text, constraints, max_chars, diagnostic))
    except _Reject as rejected:
        return ParseOutcome(None, rejected.code, rejected.where)


def _parse(
    raw_text: str, constraints: EvaluationConstraints, max_chars: int, diagnostic: bool
) -> RoutingEvaluation:
    # 1. size
    if not isinstance(raw_text, str) or not raw_text.strip():
        raise _Reject("empty-output")
    if len(raw_text) > max_chars:
        raise _Reject("response-too-large")
    # 2. safe extraction
    text = _extract(raw_text.strip(), diagnostic)
    # 3. parse (duplicate and prototype-like keys are anomalies, NaN/Infinity are not JSON)
    data = _loads(text)
    if not isinstance(data, dict):
        raise _Reject("not-pure-json-object")
    # 4.–10. schema, version, allowlist, ranges, cardinality, coherence, extras
    _check_top(data)
    skills = _targets(data["skills"], "skills")
    mcps = _targets(data["mcps"], "mcps")
    _check_allowlist(skills, constraints.allowed_skill_ids, "skills")
    _check_allowlist(mcps, constraints.allowed_mcp_ids, "mcps")
    _check_cardinality(skills, mcps, constraints)
    _check_coherence(data["decision"], skills, mcps, constraints)
    # 11. reason codes
    allowed = frozenset(constraints.allowed_reason_codes)
    for field, targets in (("skills", skills), ("mcps", mcps)):
        for i, target in enumerate(targets):
            if target.reason_code not in allowed:
                raise _Reject("unknown-reason-code", f"{field}[{i}].reasonCode")
    return RoutingEvaluation(
        decision=data["decision"],
        skills=tuple(skills),
        mcps=tuple(mcps),
        confidence=float(data["confidence"]),
        ambiguity_resolved=data["ambiguityResolved"],
    )


def _extract(text: str, diagnostic: bool) -> str:
    if text.startswith("{") and text.endswith("}"):
        return text
    if not diagnostic:
        if text.startswith("{"):
            raise _Reject("truncated-json")
        raise _Reject("not-pure-json-object")
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start == -1:
        raise _Reject("not-pure-json-object")
    if end < start:
        raise _Reject("truncated-json")
    return text[start : end + 1]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out or key in _ANOMALOUS:
            raise _Reject("anomalous-keys")
        out[key] = value
    return out


def _no_constant(_name: str) -> Any:
    raise _Reject("invalid-json")


def _loads(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()) - 1 or "Unterminated" in err.msg:
            raise _Reject("truncated-json") from None
        raise _Reject("invalid-json") from None
    except RecursionError:
        raise _Reject("invalid-json") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_top(data: Mapping[str, Any]) -> None:
    for field in _TOP_FIELDS:
        if field not in data:
            raise _Reject("schema-violation", field)
    if len(data) != len(_TOP_FIELDS):
        raise _Reject("extra-fields", "(top level)")
    version = data["schemaVersion"]
    if not _is_number(version):
        raise _Reject("schema-violation", "schemaVersion")
    if version != 1:
        raise _Reject("version-mismatch", "schemaVersion")
    if data["decision"] not in _DECISIONS:
        raise _Reject("schema-violation", "decision")
    for field in ("skills", "mcps"):
        if not isinstance(data[field], list):
            raise _Reject("schema-violation", field)
        if len(data[field]) > 2:
            raise _Reject("cardinality", field)
    if not _is_number(data["confidence"]):
        raise _Reject("schema-violation", "confidence")
    if not math.isfinite(data["confidence"]) or not 0 <= data["confidence"] <= 1:
        raise _Reject("out-of-range", "confidence")
    if not isinstance(data["ambiguityResolved"], bool):
        raise _Reject("schema-violation", "ambiguityResolved")


def _targets(items: list[Any], field: str) -> list[EvaluatedTarget]:
    out: list[EvaluatedTarget] = []
    for i, item in enumerate(items):
        where = f"{field}[{i}]"
        if not isinstance(item, dict):
            raise _Reject("schema-violation", where)
        for name in _TARGET_FIELDS:
            if name not in item:
                raise _Reject("schema-violation", f"{where}.{name}")
        if len(item) != len(_TARGET_FIELDS):
            raise _Reject("extra-fields", where)
        ident, role, relevance, reason = (item[n] for n in _TARGET_FIELDS)
        if not isinstance(ident, str) or not 1 <= len(ident) <= 120:
            raise _Reject("schema-violation", f"{where}.id")
        if role not in _ROLES:
            raise _Reject("schema-violation", f"{where}.role")
        if not _is_number(relevance):
            raise _Reject("schema-violation", f"{where}.relevance")
        if not math.isfinite(relevance) or not 0 <= relevance <= 1:
            raise _Reject("out-of-range", f"{where}.relevance")
        if not isinstance(reason, str) or not 1 <= len(reason) <= 80:
            raise _Reject("schema-violation", f"{where}.reasonCode")
        out.append(
            EvaluatedTarget(id=ident, role=role, relevance=float(relevance), reason_code=reason)
        )
    return out


def _check_allowlist(targets: list[EvaluatedTarget], allowed: tuple[str, ...], field: str) -> None:
    permitted = frozenset(allowed)
    for i, target in enumerate(targets):
        if target.id not in permitted:
            raise _Reject("unknown-id", f"{field}[{i}].id")


def _check_cardinality(
    skills: list[EvaluatedTarget], mcps: list[EvaluatedTarget], constraints: EvaluationConstraints
) -> None:
    if len(skills) > constraints.max_skill_suggestions:
        raise _Reject("cardinality", "skills")
    if len(mcps) > constraints.max_mcp_suggestions:
        raise _Reject("cardinality", "mcps")
    for field, targets in (("skills", skills), ("mcps", mcps)):
        if len({t.id for t in targets}) != len(targets):
            raise _Reject("cardinality", field)


def _check_coherence(
    decision: str,
    skills: list[EvaluatedTarget],
    mcps: list[EvaluatedTarget],
    constraints: EvaluationConstraints,
) -> None:
    primaries = sum(1 for t in skills if t.role == "primary")
    for i, target in enumerate(skills):
        if target.role == "supporting":
            raise _Reject("incoherent-decision", f"skills[{i}].role")
    for i, target in enumerate(mcps):
        if target.role != "supporting":
            raise _Reject("incoherent-decision", f"mcps[{i}].role")
    if decision == "single":
        if len(skills) != 1 or primaries != 1:
            raise _Reject("incoherent-decision", "decision")
    elif decision == "compose":
        if not constraints.allow_compose or not 1 <= len(skills) <= 2 or primaries != 1:
            raise _Reject("incoherent-decision", "decision")
    elif decision == "none":
        if not constraints.allow_none or skills or mcps:
            raise _Reject("incoherent-decision", "decision")
    elif primaries > 1:  # uncertain: no boost is ever applied, but the shape must still hold
        raise _Reject("incoherent-decision", "decision")
