"""The Memory registry's writes, planned: pure functions from the folded registry to drafts.

- :func:`plan_saves` — F8: the chosen candidates become ``memory_saved`` (recorded by the
  promoting reviewer), and every older live memory for the same subject and target with another
  meaning is ``memory_superseded`` by the new one. Idempotent: planned again on the registry
  after the first plan, it saves nothing (a re-run after a crash between the registry and the
  session's ``memory_promoted`` saves nothing twice; spec 003 §12).
- :func:`plan_forget` — ``tht memory forget ID --reason T --as human:ID``.
- :func:`plan_solved` — after finalize (the outbox): the session's solved question, once.
- :func:`solved_facts` / :func:`solved_matches` — what a finalized session says it solved, and
  whether a registry entry says exactly that (a ``solved_question_saved`` is written by
  ``module:memory``, unsigned: only its source session's verified ledger backs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.fold import SessionState
from kernel.memory_events import (
    MemoryForgottenPayload,
    MemorySavedPayload,
    MemorySource,
    MemorySupersededPayload,
    SolvedQuestionSavedPayload,
)
from kernel.transitions import check_human
from modules.memory.candidates import PromotionCandidate
from modules.memory.fold import sql_sha256
from modules.memory.keys import memory_id, memory_key, solved_id, subject_target_key
from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

__all__ = [
    "SOLVED_ACTOR",
    "SavePlan",
    "plan_forget",
    "plan_saves",
    "plan_solved",
    "solved_facts",
    "solved_matches",
]

#: who records a solved question (the outbox item runs as the module)
SOLVED_ACTOR = "module:memory"

_SUPERSEDED = "a newer memory for the same subject and target"


class SavePlan(msgspec.Struct, frozen=True, kw_only=True):
    drafts: list[ev.EventDraft]
    #: the memories this plan saves (or saves again, after they were forgotten or superseded)
    saved: tuple[str, ...] = ()
    #: chosen memories already live in the registry: nothing to save
    already: tuple[str, ...] = ()
    #: chosen memories a later chosen clarification of the same session replaces (same subject
    #: and target, another meaning): saving both would only record the older as superseded
    replaced: tuple[str, ...] = ()


def _latest_per_subject_target(
    chosen: Sequence[PromotionCandidate],
) -> tuple[list[PromotionCandidate], list[str]]:
    """One candidate per memory and per subject and target: the latest clarification wins."""
    by_st: dict[str, PromotionCandidate] = {}
    for candidate in sorted(chosen, key=lambda c: (c.seq, c.memory_id)):
        by_st[subject_target_key(candidate.subject, candidate.target)] = candidate
    kept = sorted(by_st.values(), key=lambda c: (c.seq, c.memory_id))
    kept_ids = {c.memory_id for c in kept}
    replaced = sorted({c.memory_id for c in chosen if c.memory_id not in kept_ids})
    return kept, replaced


def plan_saves(
    memory: MemoryState,
    chosen: Sequence[PromotionCandidate],
    *,
    session: str,
    reviewer: str,
    rationale: str = "",
) -> SavePlan:
    """The registry entries that save ``chosen`` (from the session ``session``), recorded by
    ``reviewer`` (``human:<id>``)."""
    check_human(reviewer)
    if not session:
        raise UsageError("a memory is saved from a session: name it")
    for candidate in chosen:
        expected = memory_id(candidate.subject, candidate.target, candidate.meaning)
        if candidate.memory_id != expected:
            raise UsageError(
                f"candidate c{candidate.seq}: {candidate.memory_id} is not the id of its "
                f"content ({expected}); use the candidates tht computed"
            )
    kept, replaced = _latest_per_subject_target(chosen)
    drafts: list[ev.EventDraft] = []
    saved: list[str] = []
    already: list[str] = []
    for candidate in kept:
        key = memory_key(candidate.subject, candidate.target, candidate.meaning)
        if memory.live_key(key) is not None:
            already.append(candidate.memory_id)
            continue
        drafts.append(_saved(candidate, session=session, reviewer=reviewer, rationale=rationale))
        saved.append(candidate.memory_id)
        for older in _live_same_subject_target(memory, candidate):
            drafts.append(
                ev.EventDraft(
                    type="memory_superseded",
                    actor=reviewer,
                    subject=older.subject,
                    payload=MemorySupersededPayload(
                        memory_id=older.memory_id, by=candidate.memory_id, reason=_SUPERSEDED
                    ),
                )
            )
    return SavePlan(
        drafts=drafts, saved=tuple(saved), already=tuple(already), replaced=tuple(replaced)
    )


def _live_same_subject_target(
    memory: MemoryState, candidate: PromotionCandidate
) -> list[MemoryRecord]:
    """The other live memories for the candidate's subject and target (what it supersedes)."""
    st = subject_target_key(candidate.subject, candidate.target)
    return [
        m
        for m in memory.about(candidate.subject)
        if m.status == "live"
        and m.memory_id != candidate.memory_id
        and subject_target_key(m.subject, m.target) == st
    ]


