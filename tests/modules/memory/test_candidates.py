"""F8's promotion candidates, computed from a real session's ledger: which clarifications are
candidates, which are left out and why, the reviewer's checklist and the reason when there is
none — each checked against what the Workflow Kernel accepts and records."""

from __future__ import annotations

import msgspec
import pytest

from kernel import events as ev
from kernel.errors import UsageError
from kernel.memory_events import MEMORY_CONTRACT
from kernel.outcomes import ModuleOutcome, ReviewRequest
from modules.memory import (
    MemoryState,
    fold_registry,
    memory_id,
    nothing_to_promote,
    promotion_candidates,
    promotion_review,
)
from modules.memory.candidates import NONE_OPTION
from tests.modules.memory.registry_support import Session, forgotten, proposed, saved, stamped

EMPTY = MemoryState()


def _types(events: list[ev.Event]) -> list[str]:
    return [ev.info_of(e).type for e in events]


def test_effective_clarifications_are_candidates_with_the_contracts_fields() -> None:
    s = Session()
    a = s.clarify("ablazione", "flag", "procedures.flag")
    b = s.clarify("anno", "calendar year")
    report = promotion_candidates(s.state, EMPTY, language="it")
    assert [(c.seq, c.subject, c.meaning, c.target) for c in report.candidates] == [
        (a, "ablazione", "flag", "procedures.flag"),
        (b, "anno", "calendar year", None),
    ]
    first = report.candidates[0]
    assert first.memory_id == memory_id("ablazione", "procedures.flag", "flag")
    assert first.language == "it" and first.label == "ablazione = flag → procedures.flag"
    assert report.excluded == {}


def test_only_the_fields_the_contract_names_are_read() -> None:
    assert MEMORY_CONTRACT.reusable["concept_clarified"] == ("meaning", "target")
    s = Session()
    (seq,) = s.decide(
        "disambiguation",
        proposed("concept_clarified", "ablazione", meaning="flag", alternatives=["free text"]),
    )
    (candidate,) = promotion_candidates(s.state, EMPTY, language="").candidates
    assert candidate.seq == seq and candidate.alternatives == ()  # not in the contract


def test_a_retracted_clarification_is_not_a_candidate() -> None:
    s = Session()
    a = s.clarify("ablazione", "flag", "procedures.flag")
    b = s.clarify("ablazione", "free text", "procedures.note")
    s.retract(a)
    report = promotion_candidates(s.state, EMPTY, language="")
    assert [c.seq for c in report.candidates] == [b]
    assert report.excluded == {"retracted": 1}


def test_a_stale_clarification_after_a_reopen_is_never_a_candidate() -> None:
    s = Session()
    old = s.clarify("ablazione", "flag", "procedures.flag")
    s.close("disambiguation")
    s.skip("memory_recall")
    s.reopen("disambiguation")
    assert s.state.decision(old).status == "stale"  # type: ignore[union-attr]
    report = promotion_candidates(s.state, EMPTY, language="")
    assert report.candidates == () and report.excluded == {"stale": 1}
    new = s.clarify("ablazione", "flag", "procedures.flag")  # clarified again: a new decision
    assert [c.seq for c in promotion_candidates(s.state, EMPTY, language="").candidates] == [new]


def test_a_clarification_already_in_memory_is_not_a_candidate() -> None:
    s = Session()
    s.clarify("Ablazióne", "Flag.", "PROCEDURES.FLAG")  # the same content, written differently
    live = fold_registry(stamped([saved("ablazione", "flag", "procedures.flag", session="S0")]))
    report = promotion_candidates(s.state, live, language="")
    assert report.candidates == () and report.excluded == {"in_memory": 1}
    mid = memory_id("ablazione", "procedures.flag", "flag")
    gone = fold_registry(
        stamped([saved("ablazione", "flag", "procedures.flag", session="S0"), forgotten(mid)])
    )
    assert len(promotion_candidates(s.state, gone, language="").candidates) == 1  # forgotten


def test_a_clarification_without_a_subject_is_left_out() -> None:
    s = Session()
    s.clarify(None, "flag", "procedures.flag")
    s.clarify("  ", "year")
    report = promotion_candidates(s.state, EMPTY, language="")
    assert report.candidates == () and report.excluded == {"no_subject": 2}


def test_the_same_content_clarified_twice_is_one_candidate_the_latest() -> None:
    s = Session()
    s.clarify("ablazione", "flag", "procedures.flag")
    later = s.clarify("ABLAZIONE", "flag", "procedures.flag")
    report = promotion_candidates(s.state, EMPTY, language="")
    assert [c.seq for c in report.candidates] == [later]
    assert report.excluded == {"duplicate": 1}


