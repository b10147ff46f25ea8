"""The ``stage_runs`` / ``stage_reviews`` projection of one session's ledger facts (pure).

Input: the session's imported ledger facts in ``seq`` order (what :mod:`tht.analytics.ledgers`
keeps: type, time, stage, invocation, causation, review kind — never a question, prompt, label,
rationale or payload text). Output, per stage of the session:

- one :class:`StageRun`: first start; final outcome (``completed`` · ``skipped`` · ``failed`` ·
  ``open``: what the kernel's fold says of the stage now — reopening a stage reopens it and every
  later step) and when it happened; how many runs (distinct invocations) and attempts; the time
  spent from each run's start to its outcome; review counts and total answered wait; how many
  times the stage itself was reopened;
- one :class:`StageReview` per review or revision request: when it was requested, when a human
  answered it (``review_answered`` whose ``causation`` is the request), and the wait between.

A run that never reaches an outcome (still running, or abandoned by a reopen) adds no duration.
Times are the ledger's RFC 3339 UTC ``ts``; durations are whole milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["LedgerFact", "StageReview", "StageRun", "derive_stage_runs"]

_REVIEW_TYPES = frozenset({"review_requested", "revision_requested"})
_OUTCOMES = {
    "stage_completed": "completed",
    "session_finalized": "completed",  # closes the ``finalize`` step
    "stage_skipped": "skipped",
    "stage_failed": "failed",
    "contribution_failed": "failed",
}


@dataclass(frozen=True)
class LedgerFact:
    """The analytics-safe part of one ledger event."""

    seq: int
    type: str
    ts: str
    stage: str | None = None
    invocation: str | None = None
    causation: int | None = None
    kind: str | None = None  # review kind: select · decide · confirm · revision


@dataclass
class StageReview:
    stage: str
    request_seq: int
    kind: str
    requested_at: str
    answered_at: str | None = None

    @property
    def wait_ms(self) -> int | None:
        return None if self.answered_at is None else _ms(self.requested_at, self.answered_at)


@dataclass
class StageRun:
    stage: str
    first_seq: int
    last_event_at: str
    started_at: str | None = None
    ended_at: str | None = None
    outcome: str = "open"
    invocations: set[str] = field(default_factory=set)
    attempts: int = 0
    duration_ms: int | None = None
    reopen_count: int = 0
    reviews: list[StageReview] = field(default_factory=list)
    _run_start: str | None = None

    @property
    def runs(self) -> int:
        return len(self.invocations) or (1 if self.attempts else 0)

    @property
    def answered_reviews(self) -> int:
        return sum(r.answered_at is not None for r in self.reviews)

    @property
    def review_wait_ms(self) -> int | None:
        waits = [r.wait_ms for r in self.reviews if r.wait_ms is not None]
        return sum(waits) if waits else None


def derive_stage_runs(facts: list[LedgerFact], order: Sequence[str] = ()) -> list[StageRun]:
    """Fold one session's facts (any order; sorted by ``seq`` here) into its stage runs.

    ``order`` is the session's workflow step order: reopening a stage also reopens every later
    step, as the kernel's fold does (their results become stale; their runs must start again).
    """
    position = {stage: i for i, stage in enumerate(order)}
    runs: dict[str, StageRun] = {}
    requests: dict[int, StageReview] = {}
    for fact in sorted(facts, key=lambda f: f.seq):
        if fact.type == "review_answered" and fact.causation in requests:
            review = requests.pop(fact.causation)
            review.answered_at = fact.ts
        if fact.stage is None:
            continue
        run = runs.get(fact.stage)
        if run is None:
            run = runs[fact.stage] = StageRun(
                stage=fact.stage, first_seq=fact.seq, last_event_at=fact.ts
            )
        run.last_event_at = fact.ts
        if fact.type == "stage_started":
            run.attempts += 1
            if fact.invocation:
                run.invocations.add(fact.invocation)
            if run.started_at is None:
                run.started_at = fact.ts
            if run._run_start is None:
                run._run_start = fact.ts
            run.outcome = "open"
        elif fact.type in _REVIEW_TYPES:
            review = StageReview(
                stage=fact.stage,
                request_seq=fact.seq,
                kind=fact.kind or ("revision" if fact.type == "revision_requested" else "unknown"),
                requested_at=fact.ts,
            )
            run.reviews.append(review)
            requests[fact.seq] = review
        elif fact.type in _OUTCOMES:
            run.outcome = _OUTCOMES[fact.type]
            run.ended_at = fact.ts
            if run._run_start is not None:
                run.duration_ms = (run.duration_ms or 0) + _ms(run._run_start, fact.ts)
                run._run_start = None
        elif fact.type == "stage_reopened":
            run.reopen_count += 1
            start = position.get(fact.stage)
            for other in runs.values():
                later = start is not None and position.get(other.stage, -1) >= start
                if other is run or later:
                    other.outcome = "open"
                    other._run_start = None
    return sorted(runs.values(), key=lambda r: (position.get(r.stage, len(position)), r.first_seq))


def _ms(start: str, end: str) -> int:
    delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    return max(0, round(delta.total_seconds() * 1000))
