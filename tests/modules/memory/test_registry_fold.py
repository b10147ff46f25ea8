"""The Memory registry's fold: what it admits, what it refuses (a problem with its seq, never
applied, never raised), and that it is deterministic and incremental like the session fold."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.memory_events import MemorySource, SolvedQuestionSavedPayload
from modules.memory import fold_registry, fold_registry_from, memory_id, solved_id, subject_key
from modules.memory.fold import sql_sha256
from modules.memory.records import MemoryState
from tests.modules.memory.registry_support import (
    ANA,
    forgotten,
    saved,
    stamped,
    superseded,
)

FLAG = memory_id("ablazione", "procedures.flag", "flag")
TEXT = memory_id("ablazione", "procedures.flag", "free text")
OTHER_TARGET = memory_id("ablazione", "procedures.note", "flag")


def solved(
    session: str = "S1", *, sql: str = "SELECT 1", forged: str | None = None, digest: str = ""
) -> ev.EventDraft:
    return ev.EventDraft(
        type="solved_question_saved",
        actor="module:memory",
        payload=SolvedQuestionSavedPayload(
            solved_id=forged or solved_id(session),
            question="How many?",
            sql=sql,
            sql_sha256=digest or sql_sha256(sql),
            source=MemorySource(session=session, seq=40),
        ),
    )


def fold(*drafts: ev.EventDraft) -> MemoryState:
    return fold_registry(stamped(drafts))


def codes(state: MemoryState) -> list[tuple[int, str]]:
    return [(p.seq, p.code) for p in state.problems]


def test_a_saved_memory_is_live_with_its_provenance() -> None:
    state = fold(saved("ablazione", "flag", "procedures.flag", session="S7", seq=12))
    record = state.memory(FLAG)
    assert record is not None and record.status == "live" and record.history == (1,)
    assert (record.source_session, record.source_seq, record.reviewer) == ("S7", 12, ANA)
    assert record.provenance == f"from session S7 seq 12, promoted by {ANA}"
    assert state.live() == [record] and state.problems == () and state.last_seq == 1


def test_a_forged_memory_id_is_a_problem_and_never_applied() -> None:
    state = fold(saved("ablazione", "flag", "procedures.flag", forged_id="mem-0000000000000000"))
    assert codes(state) == [(1, "forged_id")]
    assert state.memories == {} and state.last_seq == 1


def test_a_memory_is_saved_by_the_human_it_names() -> None:
    by_agent = fold(saved("ablazione", "flag", actor="agent"))
    by_someone_else = fold(saved("ablazione", "flag", actor="human:bob"))
    assert codes(by_agent) == [(1, "actor")] and by_agent.memories == {}
    assert codes(by_someone_else) == [(1, "actor")] and by_someone_else.memories == {}


def test_saving_a_live_memory_again_is_a_duplicate() -> None:
    state = fold(
        saved("ablazione", "flag", "procedures.flag"),
        saved("Ablazióne", "Flag.", "PROCEDURES.FLAG", session="S2"),  # the same, normalized
    )
    assert codes(state) == [(2, "duplicate")]
    record = state.memory(FLAG)
    assert record is not None and record.source_session == "S1" and record.history == (1,)


def test_a_forgotten_memory_saved_again_is_live_and_its_history_keeps_both() -> None:
    state = fold(
        saved("ablazione", "flag", "procedures.flag"),
        forgotten(FLAG, reason="the flag was dropped"),
        saved("ablazione", "flag", "procedures.flag", session="S9", seq=3),
    )
    record = state.memory(FLAG)
    assert state.problems == () and record is not None
    assert record.status == "live" and record.history == (1, 2, 3)
    assert (record.source_session, record.saved_seq, record.forgotten_reason) == ("S9", 3, "")


def test_forgetting_records_reason_and_actor_and_only_once() -> None:
    state = fold(saved("ablazione", "flag", "procedures.flag"), forgotten(FLAG, reason="wrong"))
    record = state.memory(FLAG)
    assert record is not None and record.status == "forgotten"
    assert (record.forgotten_reason, record.forgotten_by) == ("wrong", ANA)
    assert state.live() == []
    again = fold(saved("ablazione", "flag", "procedures.flag"), forgotten(FLAG), forgotten(FLAG))
    assert codes(again) == [(3, "forget")]
    assert codes(fold(forgotten(FLAG))) == [(1, "forget")]  # unknown
    by_agent = fold(saved("ablazione", "flag", "procedures.flag"), forgotten(FLAG, actor="agent"))
    assert codes(by_agent) == [(2, "actor")] and by_agent.live() != []


def test_a_newer_memory_supersedes_the_older_which_stays_in_history() -> None:
    state = fold(
        saved("ablazione", "flag", "procedures.flag"),
        saved("ablazione", "free text", "procedures.flag"),
        superseded(FLAG, TEXT),
    )
    older = state.memory(FLAG)
    assert state.problems == () and older is not None
    assert (older.status, older.superseded_by, older.history) == ("superseded", TEXT, (1, 3))
    assert [m.memory_id for m in state.live()] == [TEXT]


def test_superseding_what_is_not_there_or_unrelated_is_a_problem() -> None:
    base = (
        saved("ablazione", "flag", "procedures.flag"),
        saved("ablazione", "flag", "procedures.note"),
    )
    assert codes(fold(*base, superseded("mem-0000000000000000", FLAG)))[-1] == (3, "supersede")
    assert codes(fold(*base, superseded(FLAG, "mem-0000000000000000")))[-1] == (3, "supersede")
    assert codes(fold(*base, superseded(FLAG, FLAG)))[-1] == (3, "supersede")
    # another target: a contradiction to show, never a supersession
    assert codes(fold(*base, superseded(FLAG, OTHER_TARGET)))[-1] == (3, "supersede")
    twice = fold(
        saved("ablazione", "flag", "procedures.flag"),
        saved("ablazione", "free text", "procedures.flag"),
        superseded(FLAG, TEXT),
        superseded(FLAG, TEXT),
    )
    assert codes(twice) == [(4, "supersede")]
    by_agent = fold(
        saved("ablazione", "flag", "procedures.flag"),
        saved("ablazione", "free text", "procedures.flag"),
        superseded(FLAG, TEXT, actor="module:memory"),
    )
    assert codes(by_agent) == [(3, "actor")] and len(by_agent.live()) == 2


def test_two_live_memories_for_one_subject_and_two_targets_contradict() -> None:
    state = fold(
        saved("ablazione", "flag", "procedures.flag", seq=1),
        saved("anno", "year", None, seq=2),
        saved("Ablazione", "flag", "procedures.note", seq=3),
    )
    (group,) = state.contradictions()
    assert [m.memory_id for m in group] == [FLAG, OTHER_TARGET]  # both shown, never merged
    assert [m.memory_id for m in state.contradicting(FLAG)] == [OTHER_TARGET]
    resolved = fold_registry_from(state, stamped([forgotten(OTHER_TARGET)], start=4))
    assert resolved.contradictions() == [] and resolved.contradicting(FLAG) == []


def test_live_key_finds_only_the_live_memory_of_that_content() -> None:
    from modules.memory import memory_key

    state = fold(saved("ablazione", "flag", "procedures.flag"))
    found = state.live_key(memory_key(" ABLAZIONE", "procedures.flag", "flag."))
    assert found is not None and found.memory_id == FLAG
    assert state.live_key(memory_key("ablazione", "procedures.flag", "other")) is None
    gone = fold(saved("ablazione", "flag", "procedures.flag"), forgotten(FLAG))
    assert gone.live_key(memory_key("ablazione", "procedures.flag", "flag")) is None


def test_a_solved_question_is_saved_once_under_its_sessions_id() -> None:
    state = fold(solved("S1"))
    found = state.solved[solved_id("S1")]
    assert (found.source_session, found.source_seq, found.sql) == ("S1", 40, "SELECT 1")
    assert codes(fold(solved("S1"), solved("S1"))) == [(2, "duplicate")]


def test_a_forged_solved_question_is_a_problem() -> None:
    forged = fold(solved("S1", forged=solved_id("S2")))
    assert codes(forged) == [(1, "forged_id")] and forged.solved == {}
    altered = fold(solved("S1", digest="0" * 64))
    assert codes(altered) == [(1, "sql_sha256")] and altered.solved == {}


def test_a_session_or_catalog_event_does_not_belong_in_the_registry() -> None:
    clarified = ev.EventDraft(
        type="concept_clarified",
        actor=ANA,
        stage="disambiguation",
        subject="ablazione",
        payload=ev.ConceptClarifiedPayload(meaning="flag"),
    )
    restored = ev.EventDraft(
        type="relationship_restored", actor=ANA, payload=cev.RelationshipRestoredPayload(id="r")
    )
    state = fold(clarified, restored, saved("ablazione", "flag", "procedures.flag"))
    assert codes(state) == [(1, "not_memory"), (2, "not_memory")]
    assert [m.memory_id for m in state.live()] == [FLAG]


# --------------------------------------------------------------------------- properties

_SUBJECTS = ("ablazione", "Ablazióne", "anno")
_TARGETS = (None, "procedures.flag", "procedures.note")
_MEANINGS = ("flag", "free text")
_IDS = sorted(
    {memory_id(s, t, m) for s in _SUBJECTS for t in _TARGETS for m in _MEANINGS}
    | {"mem-0000000000000000"}
)


def _draft() -> st.SearchStrategy[ev.EventDraft]:
    triple = st.tuples(
        st.sampled_from(_SUBJECTS), st.sampled_from(_TARGETS), st.sampled_from(_MEANINGS)
    )
    ident = st.sampled_from(_IDS)
    return st.one_of(
        triple.map(lambda t: saved(t[0], t[2], t[1])),
        triple.map(lambda t: saved(t[0], t[2], t[1], actor="agent")),
        triple.map(lambda t: saved(t[0], t[2], t[1], forged_id=_IDS[0])),
        st.tuples(ident, ident).map(lambda p: superseded(p[0], p[1])),
        ident.map(lambda i: forgotten(i)),
        st.sampled_from(("S1", "S2")).map(lambda s: solved(s)),
        st.just(solved("S3", forged=solved_id("S1"))),
    )


@given(st.lists(_draft(), max_size=14), st.data())
def test_the_fold_is_deterministic_total_and_incremental_at_every_split(
    drafts: list[ev.EventDraft], data: st.DataObject
) -> None:
    events = stamped(drafts)
    whole = fold_registry(events)
    assert fold_registry(events) == whole  # deterministic
    assert msgspec.msgpack.encode(fold_registry(events)) == msgspec.msgpack.encode(whole)
    split = data.draw(st.integers(0, len(events)))
    assert fold_registry_from(fold_registry(events[:split]), events[split:]) == whole
    # one entry at a time, as a cache refreshed after every append would
    state = MemoryState()
    for event in events:
        state = fold_registry_from(state, [event])
    assert state == whole
    assert whole.last_seq == len(events)


@given(st.lists(_draft(), max_size=14))
def test_what_the_fold_admits_is_consistent(drafts: list[ev.EventDraft]) -> None:
    state = fold_registry(stamped(drafts))
    for record in state.memories.values():
        assert record.memory_id == memory_id(record.subject, record.target, record.meaning)
        assert record.history == tuple(sorted(set(record.history)))
        if record.status == "superseded":
            assert record.superseded_by in state.memories
        if record.status == "live":
            assert not record.forgotten_reason and record.superseded_by is None
    for sid, found in state.solved.items():
        assert sid == solved_id(found.source_session)
    assert all(1 <= p.seq <= len(drafts) for p in state.problems)
    indexed = [i for ids in state.by_subject.values() for i in ids]
    assert sorted(indexed) == sorted(state.memories)  # the subject index holds each once
    for subject, ids in state.by_subject.items():
        assert all(subject_key(state.memories[i].subject) == subject for i in ids)
    live_keys = [m.key for m in state.live()]
    assert len(live_keys) == len(set(live_keys))  # never two live memories of one content
