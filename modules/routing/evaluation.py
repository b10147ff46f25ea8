"""The routing eval runner (spec 000 §26.8, §27): cases in, metrics out. Pure.

A case (one JSON object per line)::

    {"id": "review-vs-analysis-001", "prompt": "…", "lang": "it", "split": "train",
     "categories": ["single-skill", "italian"],
     "expected": {"acceptablePrimary": ["mcp-database-expert"], "acceptableSecondary": ["sql-node"],
                  "forbidden": ["mcp-master-orchestrator"], "allowNone": false}}

Metrics (over the hints the full pipeline emits, at most two):

- ``precision_at_1``: of the cases where a hint was emitted, the share whose first hint is an
  acceptable primary;
- ``top1``: of the routable cases (``acceptablePrimary`` non-empty), the share whose first hint is
  an acceptable primary;
- ``recall_at_2``: of the routable cases, the share with an acceptable primary among the hints;
- ``none_accuracy``: of the cases expecting no routing (``acceptablePrimary`` empty), the share
  whose hints are all in ``acceptableSecondary`` (usually: no hint at all);
- ``false_positive_rate``: the share of cases with a hint that is neither acceptable primary nor
  acceptable secondary;
- ``forbidden_hits``: cases with a forbidden hint; ``pass_rate``: cases fully right (no hint and
  ``allowNone``, or an acceptable first hint, nothing unacceptable, nothing forbidden).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CaseResult", "case_result", "summarize", "validate_case"]

CATEGORIES = (
    "single-skill",
    "no-skill",
    "neighbouring-skills",
    "orchestrator-vs-specialist",
    "composite",
    "skill-plus-mcp",
    "negation",
    "mixed-positive-negative",
    "explicit-choice",
    "typos-jargon",
    "italian",
    "english",
    "mixed-language",
    "prompt-injection",
    "invented-ids",
    "sensitive",
    "very-long",
    "short-follow-up",
    "docs-vs-memory",
    "performance-visual-browser",
)


def validate_case(case: Any, where: str) -> list[str]:
    """Problems with one case (empty when valid); ``where`` names file and line."""
    problems: list[str] = []
    if not isinstance(case, dict):
        return [f"{where}: a case must be a JSON object"]
    for field in ("id", "prompt"):
        if not isinstance(case.get(field), str):
            problems.append(f"{where}: {field}: required string")
    expected = case.get("expected")
    if not isinstance(expected, dict):
        return [*problems, f"{where}: expected: required object"]
    for field in ("acceptablePrimary", "acceptableSecondary", "forbidden"):
        value = expected.get(field, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{where}: expected.{field}: must be a list of ids")
    if not isinstance(expected.get("allowNone", False), bool):
        problems.append(f"{where}: expected.allowNone: must be true or false")
    for category in case.get("categories", []) or []:
        if category not in CATEGORIES:
            problems.append(f"{where}: categories: unknown category {category!r}")
    return problems


class CaseResult:
    __slots__ = (
        "case",
        "false_positive",
        "forbidden",
        "hints",
        "none_ok",
        "passed",
        "recall2",
        "routable",
        "top1",
    )

    def __init__(self, case: dict[str, Any], hints: list[str]) -> None:
        self.case = case
        self.hints = hints
        expected = case["expected"]
        primary = set(expected.get("acceptablePrimary") or [])
        secondary = set(expected.get("acceptableSecondary") or [])
        forbidden = set(expected.get("forbidden") or [])
        allow_none = bool(expected.get("allowNone", False))
        self.routable = bool(primary)
        self.top1 = bool(hints) and hints[0] in primary
        self.recall2 = bool(primary & set(hints[:2]))
        self.none_ok = not primary and all(h in secondary for h in hints)
        self.false_positive = any(h not in primary | secondary for h in hints)
        self.forbidden = any(h in forbidden for h in hints)
        if not hints:
            self.passed = allow_none or not primary
        else:
            self.passed = (
                (self.top1 or (not primary and allow_none and self.none_ok))
                and not self.false_positive
                and not self.forbidden
            )

    def to_json(self) -> dict[str, Any]:
        return {"id": self.case["id"], "hints": self.hints, "passed": self.passed}


def case_result(case: dict[str, Any], hints: list[str]) -> CaseResult:
    return CaseResult(case, hints)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _metrics(results: list[CaseResult]) -> dict[str, Any]:
    emitted = [r for r in results if r.hints]
    routable = [r for r in results if r.routable]
    nones = [r for r in results if not r.routable]
    return {
        "cases": len(results),
        "routable": len(routable),
        "expect_none": len(nones),
        "precision_at_1": _ratio(sum(1 for r in emitted if r.top1), len(emitted)),
        "top1": _ratio(sum(1 for r in routable if r.top1), len(routable)),
        "recall_at_2": _ratio(sum(1 for r in routable if r.recall2), len(routable)),
        "none_accuracy": _ratio(sum(1 for r in nones if r.none_ok), len(nones)),
        "false_positive_rate": _ratio(sum(1 for r in results if r.false_positive), len(results)),
        "forbidden_hits": sum(1 for r in results if r.forbidden),
        "pass_rate": _ratio(sum(1 for r in results if r.passed), len(results)),
        "max_hints": max((len(r.hints) for r in results), default=0),
    }


def summarize(results: list[CaseResult]) -> dict[str, Any]:
    """Overall metrics, then per language and per category."""
    by_lang: dict[str, list[CaseResult]] = {}
    by_category: dict[str, list[CaseResult]] = {}
    for result in results:
        by_lang.setdefault(str(result.case.get("lang") or "?"), []).append(result)
        for category in result.case.get("categories") or []:
            by_category.setdefault(str(category), []).append(result)
    return {
        "overall": _metrics(results),
        "by_language": {k: _metrics(v) for k, v in sorted(by_lang.items())},
        "by_category": {k: _metrics(v) for k, v in sorted(by_category.items())},
        "failures": [r.to_json() for r in results if not r.passed],
    }
