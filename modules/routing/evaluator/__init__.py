"""Routing's optional semantic evaluator (spec 000 §8.4–8.7, §12–§21): an opt-in advisor behind the
ambiguity gate. It sees only the shortlisted candidates, its answer is validated locally and passed
to the policy resolver, which alone may change the ranking — within bounds. Every failure returns
the deterministic result. See docs/routing-evaluator.md.

The hook imports this package when the evaluator is enabled, on every prompt: names load from their
submodules on first use (PEP 562), so building the plug (:func:`hook_evaluator`) imports only the
standard library; contracts, parser, transport and pydantic come in only for prompts the gate sends.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "PROMPT_CONTRACT_VERSION": "contracts",
    "REASON_CODES": "contracts",
    "EvaluatedTarget": "contracts",
    "EvaluationConstraints": "contracts",
    "McpCandidate": "contracts",
    "RoutingCandidate": "contracts",
    "RoutingEvaluation": "contracts",
    "RoutingEvaluationInput": "contracts",
    "evaluation_schema": "contracts",
    "RoutingEvaluatorPlug": "orchestrator",
    "hook_evaluator": "orchestrator",
    "REJECTIONS": "parser",
    "ParseOutcome": "parser",
    "parse_evaluator_output": "parser",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'modules.routing.evaluator' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"modules.routing.evaluator.{module}"), name)
    globals()[name] = value
    return value
