"""F8's promotion candidates, computed by tht from the session's ledger (spec 001 §4.2).

A candidate is an *effective* reusable decision of the session (today ``concept_clarified``,
:data:`~kernel.memory_events.MEMORY_CONTRACT`) that the reviewer has not decided yet. Only the
fields the contract names are read: the envelope's ``seq`` and ``subject`` and the payload's
``meaning`` and ``target``. Every clarification left out is counted by why:

- ``retracted`` — withdrawn by a ``decision_retracted``;
- ``stale`` — its stage was reopened after it;
- ``no_subject`` — no concept to remember it by;
- ``decided`` — this session already recorded ``memory_promoted`` or
  ``memory_promotion_declined`` for it (by its seq, or for the same memory: a declined
  candidate never comes back in the same session, not even re-clarified after a reopen);
- ``recalled`` — the session applied that very memory in F2 (``memory_applied``);
- ``in_memory`` — a live memory of the registry has the same content (normalized subject,
  target and meaning);
- ``duplicate`` — a later clarification of the session has the same content (the latest is
  the candidate).

:func:`promotion_review` is the pre-selected checklist the reviewer answers (a closing
``decide``: an unchecked candidate is recorded as ``memory_promotion_declined``; a last ``none``
option declines them all, since a ``decide`` is answered with at least one choice);
:func:`nothing_to_promote` completes the contribution with the reason when there is none.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kernel import events as ev
from kernel.errors import UsageError
from kernel.fold import DecisionRecord, SessionState
from kernel.memory_events import MEMORY_CONTRACT
from kernel.outcomes import ModuleOutcome, ReviewRequest
from modules.memory.keys import memory_id, memory_key, normalize_text
from modules.memory.records import MemoryState

__all__ = [
    "EXCLUSION_REASONS",
    "NONE_OPTION",
    "CandidateReport",
    "PromotionCandidate",
    "nothing_to_promote",
    "promotion_candidates",
    "promotion_review",
]

#: why a clarification is not a candidate, in the order they are checked and told
EXCLUSION_REASONS: tuple[str, ...] = (
    "retracted",
    "stale",
    "no_subject",
    "decided",
    "recalled",
    "in_memory",
    "duplicate",
)

_TOLD = {
    "retracted": "retracted",
    "stale": "stale after a reopen",
    "no_subject": "without a subject",
    "decided": "already decided in this session",
    "recalled": "applied from memory in F2",
    "in_memory": "already in memory",
    "duplicate": "repeated",
}

#: the option that chooses no candidate (a decide review is answered with at least one choice)
NONE_OPTION = "none"

_DECIDED_TYPES = ("memory_promoted", "memory_promotion_declined")


class PromotionCandidate(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    subject: str
    meaning: str
    target: str | None = None
    #: the options the reviewer did not choose, when the contract carries them (today not)
    alternatives: tuple[str, ...] = ()
    memory_id: str
    language: str = ""

    @property
    def label(self) -> str:
        """``subject = meaning → target``: what the reviewer reads."""
        shown = f"{self.subject} = {self.meaning}"
        return shown if self.target is None else f"{shown} → {self.target}"


class CandidateReport(msgspec.Struct, frozen=True, kw_only=True):
    candidates: tuple[PromotionCandidate, ...] = ()
    #: reason → how many clarifications it left out (only reasons that did)
    excluded: dict[str, int] = msgspec.field(default_factory=dict)


def _read(record: DecisionRecord) -> dict[str, Any]:
    """The contract's fields of a reusable decision — and nothing else."""
    payload = getattr(record.event, "payload", None)
    return {name: getattr(payload, name, None) for name in MEMORY_CONTRACT.reusable[record.type]}


def _candidate(record: DecisionRecord, language: str) -> PromotionCandidate:
    fields = _read(record)
    subject = record.subject or ""
    meaning = str(fields.get("meaning") or "")
    raw_target = fields.get("target")
    target = str(raw_target) if raw_target else None
    alternatives = fields.get("alternatives") or ()
    return PromotionCandidate(
        seq=record.seq,
        subject=subject,
        meaning=meaning,
        target=target,
        alternatives=tuple(str(a) for a in alternatives),
        memory_id=memory_id(subject, target, meaning),
        language=language,
    )


