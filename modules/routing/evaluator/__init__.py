"""Routing's optional semantic evaluator (spec 000 §8.4–8.7, §12–§21): an opt-in advisor behind the
ambiguity gate. It sees only the shortlisted candidates, its answer is validated locally and passed
to the policy resolver, which alone may change the ranking — within bounds. Every failure returns
the deterministic result.

Imported lazily by the hook, only when the evaluator is configured and the gate asks for it.
"""

from modules.routing.evaluator.contracts import (
    PROMPT_CONTRACT_VERSION,
    REASON_CODES,
    EvaluatedTarget,
    EvaluationConstraints,
    McpCandidate,
    RoutingCandidate,
    RoutingEvaluation,
    RoutingEvaluationInput,
    evaluation_schema,
)
from modules.routing.evaluator.orchestrator import RoutingEvaluatorPlug, hook_evaluator
from modules.routing.evaluator.parser import REJECTIONS, ParseOutcome, parse_evaluator_output

__all__ = [
    "PROMPT_CONTRACT_VERSION",
    "REASON_CODES",
    "REJECTIONS",
    "EvaluatedTarget",
    "EvaluationConstraints",
    "McpCandidate",
    "ParseOutcome",
    "RoutingCandidate",
    "RoutingEvaluation",
    "RoutingEvaluationInput",
    "RoutingEvaluatorPlug",
    "evaluation_schema",
    "hook_evaluator",
    "parse_evaluator_output",
]
