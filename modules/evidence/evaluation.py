"""Evaluating a generation on the Evidence evaluation set.

Glossary ("Evidence evaluation set"): a generation passes when every question retrieves at least
one expected unit in the top 10 of the workspace's fusion (``evidence.fusion``: weighted or plain
RRF); the top 5 is informative; dense, BM25 and fused positions are kept for diagnostics.
Positions are unit ranks (fragments grouped per unit), 1-based, ``None`` when no expected unit is
within the first :data:`DIAGNOSTIC_DEPTH` units.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modules.evidence.eval_set import EvalCase, EvalSet
from modules.evidence.query_text import evidence_query_text
from modules.evidence.retrieval import Mode, QueryVectors, RankedUnit

if TYPE_CHECKING:
    from kernel.vectors import VectorFilter

__all__ = ["DIAGNOSTIC_DEPTH", "CaseResult", "EvaluationReport", "evaluate", "first_rank"]

PASS_DEPTH = 10
INFORMATIVE_DEPTH = 5
DIAGNOSTIC_DEPTH = 50


@dataclass(frozen=True)
class CaseResult:
    question: str
    type: str
    expected: tuple[str, ...]
    fused: int | None
    dense: int | None
    bm25: int | None

    @property
    def passed(self) -> bool:
        return self.fused is not None and self.fused <= PASS_DEPTH

    def to_json(self) -> dict[str, object]:
        return {
            "question": self.question,
            "type": self.type,
            "expected": list(self.expected),
            "passed": self.passed,
            "top5": self.fused is not None and self.fused <= INFORMATIVE_DEPTH,
            "ranks": {"fused": self.fused, "dense": self.dense, "bm25": self.bm25},
        }


@dataclass(frozen=True)
class EvaluationReport:
    cases: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    def to_json(self) -> dict[str, object]:
        n = len(self.cases)
        return {
            "passed": self.passed,
            "cases": n,
            "hit_at_10": sum(c.passed for c in self.cases),
            "hit_at_5": sum(
                c.fused is not None and c.fused <= INFORMATIVE_DEPTH for c in self.cases
            ),
            "failures": [c.to_json() for c in self.cases if not c.passed],
            "results": [c.to_json() for c in self.cases],
        }


def first_rank(units: list[RankedUnit], expected: tuple[str, ...] | list[str]) -> int | None:
    wanted = set(expected)
    for i, unit in enumerate(units, start=1):
        if unit.unit_id in wanted:
            return i
    return None


RankFn = Callable[[QueryVectors, "VectorFilter", Mode, int], list[RankedUnit]]


def evaluate(
    eval_set: EvalSet,
    *,
    embed: Callable[[str], QueryVectors],
    where_of: Callable[[EvalCase], VectorFilter],
    rank: RankFn,
) -> EvaluationReport:
    """Run every case: the fused top 10 decides, dense and BM25 positions are diagnostics."""
    results = []
    for case in eval_set.cases:
        vectors = embed(evidence_query_text(case.question))
        where = where_of(case)
        ranks = {
            mode: first_rank(rank(vectors, where, mode, DIAGNOSTIC_DEPTH), case.expected)
            for mode in ("hybrid", "dense", "bm25")
        }
        results.append(
            CaseResult(
                question=case.question,
                type=case.type,
                expected=tuple(case.expected),
                fused=ranks["hybrid"],
                dense=ranks["dense"],
                bm25=ranks["bm25"],
            )
        )
    return EvaluationReport(cases=tuple(results))