def _decided(state: SessionState) -> tuple[set[int], set[str]]:
    """The seqs and memory ids this session already promoted or declined (a retracted
    decision no longer decides anything)."""
    seqs: set[int] = set()
    for record in state.decisions:
        if record.type in _DECIDED_TYPES and record.status != "retracted":
            source = getattr(getattr(record.event, "payload", None), "source_seq", None)
            if isinstance(source, int):
                seqs.add(source)
    ids: set[str] = set()
    for seq in seqs:
        decided = state.decision(seq)
        if decided is not None and decided.type in MEMORY_CONTRACT.reusable:
            ids.add(_candidate(decided, "").memory_id)
    return seqs, ids


def _recalled(state: SessionState) -> set[str]:
    """The memories the session applied in F2 (effective ``memory_applied``)."""
    found = set()
    for record in state.decisions:
        if record.type == "memory_applied" and record.status == "effective":
            payload = getattr(record.event, "payload", None)
            if getattr(payload, "kind", "memory") != "solved_question":
                found.add(str(getattr(payload, "memory_id", "")))
    return found


def promotion_candidates(
    state: SessionState, memory: MemoryState, *, language: str
) -> CandidateReport:
    """The session's promotion candidates (oldest seq first) and what was left out, by why."""
    decided_seqs, decided_ids = _decided(state)
    recalled = _recalled(state)
    excluded: dict[str, int] = {}
    latest: dict[str, PromotionCandidate] = {}  # memory id → the latest clarification of it

    def exclude(reason: str) -> None:
        excluded[reason] = excluded.get(reason, 0) + 1

    for record in sorted(state.decisions, key=lambda d: d.seq):
        if record.type not in MEMORY_CONTRACT.reusable:
            continue
        if record.status != "effective":
            exclude(record.status)  # retracted | stale
            continue
        candidate = _candidate(record, language)
        if not normalize_text(candidate.subject):
            exclude("no_subject")
        elif record.seq in decided_seqs or candidate.memory_id in decided_ids:
            exclude("decided")
        elif candidate.memory_id in recalled:
            exclude("recalled")
        elif (
            memory.live_key(memory_key(candidate.subject, candidate.target, candidate.meaning))
            is not None
        ):
            exclude("in_memory")
        else:
            if candidate.memory_id in latest:
                exclude("duplicate")
            latest[candidate.memory_id] = candidate
    candidates = tuple(sorted(latest.values(), key=lambda c: c.seq))
    ordered = {r: excluded[r] for r in EXCLUSION_REASONS if r in excluded}
    return CandidateReport(candidates=candidates, excluded=ordered)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def promotion_review(report: CandidateReport) -> ReviewRequest:
    """The reviewer's checklist: every candidate pre-selected; answering it closes the
    contribution (a chosen one is ``memory_promoted``, an unchosen one
    ``memory_promotion_declined``). No candidate: :func:`nothing_to_promote` instead."""
    n = len(report.candidates)
    if not n:
        raise UsageError("no promotion candidate to review: the contribution completes by itself")
    options = []
    for c in report.candidates:
        promoted = ev.ProposedEvent(
            type="memory_promoted",
            subject=c.subject,
            payload={
                "source_seq": c.seq,
                "memory_id": c.memory_id,
                "content": c.label,
                "subject": c.subject,
                "meaning": c.meaning,
                "target": c.target,
            },
        )
        declined = ev.ProposedEvent(
            type="memory_promotion_declined",
            subject=c.subject,
            payload={"source_seq": c.seq, "reason": "not promoted by the reviewer"},
        )
        options.append(
            ev.ReviewOptionPayload(
                id=f"c{c.seq}",
                label=c.label,
                events=(promoted,),
                unchosen=(declined,),
                selected=True,
            )
        )
    # a decide is answered with at least one choice: this one declines every candidate
    options.append(ev.ReviewOptionPayload(id=NONE_OPTION, label="promote none of them"))
    prompt = (
        f"Save {_count(n, 'clarification', 'clarifications')} of this session to the "
        "workspace memory? Every one is selected; uncheck those that should not be "
        "remembered (they are recorded as declined)."
    )
    return ReviewRequest(kind="decide", prompt=prompt, options=tuple(options), closes=True)


def _reason(report: CandidateReport) -> str:
    if not report.excluded:
        return "no clarification to promote: the session clarified no concept"
    told = ", ".join(f"{n} {_TOLD[r]}" for r, n in report.excluded.items())
    return f"no clarification to promote: {told}"


def nothing_to_promote(report: CandidateReport) -> ModuleOutcome:
    """The contribution completes on its own, with the recorded reason (``module:memory``)."""
    event = ev.ProposedEvent(
        type="memory_nothing_to_promote",
        payload={"reason": _reason(report), "excluded": dict(report.excluded)},
    )
    return ModuleOutcome(status="completed", events=(event,))
