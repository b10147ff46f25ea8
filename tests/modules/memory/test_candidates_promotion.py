"""The registry's writes, planned: saving the chosen candidates (idempotently, superseding the
older meaning of the same subject and target, never merging contradictions), forgetting, and
recording a solved question once."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from kernel.memory_events import MemorySavedPayload, MemorySupersededPayload
from kernel.store.fs import FileSystemStore
from modules.memory import (
    MemoryState,
    PromotionCandidate,
    fold_registry,
    fold_registry_from,
    memory_id,
    plan_forget,
    plan_saves,
    plan_solved,
    solved_id,
)
from tests.modules.memory.registry_support import ANA, registry_on, saved, stamped

EMPTY = MemoryState()


def candidate(
    seq: int, subject: str, meaning: str, target: str | None = None, language: str = "it"
) -> PromotionCandidate:
    return PromotionCandidate(
        seq=seq,
        subject=subject,
        meaning=meaning,
        target=target,
        memory_id=memory_id(subject, target, meaning),
        language=language,
    )


def apply(state: MemoryState, drafts: list[ev.EventDraft]) -> MemoryState:
    after = fold_registry_from(state, stamped(drafts, start=state.last_seq + 1))
    assert after.problems == state.problems  # the planners never write what the fold refuses
    return after


FLAG = candidate(8, "ablazione", "flag", "procedures.flag")
YEAR = candidate(9, "anno", "calendar year")


def test_each_chosen_candidate_is_saved_by_the_reviewer_with_its_provenance() -> None:
    plan = plan_saves(EMPTY, [FLAG, YEAR], session="S1", reviewer=ANA, rationale="agreed")
    assert plan.saved == (FLAG.memory_id, YEAR.memory_id) and plan.already == ()
    first = plan.drafts[0]
    assert (first.type, first.actor, first.subject) == ("memory_saved", ANA, "ablazione")
    assert isinstance(first.payload, MemorySavedPayload)
    p = first.payload
    assert (p.memory_id, p.meaning, p.target, p.language, p.rationale) == (
        FLAG.memory_id,
        "flag",
        "procedures.flag",
        "it",
        "agreed",
    )
    assert (p.source.session, p.source.seq, p.reviewer, p.decision) == (
        "S1",
        8,
        ANA,
        "concept_clarified",
    )
    state = apply(EMPTY, plan.drafts)
    assert [m.memory_id for m in state.live()] == [FLAG.memory_id, YEAR.memory_id]


def test_promoting_twice_saves_nothing_the_second_time() -> None:
    state = apply(EMPTY, plan_saves(EMPTY, [FLAG], session="S1", reviewer=ANA).drafts)
    again = plan_saves(state, [FLAG, YEAR], session="S1", reviewer=ANA)
    assert again.already == (FLAG.memory_id,) and again.saved == (YEAR.memory_id,)
    state = apply(state, again.drafts)
    third = plan_saves(state, [FLAG, YEAR], session="S1", reviewer=ANA)
    assert third.drafts == [] and set(third.already) == {FLAG.memory_id, YEAR.memory_id}


def test_a_newer_meaning_for_the_same_subject_and_target_supersedes_the_older() -> None:
    older = apply(EMPTY, [saved("ablazione", "free text", "procedures.flag", session="S0")])
    plan = plan_saves(older, [FLAG], session="S1", reviewer=ANA)
    kinds = [(d.type, d.actor) for d in plan.drafts]
    assert kinds == [("memory_saved", ANA), ("memory_superseded", ANA)]
    payload = plan.drafts[1].payload
    assert isinstance(payload, MemorySupersededPayload)
    old_id = memory_id("ablazione", "procedures.flag", "free text")
    assert (payload.memory_id, payload.by) == (old_id, FLAG.memory_id)
    state = apply(older, plan.drafts)
    assert state.memories[old_id].status == "superseded"
    assert [m.memory_id for m in state.live()] == [FLAG.memory_id]
    assert plan_saves(state, [FLAG], session="S1", reviewer=ANA).drafts == []


def test_another_target_for_the_same_subject_is_a_contradiction_never_a_supersession() -> None:
    older = apply(EMPTY, [saved("ablazione", "flag", "procedures.note", session="S0")])
    plan = plan_saves(older, [FLAG], session="S1", reviewer=ANA)
    assert [d.type for d in plan.drafts] == ["memory_saved"]
    state = apply(older, plan.drafts)
    (group,) = state.contradictions()
    assert {m.target for m in group} == {"procedures.note", "procedures.flag"}


def test_two_meanings_chosen_for_one_subject_and_target_save_the_latest_only() -> None:
    earlier = candidate(5, "ablazione", "free text", "procedures.flag")
    plan = plan_saves(EMPTY, [FLAG, earlier], session="S1", reviewer=ANA)
    assert plan.saved == (FLAG.memory_id,) and plan.replaced == (earlier.memory_id,)
    state = apply(EMPTY, plan.drafts)
    again = plan_saves(state, [FLAG, earlier], session="S1", reviewer=ANA)
    assert again.drafts == [] and again.replaced == (earlier.memory_id,)


def test_a_forgotten_memory_promoted_again_is_saved_again() -> None:
    state = apply(EMPTY, plan_saves(EMPTY, [FLAG], session="S1", reviewer=ANA).drafts)
    state = apply(state, plan_forget(state, FLAG.memory_id, reason="wrong", actor=ANA))
    plan = plan_saves(state, [FLAG], session="S2", reviewer=ANA)
    assert plan.saved == (FLAG.memory_id,)
    revived = apply(state, plan.drafts).memories[FLAG.memory_id]
    assert revived.status == "live" and revived.history == (1, 2, 3)


def test_only_a_human_saves_and_only_candidates_tht_computed() -> None:
    with pytest.raises(PolicyError):
        plan_saves(EMPTY, [FLAG], session="S1", reviewer="agent")
    with pytest.raises(UsageError):
        plan_saves(EMPTY, [FLAG], session="S1", reviewer="ana")
    with pytest.raises(UsageError):
        plan_saves(EMPTY, [FLAG], session="", reviewer=ANA)
    forged = PromotionCandidate(seq=1, subject="a", meaning="b", memory_id=FLAG.memory_id)
    with pytest.raises(UsageError, match="not the id of its content"):
        plan_saves(EMPTY, [forged], session="S1", reviewer=ANA)


def test_forgetting_needs_a_reason_a_known_memory_and_a_human() -> None:
    state = apply(EMPTY, plan_saves(EMPTY, [FLAG], session="S1", reviewer=ANA).drafts)
    with pytest.raises(UsageError):
        plan_forget(state, FLAG.memory_id, reason="  ", actor=ANA)
    with pytest.raises(NotFoundError):
        plan_forget(state, "mem-0000000000000000", reason="x", actor=ANA)
    with pytest.raises(PolicyError):
        plan_forget(state, FLAG.memory_id, reason="x", actor="agent")
    (draft,) = plan_forget(state, FLAG.memory_id, reason=" outdated ", actor=ANA)
    assert (draft.type, draft.actor, draft.subject) == ("memory_forgotten", ANA, "ablazione")
    state = apply(state, [draft])
    assert state.memories[FLAG.memory_id].forgotten_reason == "outdated"
    with pytest.raises(PolicyError, match="already forgotten"):
        plan_forget(state, FLAG.memory_id, reason="again", actor=ANA)


def test_a_superseded_memory_can_still_be_forgotten() -> None:
    older = apply(EMPTY, [saved("ablazione", "free text", "procedures.flag", session="S0")])
    state = apply(older, plan_saves(older, [FLAG], session="S1", reviewer=ANA).drafts)
    old_id = memory_id("ablazione", "procedures.flag", "free text")
    state = apply(state, plan_forget(state, old_id, reason="never right", actor=ANA))
    assert state.memories[old_id].status == "forgotten"


def test_a_solved_question_is_recorded_once_by_the_module() -> None:
    drafts = plan_solved(
        EMPTY,
        session="S1",
        seq=40,
        question="Quante ablazioni nel 2023?",
        rewritten="Ablations in 2023",
        sql="SELECT count(*) FROM procedures",
        evidence=["ev:1"],
        tables=["procedures"],
        result_sha256="ab" * 32,
        language="it",
    )
    (draft,) = drafts
    assert (draft.type, draft.actor) == ("solved_question_saved", "module:memory")
    state = apply(EMPTY, drafts)
    found = state.solved[solved_id("S1")]
    assert (found.tables, found.evidence, found.rewritten) == (
        ("procedures",),
        ("ev:1",),
        "Ablations in 2023",
    )
    assert plan_solved(state, session="S1", seq=40, question="q", sql="SELECT 2") == []
    with pytest.raises(UsageError):
        plan_solved(EMPTY, session="S1", seq=40, question="q", sql=" ")


def test_planned_writes_land_in_a_real_registry_that_verifies(tmp_path: Path) -> None:
    store = FileSystemStore(tmp_path / "sessions", tmp_path / ".tht" / "cache")
    registry = registry_on(store)
    loaded = registry.load_for_write()
    loaded = registry.append(loaded, [saved("ablazione", "free text", "procedures.flag")])
    plan = plan_saves(loaded.state, [FLAG, YEAR], session="S1", reviewer=ANA)
    loaded = registry.append(loaded, plan.drafts)
    loaded = registry.append(
        loaded, plan_forget(loaded.state, YEAR.memory_id, reason="x", actor=ANA)
    )
    loaded = registry.append(
        loaded, plan_solved(loaded.state, session="S1", seq=40, question="q", sql="SELECT 1")
    )
    assert registry.verify().ok
    fresh = registry_on(store).load_for_write().state
    assert fresh == loaded.state == fold_registry(store.workspace_ledger("memory").read().events)
    assert [m.memory_id for m in fresh.live()] == [FLAG.memory_id]
    # the re-run after a crash between the registry and memory_promoted saves nothing twice
    assert plan_saves(fresh, [FLAG], session="S1", reviewer=ANA).drafts == []
