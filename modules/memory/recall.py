"""F2 recall, planned: from the search's hits to the reviewer's ``decide`` review, or to the
stage's automatic completion with the reason nothing was shown. Pure.

:func:`recall_texts` is what F2 searches: the question, the latest effective rewritten question
when there is one (a reopened or derived session), and the subjects clarified in F1 — each once.
The search (index, relevance floor) happens elsewhere; :func:`plan_recall` then

1. keeps, per id, the hit's best score; drops hits under the relevance floor and hits the
   registry does not hold (a memory no longer live, an unknown solved question: the index is a
   projection and may lag the registry);
2. drops what the session already decided: a memory whose content an effective
   ``concept_clarified`` already chose, or one already applied or rejected in this session;
3. dedups reviewer-visible content (the same text once, the best score kept);
4. shows at most ``limit`` memories and 2 solved questions, best first; a shown memory that a
   live memory contradicts (same subject, another target) brings it along, and the prompt says
   so: contradictions are explicit, never merged, each with its provenance.

Options are not pre-selected (applying is a choice); answering the review closes the stage:
a chosen option's ``memory_applied`` is recorded, an unchosen one's ``memory_rejected``. A last
option (``none``, no events) lets the reviewer apply nothing: a ``decide`` is answered with at
least one choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import msgspec

from kernel import events as ev
from kernel.fold import DecisionRecord, SessionState
from kernel.memory_events import MEMORY_CONTRACT
from kernel.outcomes import ModuleOutcome, ReviewRequest
from modules.memory.candidates import NONE_OPTION
from modules.memory.keys import memory_key, normalize_text
from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

__all__ = ["SOLVED_SHOWN", "RecallHit", "plan_recall", "recall_texts"]

#: at most this many solved questions are shown (the most similar)
SOLVED_SHOWN = 2
_SQL_SHOWN = 160  # characters of the final SQL in an option's label
_NOT_APPLIED = "not applied by the reviewer"

RecallKind = Literal["memory", "solved_question"]


class RecallHit(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: RecallKind
    score: float
    #: why it cleared the floor (``modules.memory.search.RECALLED_BECAUSE``: ``named``,
    #: ``cosine``, ``mention``); "" when the caller does not say
    why: str = ""


#: what an option's label tells the reviewer about why a memory was recalled: a subject the
#: question names is strong evidence; a likeness of meaning alone is weaker, and says so
_WHY_SHOWN = {
    "named": "recalled because the question names its subject",
    "mention": "recalled because the question names its subject in another form",
    "cosine": "recalled by likeness of meaning only",
}


def _payload_field(record: DecisionRecord, name: str) -> object:
    return getattr(getattr(record.event, "payload", None), name, None)


def recall_texts(state: SessionState) -> list[str]:
    """The question, the latest effective rewritten question, the clarified subjects: once each
    (by normalized text), in that order."""
    texts = [state.question]
    rewritten = [d for d in state.effective_decisions() if d.type == "question_rewritten"]
    if rewritten:
        latest = max(rewritten, key=lambda d: d.seq)
        texts.append(str(_payload_field(latest, "question") or ""))
    texts += [
        d.subject or ""
        for d in sorted(state.effective_decisions(), key=lambda d: d.seq)
        if d.type in MEMORY_CONTRACT.reusable
    ]
    seen: set[str] = set()
    found = []
    for text in texts:
        key = normalize_text(text)
        if key and key not in seen:
            seen.add(key)
            found.append(text.strip())
    return found


class _Decided(msgspec.Struct, frozen=True, kw_only=True):
    keys: frozenset[str]  # memory keys of the session's effective clarifications
    ids: frozenset[str]  # memories and solved questions applied or rejected in the session


def _decided(state: SessionState) -> _Decided:
    keys, ids = set(), set()
    for record in state.effective_decisions():
        if record.type in MEMORY_CONTRACT.reusable and record.subject:
            # only the contract's fields (today meaning and target), as the promotion reads them
            meaning = str(_payload_field(record, "meaning") or "")
            target = _payload_field(record, "target")
            keys.add(memory_key(record.subject, str(target) if target else None, meaning))
        elif record.type in ("memory_applied", "memory_rejected"):
            ids.add(str(_payload_field(record, "memory_id") or ""))
    return _Decided(keys=frozenset(keys), ids=frozenset(ids))


def _content(record: MemoryRecord) -> str:
    shown = f"{record.subject} = {record.meaning}"
    return shown if record.target is None else f"{shown} → {record.target}"


def _one_line(sql: str) -> str:
    line = " ".join(sql.split())
    return line if len(line) <= _SQL_SHOWN else line[: _SQL_SHOWN - 1] + "…"


class _Shown(msgspec.Struct, kw_only=True):
    memories: list[MemoryRecord]
    solved: list[SolvedQuestion]
    #: id -> why its best hit cleared the floor (RecallHit.why)
    why: dict[str, str] = msgspec.field(default_factory=dict)
    unknown: int = 0
    decided: int = 0
    below: int = 0
    unbacked: int = 0


def _always(item: str) -> bool:
    return True


def _select(
    state: SessionState,
    memory: MemoryState,
    hits: Sequence[RecallHit],
    floor: float,
    limit: int,
    backed: Callable[[str], bool],
) -> _Shown:
    best: dict[tuple[str, str], float] = {}
    why: dict[str, str] = {}
    for hit in hits:
        key = (hit.kind, hit.id)
        if key not in best or hit.score > best[key]:
            best[key] = hit.score
            why[hit.id] = hit.why
    decided = _decided(state)
    shown = _Shown(memories=[], solved=[], why=why)
    seen: set[str] = set()
    for (kind, hid), score in sorted(best.items(), key=lambda kv: (-kv[1], kv[0])):
        if score < floor:
            shown.below += 1
            continue
        record = memory.memory(hid) if kind == "memory" else None
        solved = memory.solved.get(hid) if kind == "solved_question" else None
        if record is not None and record.live:
            text = _content(record)
        elif solved is not None:
            record, text = None, f"{solved.question}\n{solved.sql}"
        else:
            shown.unknown += 1
            continue
        if hid in decided.ids or (record is not None and record.key in decided.keys):
            shown.decided += 1
            continue
        if not backed(hid):
            shown.unbacked += 1
            continue
        visible = normalize_text(text)
        if visible in seen:
            continue
        seen.add(visible)
        if record is not None:
            if len(shown.memories) < limit:
                shown.memories.append(record)
        elif solved is not None and len(shown.solved) < SOLVED_SHOWN:
            shown.solved.append(solved)
    shown.memories = _with_contradictions(memory, shown.memories, decided, backed)
    return shown


def _with_contradictions(
    memory: MemoryState,
    memories: list[MemoryRecord],
    decided: _Decided,
    backed: Callable[[str], bool],
) -> list[MemoryRecord]:
    """Each shown memory followed by the live memories that contradict it (never hidden) —
    those still backed by their source session: a forged entry never rides along."""
    found: list[MemoryRecord] = []
    ids: set[str] = set()
    for record in memories:
        for item in (record, *memory.contradicting(record.memory_id)):
            if item.memory_id in ids or item.memory_id in decided.ids:
                continue
            if item is not record and (item.key in decided.keys or not backed(item.memory_id)):
                continue
            ids.add(item.memory_id)
            found.append(item)
    return found


def _memory_option(record: MemoryRecord, why: str = "") -> ev.ReviewOptionPayload:
    applied = ev.ProposedEvent(
        type="memory_applied",
        subject=record.subject,
        payload={
            "memory_id": record.memory_id,
            "content": _content(record),
            "kind": "memory",
            "subject": record.subject,
            "meaning": record.meaning,
            "target": record.target,
            "source_session": record.source_session,
            "source_seq": record.source_seq,
        },
    )
    rejected = ev.ProposedEvent(
        type="memory_rejected",
        subject=record.subject,
        payload={"memory_id": record.memory_id, "reason": _NOT_APPLIED},
    )
    return ev.ReviewOptionPayload(
        id=f"m:{record.memory_id}",
        label=f"{_content(record)} ({record.provenance}{_why_shown(why)})",
        events=(applied,),
        unchosen=(rejected,),
    )


def _why_shown(why: str) -> str:
    shown = _WHY_SHOWN.get(why)
    return f"; {shown}" if shown else ""


def _solved_option(solved: SolvedQuestion) -> ev.ReviewOptionPayload:
    applied = ev.ProposedEvent(
        type="memory_applied",
        payload={
            "memory_id": solved.solved_id,
            "content": f"{solved.question}\n{solved.sql}",
            "kind": "solved_question",
            "source_session": solved.source_session,
            "source_seq": solved.source_seq,
        },
    )
    rejected = ev.ProposedEvent(
        type="memory_rejected",
        payload={"memory_id": solved.solved_id, "reason": _NOT_APPLIED},
    )
    return ev.ReviewOptionPayload(
        id=f"q:{solved.solved_id}",
        label=f"{solved.question} → {_one_line(solved.sql)} (session {solved.source_session})",
        events=(applied,),
        unchosen=(rejected,),
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _prompt(memory: MemoryState, shown: _Shown) -> str:
    parts = []
    if shown.memories:
        parts.append(_count(len(shown.memories), "memory", "memories"))
    if shown.solved:
        parts.append(_count(len(shown.solved), "solved question", "solved questions"))
    prompt = (
        f"Recalled from the workspace memory: {' and '.join(parts)}. Choose the ones that "
        "apply to this question; the others are recorded as not applied."
    )
    ids = {r.memory_id for r in shown.memories}
    told: set[str] = set()
    for record in shown.memories:
        others = [o for o in memory.contradicting(record.memory_id) if o.memory_id in ids]
        group = sorted({record.memory_id, *(o.memory_id for o in others)})
        if not others or group[0] in told:
            continue
        told.add(group[0])
        targets = sorted({r.target or "no target" for r in (record, *others)})
        prompt += (
            f" These memories contradict each other: {record.subject!r} points at "
            f"{' and '.join(targets)} ({', '.join(group)}); apply at most one."
        )
    return prompt


def _nothing(
    memory: MemoryState, shown: _Shown, *, considered: int, floor: float, searched: int
) -> ModuleOutcome:
    if not memory.memories and not memory.solved:
        reason = "the workspace memory is empty"
    else:
        reason = (
            f"nothing relevant in memory: {_count(searched, 'text', 'texts')} searched, "
            f"{_count(considered, 'hit', 'hits')} considered, none shown above the relevance "
            f"floor {floor:g}"
        )
        if shown.decided:
            reason += f"; {shown.decided} already decided in this session"
        if shown.unknown:
            reason += f"; {shown.unknown} no longer in memory"
        if shown.unbacked:
            reason += (
                f"; {shown.unbacked} not backed by the session they came from "
                "(no effective memory_promoted there)"
            )
    event = ev.ProposedEvent(
        type="memory_nothing_recalled",
        payload={
            "reason": reason,
            "searched": searched,
            "considered": considered,
            "floor": float(floor),
        },
    )
    return ModuleOutcome(status="completed", events=(event,))


def plan_recall(
    state: SessionState,
    memory: MemoryState,
    hits: Sequence[RecallHit],
    *,
    considered: int,
    floor: float,
    searched: int,
    limit: int = 5,
    backed: Callable[[str], bool] = _always,
) -> ModuleOutcome:
    """F2's outcome: a closing ``decide`` review of what was recalled, or the stage completed
    with ``memory_nothing_recalled`` and its reason. ``backed``: whether a memory or solved
    question is still backed by the session it came from (the composition root checks its
    verified ledger); one that is not is never shown, not even as a contradiction."""
    shown = _select(state, memory, hits, floor, limit, backed)
    if not shown.memories and not shown.solved:
        return _nothing(memory, shown, considered=considered, floor=floor, searched=searched)
    options = [_memory_option(r, shown.why.get(r.memory_id, "")) for r in shown.memories]
    options += [_solved_option(s) for s in shown.solved]
    # a decide is answered with at least one choice: this one applies nothing
    options.append(ev.ReviewOptionPayload(id=NONE_OPTION, label="apply none of them"))
    review = ReviewRequest(
        kind="decide", prompt=_prompt(memory, shown), options=tuple(options), closes=True
    )
    return ModuleOutcome(status="awaiting_review", review=review)