def test_a_memory_applied_in_f2_is_not_promoted_again() -> None:
    s = Session()
    s.clarify("ablazione", "flag", "procedures.flag")
    s.close("disambiguation")
    mid = memory_id("ablazione", "procedures.flag", "flag")
    option = ev.ReviewOptionPayload(
        id=f"m:{mid}",
        label="ablazione = flag",
        events=(proposed("memory_applied", "ablazione", memory_id=mid, kind="memory"),),
    )
    review = ReviewRequest(kind="decide", prompt="Apply?", options=(option,), closes=True)
    asked = s.run_module("memory_recall", ModuleOutcome(status="awaiting_review", review=review))
    assert asked is not None
    s.answer(asked, option.id)
    report = promotion_candidates(s.state, EMPTY, language="")  # forgotten since: not in memory
    assert report.candidates == () and report.excluded == {"recalled": 1}


def _to_promotion(s: Session) -> None:
    s.close("disambiguation")
    s.skip("memory_recall")
    s.advance_to("memory_promotion")


def test_the_checklist_preselects_every_candidate_and_closes_the_contribution() -> None:
    s = Session()
    a = s.clarify("ablazione", "flag", "procedures.flag")
    b = s.clarify("anno", "calendar year")
    _to_promotion(s)
    report = promotion_candidates(s.state, EMPTY, language="it")
    review = promotion_review(report)
    assert review.kind == "decide" and review.closes
    assert "2 clarifications" in review.prompt
    first, second, none = review.options
    assert (first.id, first.label, first.selected) == (
        f"c{a}",
        "ablazione = flag → procedures.flag",
        True,
    )
    (promoted,) = first.events
    assert promoted.type == "memory_promoted" and promoted.subject == "ablazione"
    assert promoted.payload == {
        "source_seq": a,
        "memory_id": memory_id("ablazione", "procedures.flag", "flag"),
        "content": "ablazione = flag → procedures.flag",
        "subject": "ablazione",
        "meaning": "flag",
        "target": "procedures.flag",
    }
    assert not isinstance(first.unchosen, msgspec.UnsetType)
    (declined,) = first.unchosen
    assert declined.payload == {"source_seq": a, "reason": "not promoted by the reviewer"}
    assert (second.id, second.label) == (f"c{b}", "anno = calendar year")
    assert none.id == NONE_OPTION and none.events == ()
    # the kernel accepts it from Memory's own run; the reviewer unchecks the second
    asked = s.run_module("memory_promotion", ModuleOutcome(status="awaiting_review", review=review))
    assert asked is not None
    recorded = s.answer(asked, f"c{a}")
    assert _types(recorded)[1:] == [
        "memory_promoted",
        "memory_promotion_declined",
        "stage_completed",
    ]
    assert s.state.current_stage == "finalize"
    after = promotion_candidates(s.state, EMPTY, language="it")
    assert after.candidates == () and after.excluded == {"decided": 2}


def test_declining_every_candidate_records_each_as_declined() -> None:
    s = Session()
    a = s.clarify("ablazione", "flag", "procedures.flag")
    _to_promotion(s)
    review = promotion_review(promotion_candidates(s.state, EMPTY, language=""))
    asked = s.run_module("memory_promotion", ModuleOutcome(status="awaiting_review", review=review))
    assert asked is not None
    recorded = s.answer(asked, NONE_OPTION)
    declined = [e for e in recorded if isinstance(e, ev.MemoryPromotionDeclined)]
    assert [e.payload.source_seq for e in declined] == [a]


def test_a_declined_candidate_never_comes_back_in_the_same_session() -> None:
    s = Session()
    a = s.clarify("ablazione", "flag", "procedures.flag")
    _to_promotion(s)
    review = promotion_review(promotion_candidates(s.state, EMPTY, language=""))
    asked = s.run_module("memory_promotion", ModuleOutcome(status="awaiting_review", review=review))
    assert asked is not None
    s.answer(asked, NONE_OPTION)
    s.reopen("disambiguation")  # everything after F1 is stale, the decline included
    again = s.clarify("ablazione", "flag", "procedures.flag")
    report = promotion_candidates(s.state, EMPTY, language="")
    assert report.candidates == ()
    assert report.excluded == {"stale": 1, "decided": 1}
    assert again != a


def test_no_candidate_completes_the_contribution_with_the_reason() -> None:
    s = Session()
    a = s.clarify("ablazione", "flag", "procedures.flag")
    b = s.clarify("anno", "year")
    s.clarify("ospedale", "facility", "h.id")
    s.retract(a)
    s.retract(b)
    _to_promotion(s)
    live = fold_registry(stamped([saved("ospedale", "facility", "h.id", session="S0")]))
    report = promotion_candidates(s.state, live, language="")
    assert report.candidates == () and report.excluded == {"retracted": 2, "in_memory": 1}
    outcome = nothing_to_promote(report)
    assert outcome.status == "completed"
    (event,) = outcome.events
    assert event.type == "memory_nothing_to_promote"
    assert event.payload == {
        "reason": "no clarification to promote: 2 retracted, 1 already in memory",
        "excluded": {"retracted": 2, "in_memory": 1},
    }
    s.run_module("memory_promotion", outcome)
    assert s.state.current_stage == "finalize"
    none = promotion_candidates(Session().state, EMPTY, language="")
    assert "clarified no concept" in nothing_to_promote(none).events[0].payload["reason"]
    with pytest.raises(UsageError):
        promotion_review(none)  # nothing to review: never an empty checklist