def _saved(
    candidate: PromotionCandidate, *, session: str, reviewer: str, rationale: str
) -> ev.EventDraft:
    return ev.EventDraft(
        type="memory_saved",
        actor=reviewer,
        subject=candidate.subject,
        payload=MemorySavedPayload(
            memory_id=candidate.memory_id,
            subject=candidate.subject,
            meaning=candidate.meaning,
            target=candidate.target,
            rationale=rationale,
            language=candidate.language,
            source=MemorySource(session=session, seq=candidate.seq),
            reviewer=reviewer,
        ),
    )


def plan_forget(
    memory: MemoryState, memory_id: str, *, reason: str, actor: str
) -> list[ev.EventDraft]:
    """Forget a memory (a human's act, with a reason): it stays in history, never recalled."""
    check_human(actor)
    text = reason.strip()
    if not text:
        raise UsageError("forgetting a memory needs a reason: pass --reason TEXT")
    found = memory.memory(memory_id)
    if found is None:
        raise NotFoundError(f"memory {memory_id} does not exist; see `tht memory list`")
    if found.status == "forgotten":
        raise PolicyError(
            f"memory {memory_id} is already forgotten ({found.forgotten_reason}, "
            f"by {found.forgotten_by})"
        )
    return [
        ev.EventDraft(
            type="memory_forgotten",
            actor=actor,
            subject=found.subject,
            payload=MemoryForgottenPayload(memory_id=memory_id, reason=text),
        )
    ]


def plan_solved(
    memory: MemoryState,
    *,
    session: str,
    seq: int,
    question: str,
    sql: str,
    rewritten: str = "",
    evidence: Sequence[str] = (),
    tables: Sequence[str] = (),
    result_sha256: str = "",
    language: str = "",
) -> list[ev.EventDraft]:
    """The finalized session's solved question (``seq``: its ``session_finalized``); [] when
    that session's is already saved (the outbox may run an item twice)."""
    if not session or not question.strip() or not sql.strip():
        raise UsageError("a solved question needs its session, question and final SQL")
    sid = solved_id(session)
    if sid in memory.solved:
        return []
    return [
        ev.EventDraft(
            type="solved_question_saved",
            actor=SOLVED_ACTOR,
            subject=sid,
            payload=SolvedQuestionSavedPayload(
                solved_id=sid,
                question=question,
                rewritten=rewritten,
                sql=sql,
                sql_sha256=sql_sha256(sql),
                evidence=tuple(evidence),
                tables=tuple(tables),
                result_sha256=result_sha256,
                language=language,
                source=MemorySource(session=session, seq=seq),
            ),
        )
    ]


def solved_facts(state: SessionState) -> dict[str, Any]:
    """What a session's effective decisions say about its solved question: the rewritten
    question, the accepted evidence, the linked tables and F7's result hash."""
    facts: dict[str, Any] = {"rewritten": "", "evidence": [], "tables": (), "result_sha256": ""}
    for record in state.effective_decisions():
        event = record.event
        if isinstance(event, ev.QuestionRewritten):
            facts["rewritten"] = event.payload.question
        elif isinstance(event, ev.EvidenceAccepted):
            facts["evidence"].append(event.payload.evidence_id)
        elif isinstance(event, ev.SchemaLinked):
            facts["tables"] = event.payload.tables
        elif isinstance(event, ev.ResultVerified):
            facts["result_sha256"] = event.payload.result_sha256
    return facts


def solved_matches(solved: SolvedQuestion, state: SessionState) -> bool:
    """Whether ``solved`` is what its source session (``state``, folded from its verified
    ledger) solved: finalized at the recorded seq, the same question, the SHA-256 of its
    effective ``sql_final.sql``, and the same rewritten question, evidence, tables and result
    hash. Anything else — an entry written into the registry by hand for a real finalized
    session, with SQL or a question of its own — is not backed, so never recalled."""
    if state.session != solved.source_session or state.lifecycle != "finalized":
        return False
    if state.finalized_seq != solved.source_seq or state.question != solved.question:
        return False
    artifact = state.effective_artifact("sql_final.sql")
    if artifact is None or artifact.sha256 != solved.sql_sha256:
        return False
    facts = solved_facts(state)
    return (
        facts["rewritten"] == solved.rewritten
        and tuple(facts["evidence"]) == tuple(solved.evidence)
        and tuple(facts["tables"]) == tuple(solved.tables)
        and facts["result_sha256"] == solved.result_sha256
    )
