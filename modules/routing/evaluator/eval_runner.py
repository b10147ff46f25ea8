"""Eval runs with an evaluator (spec 000 §16.7, §27.3–27.5): the deterministic router against the
same router plus an evaluator — a live profile or the *oracle*.

The oracle reads the expected labels of the case being run and answers what a perfect model would
(the acceptable primary among the shortlist, and the wrong shortlisted candidate marked
``candidate-too-generic``). Its answer goes through the same validator and the same policy
resolver as a model's, so its scores measure the best *the policy* can do with perfect advice.

Reported per run: quality (precision@1, recall@2, none accuracy, false-positive rate, pass rate),
on the ambiguous cases (those the gate sends to the evaluator) the false positives before and
after and their reduction, and for live profiles JSON validity rate, statuses, p50/p95 latency and
tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from modules.routing.evaluation import CaseResult, case_result, summarize
from modules.routing.evaluator.contracts import REASON_CODES, EvaluationConstraints
from modules.routing.evaluator.parser import parse_evaluator_output

__all__ = ["OracleEvaluator", "compare_runs", "run_cases"]

_VALID = ("completed", "low-confidence", "cache-hit")


class OracleEvaluator:
    """``evaluate(routing, verdict)`` that answers from the current case's expected labels."""

    def __init__(self, *, mode: str = "hybrid", policy: Mapping[str, Any] | None = None) -> None:
        self.mode = mode
        self.policy = dict(
            policy
            or {
                "minimumConfidence": 0.7,
                "minimumRelevance": 0.65,
                "allowSoftSuppression": mode == "hybrid",
            }
        )
        self.case: Mapping[str, Any] | None = None

    def answer(self, shortlist: list[str]) -> dict[str, Any]:
        expected = (self.case or {}).get("expected") or {}
        primary = set(expected.get("acceptablePrimary") or [])
        fine = primary | set(expected.get("acceptableSecondary") or [])
        good = [i for i in shortlist if i in primary]
        wrong = [i for i in shortlist if i not in fine]
        skills: list[dict[str, Any]] = []
        if good:
            skills.append(_target(good[0], "primary", 1.0, "exact-specialist-match"))
            if wrong:
                skills.append(_target(wrong[0], "secondary", 0.0, "candidate-too-generic"))
        elif wrong:  # nothing acceptable was shortlisted: both wrong ones are too generic
            skills.append(_target(wrong[0], "primary", 0.0, "candidate-too-generic"))
            if len(wrong) > 1:
                skills.append(_target(wrong[1], "secondary", 0.0, "candidate-too-generic"))
        decision = "none" if not skills else ("compose" if len(skills) == 2 else "single")
        return {
            "schemaVersion": 1,
            "decision": decision,
            "skills": skills,
            "mcps": [],
            "confidence": 1.0,
            "ambiguityResolved": True,
        }

    def __call__(self, routing: Any, verdict: Any) -> Any:
        from modules.routing.pipeline import EvaluatorOutcome

        shortlist = list(verdict.candidate_ids)
        constraints = EvaluationConstraints(
            allowed_skill_ids=tuple(shortlist),
            allowed_mcp_ids=(),
            allowed_reason_codes=REASON_CODES,
        )
        parsed = parse_evaluator_output(json.dumps(self.answer(shortlist)), constraints)
        if parsed.evaluation is None:  # the oracle obeys the contract like any model
            return EvaluatorOutcome(status="invalid-output", mode=self.mode, policy=self.policy)
        return EvaluatorOutcome(
            status="completed",
            mode=self.mode,
            evaluation=parsed.evaluation.to_json(),
            telemetry={
                "provider_profile": "oracle",
                "decision": parsed.evaluation.decision,
                "confidence_bucket": "high",
            },
            policy=self.policy,
        )


def _target(ident: str, role: str, relevance: float, reason: str) -> dict[str, Any]:
    return {"id": ident, "role": role, "relevance": relevance, "reasonCode": reason}


def run_cases(
    cases: Iterable[Mapping[str, Any]],
    route_case: Callable[[Mapping[str, Any]], Any],
) -> tuple[list[CaseResult], list[dict[str, Any]], list[bool]]:
    """Route every case; returns results, events and whether the gate invoked the evaluator."""
    results: list[CaseResult] = []
    events: list[dict[str, Any]] = []
    invoked: list[bool] = []
    for case in cases:
        outcome = route_case(case)
        results.append(case_result(dict(case), [h.id for h in outcome.resolution.hints]))
        events.append(outcome.event)
        invoked.append(bool(outcome.verdict.invoke))
    return results, events, invoked


def _percentile(values: list[int], q: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def compare_runs(
    baseline: list[CaseResult],
    evaluated: list[CaseResult],
    events: list[dict[str, Any]],
    invoked: list[bool],
) -> dict[str, Any]:
    """Quality of both runs, the ambiguous subset before/after, and provider statistics."""
    amb_base = [r for r, inv in zip(baseline, invoked, strict=True) if inv]
    amb_eval = [r for r, inv in zip(evaluated, invoked, strict=True) if inv]
    fp_before = sum(1 for r in amb_base if r.false_positive)
    fp_after = sum(1 for r in amb_eval if r.false_positive)
    statuses: dict[str, int] = {}
    latencies: list[int] = []
    tokens_in = tokens_out = 0
    for event, inv in zip(events, invoked, strict=True):
        if not inv:
            continue
        status = str(event.get("evaluator_status"))
        statuses[status] = statuses.get(status, 0) + 1
        if isinstance(event.get("latency_ms"), int):
            latencies.append(event["latency_ms"])
        tokens_in += int(event.get("input_tokens") or 0)
        tokens_out += int(event.get("output_tokens") or 0)
    valid = sum(statuses.get(s, 0) for s in _VALID)
    judged = valid + statuses.get("invalid-output", 0)
    amb_det = summarize(amb_base)["overall"] if amb_base else {}
    amb_hyb = summarize(amb_eval)["overall"] if amb_eval else {}
    return {
        "deterministic": summarize(baseline)["overall"],
        "evaluated": summarize(evaluated)["overall"],
        "ambiguous": {
            "cases": len(amb_base),
            "false_positives_deterministic": fp_before,
            "false_positives_evaluated": fp_after,
            "false_positive_reduction": _ratio(fp_before - fp_after, fp_before),
            "precision_at_1_deterministic": amb_det.get("precision_at_1"),
            "precision_at_1_evaluated": amb_hyb.get("precision_at_1"),
            "top1_deterministic": amb_det.get("top1"),
            "top1_evaluated": amb_hyb.get("top1"),
            "changed": sum(
                1
                for a, b, inv in zip(baseline, evaluated, invoked, strict=True)
                if inv and a.hints != b.hints
            ),
        },
        "provider": {
            "invoked": sum(invoked),
            "statuses": dict(sorted(statuses.items())),
            "json_validity_rate": _ratio(valid, judged),
            "latency_ms_p50": _percentile(latencies, 0.5),
            "latency_ms_p95": _percentile(latencies, 0.95),
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
        },
    }
