"""F2's recall plan: what is searched, what is dropped (below the floor, no longer in the
registry, already decided in the session), what the reviewer sees (each memory with its
provenance, contradictions explicit, the most similar solved questions) and the recorded reason
when nothing is shown — each outcome checked against what the Workflow Kernel accepts."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from kernel import events as ev
from kernel.memory_events import MemorySource, SolvedQuestionSavedPayload
from modules.memory import (
    MemoryState,
    RecallHit,
    fold_registry,
    memory_id,
    plan_recall,
    recall_texts,
    solved_id,
)
from modules.memory.candidates import NONE_OPTION
from modules.memory.fold import sql_sha256
from tests.modules.memory.registry_support import (
    ANA,
    Session,
    forgotten,
    proposed,
    saved,
    stamped,
    superseded,
)

FLAG = memory_id("ablazione", "procedures.flag", "flag")
NOTE = memory_id("ablazione", "procedures.note", "flag")
TEXT = memory_id("ablazione", "procedures.flag", "free text")
YEAR = memory_id("anno", None, "calendar year")


def solved(
    session: str, question: str = "Ablazioni nel 2022?", sql: str = "SELECT 1"
) -> ev.EventDraft:
    return ev.EventDraft(
        type="solved_question_saved",
        actor="module:memory",
        payload=SolvedQuestionSavedPayload(
            solved_id=solved_id(session),
            question=question,
            sql=sql,
            sql_sha256=sql_sha256(sql),
            source=MemorySource(session=session, seq=60),
        ),
    )


def registry(*drafts: ev.EventDraft) -> MemoryState:
    return fold_registry(stamped(drafts))


def hit(id_: str, score: float = 0.9, kind: str = "memory") -> RecallHit:
    return RecallHit(id=id_, kind=kind, score=score)  # type: ignore[arg-type]


def recall(s: Session, memory: MemoryState, *hits: RecallHit, limit: int = 5):  # type: ignore[no-untyped-def]
    return plan_recall(
        s.state, memory, hits, considered=len(hits), floor=0.5, searched=2, limit=limit
    )


def at_f2() -> Session:
    s = Session("Quante ablazioni nel 2023 per ospedale?")
    s.clarify("ospedale", "facility", "h.id")
    s.close("disambiguation")
    return s


MEMORY = registry(
    saved("ablazione", "flag", "procedures.flag", session="S0", seq=7),
    saved("anno", "calendar year", session="S0", seq=8),
    solved("S0"),
)


def test_recall_searches_the_question_the_rewritten_question_and_the_clarified_subjects() -> None:
    s = Session("Quante ablazioni nel 2023?")
    s.clarify("Ablazione", "flag")
    s.clarify("ablazione ", "free text")  # the same subject: searched once
    s.clarify("anno", "year")
    assert recall_texts(s.state) == ["Quante ablazioni nel 2023?", "Ablazione", "anno"]
    s.close("disambiguation")
    s.skip("memory_recall")
    s.decide("rewriting", proposed("question_rewritten", None, question="Ablations in 2023"))
    later = s.decide("rewriting", proposed("question_rewritten", None, question="Ablations, 2023"))
    assert later and recall_texts(s.state)[:2] == ["Quante ablazioni nel 2023?", "Ablations, 2023"]


def test_an_empty_memory_completes_the_stage_with_the_reason() -> None:
    s = at_f2()
    outcome = recall(s, MemoryState())
    assert outcome.status == "completed" and outcome.review is None
    (event,) = outcome.events
    assert event.type == "memory_nothing_recalled"
    assert event.payload == {
        "reason": "the workspace memory is empty",
        "searched": 2,
        "considered": 0,
        "floor": 0.5,
    }
    assert s.run_module("memory_recall", outcome) is None
    assert s.state.stage("memory_recall").state == "completed"  # type: ignore[union-attr]


def test_hits_under_the_relevance_floor_are_noise_not_recall() -> None:
    s = at_f2()
    outcome = recall(s, MEMORY, hit(FLAG, 0.49), hit(solved_id("S0"), 0.2, "solved_question"))
    assert outcome.status == "completed"
    reason = outcome.events[0].payload["reason"]
    assert "2 hits considered" in reason and "relevance floor 0.5" in reason


def test_what_the_registry_no_longer_holds_is_never_shown() -> None:
    s = at_f2()
    memory = registry(
        saved("ablazione", "flag", "procedures.flag", session="S0"),
        saved("ablazione", "free text", "procedures.flag", session="S0"),
        superseded(FLAG, TEXT),
        forgotten(TEXT, reason="wrong"),
    )
    outcome = recall(
        s,
        memory,
        hit(FLAG),
        hit(TEXT),
        hit("mem-0000000000000000"),
        hit("sq-1", kind="solved_question"),
    )
    assert outcome.status == "completed"
    assert "4 no longer in memory" in outcome.events[0].payload["reason"]
    # a memory id offered as a solved question (or the reverse) is not what the registry holds
    assert recall(s, MEMORY, hit(FLAG, kind="solved_question")).status == "completed"


def test_what_the_session_already_decided_is_not_recalled() -> None:
    s = Session()
    s.clarify("Ablazione", "Flag", "procedures.flag")  # F1 already chose this very content
    s.close("disambiguation")
    outcome = recall(s, MEMORY, hit(FLAG))
    assert outcome.status == "completed"
    assert "1 already decided in this session" in outcome.events[0].payload["reason"]


def test_the_review_shows_each_memory_with_meaning_target_and_provenance() -> None:
    s = at_f2()
    outcome = recall(
        s,
        MEMORY,
        hit(YEAR, 0.7),
        hit(FLAG, 0.95),
        hit(FLAG, 0.6),
        hit(solved_id("S0"), 0.8, "solved_question"),
    )
    assert outcome.status == "awaiting_review" and outcome.events == ()
    review = outcome.review
    assert review is not None and review.kind == "decide" and review.closes
    flag, year, question, none = review.options
    assert [flag.id, year.id, question.id, none.id] == [
        f"m:{FLAG}",
        f"m:{YEAR}",
        f"q:{solved_id('S0')}",
        NONE_OPTION,
    ]  # best score first, each once
    assert (
        flag.label
        == f"ablazione = flag → procedures.flag (from session S0 seq 7, promoted by {ANA})"
    )
    assert year.label.startswith("anno = calendar year (from session S0 seq 8")
    assert isinstance(flag.selected, msgspec.UnsetType)  # applying is a choice: not pre-selected
    (applied,) = flag.events
    assert applied.type == "memory_applied" and applied.subject == "ablazione"
    assert applied.payload == {
        "memory_id": FLAG,
        "content": "ablazione = flag → procedures.flag",
        "kind": "memory",
        "subject": "ablazione",
        "meaning": "flag",
        "target": "procedures.flag",
        "source_session": "S0",
        "source_seq": 7,
    }
    assert not isinstance(flag.unchosen, msgspec.UnsetType)
    (rejected,) = flag.unchosen
    assert rejected.payload == {"memory_id": FLAG, "reason": "not applied by the reviewer"}
    assert question.label == "Ablazioni nel 2022? → SELECT 1 (session S0)"
    assert question.events[0].payload["kind"] == "solved_question"
    assert question.events[0].payload["content"] == "Ablazioni nel 2022?\nSELECT 1"
    assert "2 memories and 1 solved question" in review.prompt


def test_each_memory_option_says_why_it_was_recalled() -> None:
    s = at_f2()
    named = RecallHit(id=FLAG, kind="memory", score=1.0, why="named")
    weaker = RecallHit(id=FLAG, kind="memory", score=0.9, why="cosine")  # its best hit counts
    alike = RecallHit(id=YEAR, kind="memory", score=0.88, why="cosine")
    review = recall(s, MEMORY, weaker, alike, named).review
    assert review is not None
    flag, year, _ = review.options
    assert flag.label.endswith(
        f"(from session S0 seq 7, promoted by {ANA}; recalled because the question names its "
        "subject)"
    )
    assert year.label.endswith("; recalled by likeness of meaning only)")
    # the label is what the reviewer reads; what applying records does not change
    assert flag.events[0].payload["content"] == "ablazione = flag → procedures.flag"
    mention = RecallHit(id=YEAR, kind="memory", score=0.86, why="mention")
    (option, _) = recall(s, MEMORY, mention).review.options  # type: ignore[union-attr]
    assert option.label.endswith("names its subject in another form)")


def test_applying_one_memory_rejects_the_others_and_closes_f2() -> None:
    s = at_f2()
    outcome = recall(s, MEMORY, hit(FLAG), hit(YEAR), hit(solved_id("S0"), kind="solved_question"))
    asked = s.run_module("memory_recall", outcome)
    assert asked is not None
    recorded = s.answer(asked, f"m:{FLAG}")
    kinds = [(ev.info_of(e).type, getattr(e.payload, "memory_id", None)) for e in recorded[1:]]
    assert kinds == [
        ("memory_applied", FLAG),
        ("memory_rejected", YEAR),
        ("memory_rejected", solved_id("S0")),
        ("stage_completed", None),
    ]
    assert s.state.current_stage == "rewriting"
    # run again (e.g. a resumed session): everything was decided, nothing is shown twice
    assert recall(s, MEMORY, hit(FLAG), hit(YEAR)).status == "completed"


def test_contradicting_memories_are_both_shown_and_the_prompt_says_so() -> None:
    s = at_f2()
    memory = registry(
        saved("ablazione", "flag", "procedures.flag", session="S0", seq=7),
        saved("Ablazione", "flag", "procedures.note", session="S5", seq=3, reviewer="human:bob"),
    )
    outcome = recall(s, memory, hit(NOTE, 0.9))  # only one was similar enough
    assert outcome.review is not None
    note, flag, _ = outcome.review.options
    assert (note.id, flag.id) == (f"m:{NOTE}", f"m:{FLAG}")
    assert "from session S5 seq 3, promoted by human:bob" in note.label
    assert "from session S0 seq 7" in flag.label
    assert "contradict" in outcome.review.prompt
    assert "procedures.flag and procedures.note" in outcome.review.prompt


def test_at_most_limit_memories_and_two_solved_questions_the_same_text_once() -> None:
    s = at_f2()
    memory = registry(
        *(saved(f"concetto {i}", "m", session="S0", seq=i) for i in range(1, 8)),
        solved("S1", "Quante?", "SELECT 1"),
        solved("S2", "quante", "SELECT  1"),  # the same question and SQL, normalized
        solved("S3", "Quante nel 2021?", "SELECT 2"),
        solved("S4", "Quante nel 2020?", "SELECT 3"),
    )
    ids = [memory_id(f"concetto {i}", None, "m") for i in range(1, 8)]
    hits = [hit(mid, 0.9 - i / 100) for i, mid in enumerate(ids)]
    hits += [hit(solved_id(x), 0.8, "solved_question") for x in ("S1", "S2", "S3", "S4")]
    outcome = recall(s, memory, *hits, limit=3)
    assert outcome.review is not None
    shown = [o.id for o in outcome.review.options]
    assert shown[:3] == [f"m:{mid}" for mid in ids[:3]]
    assert shown[3:] == [f"q:{solved_id('S1')}", f"q:{solved_id('S3')}", NONE_OPTION]


# --------------------------------------------------------------------------- property

_UNIVERSE = [
    saved("ablazione", "flag", "procedures.flag", session="S0"),
    saved("ablazione", "free text", "procedures.flag", session="S0"),
    saved("ablazione", "flag", "procedures.note", session="S0"),
    saved("anno", "calendar year", session="S0"),
    saved("ospedale", "facility", "h.id", session="S0"),  # what the session clarified
]
_IDS = [d.payload.memory_id for d in _UNIVERSE]  # type: ignore[attr-defined]
_STATE = at_f2().state


@given(
    st.lists(st.sampled_from(range(len(_UNIVERSE))), unique=True),
    st.lists(st.sampled_from(_IDS), max_size=4),
    st.lists(st.tuples(st.sampled_from(_IDS), st.floats(0, 1)), max_size=8),
)
def test_only_live_undecided_memories_are_offered_each_once(
    saved_idx: list[int], forget: list[str], raw: list[tuple[str, float]]
) -> None:
    drafts = [_UNIVERSE[i] for i in saved_idx]
    present = {d.payload.memory_id for d in drafts}  # type: ignore[attr-defined]
    drafts += [forgotten(mid) for mid in dict.fromkeys(forget) if mid in present]
    memory = registry(*drafts)
    hits = [hit(mid, score) for mid, score in raw]
    outcome = plan_recall(_STATE, memory, hits, considered=len(hits), floor=0.5, searched=2)
    if outcome.review is None:
        assert outcome.status == "completed"
        assert not any(
            score >= 0.5
            and memory.memories.get(mid) is not None
            and memory.memories[mid].live
            and mid != memory_id("ospedale", "h.id", "facility")
            for mid, score in raw
        )
        return
    offered = [o.id.removeprefix("m:") for o in outcome.review.options if o.id != NONE_OPTION]
    assert len(offered) == len(set(offered))
    for mid in offered:
        assert memory.memories[mid].live
    assert memory_id("ospedale", "h.id", "facility") not in offered  # decided in F1
    above = {mid for mid, score in raw if score >= 0.5}
    for mid in offered:  # a hit above the floor, or a live memory contradicting a shown one
        assert mid in above or any(
            mid in {c.memory_id for c in memory.contradicting(other)} for other in offered
        )
