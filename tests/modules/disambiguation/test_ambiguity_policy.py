"""F1's policy driven through a real Workflow Kernel (in-memory store): one ambiguity at a time,
each answer recorded with the term as its subject, unanswerable terms after the ambiguities, a
confirm that closes F1; a retracted decision asks again; agent proposals are validated and
normalized against the catalog (exit 2 otherwise)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernel import events as ev
from kernel.clock import FixedClock, SeededIds
from kernel.errors import UsageError
from kernel.outcomes import ModuleOutcome
from kernel.store.memory import MemoryStore
from kernel.workflow_kernel import WorkflowKernel
from modules.disambiguation.ambiguity import detect_ambiguities
from modules.disambiguation.ambiguity_records import OPEN_OPTION, AmbiguityReport
from modules.disambiguation.f1_policy import (
    UNANSWERABLE_OPTION,
    decided_subjects,
    normalize_agent_option,
    plan_disambiguation,
)
from tests.modules.disambiguation.test_ambiguity import (
    GLOSSARY,
    HOSPITAL_VIEW,
    PLAIN_VIEW,
)
from tests.support.kernel_env import admitted_session

ANA = "human:ana"
MODULE = "module:disambiguation"
QUESTION = "Average beds of active patients by region, and their salary?"


class F1:
    """One admitted session at F1, and the module's runs and the reviewer's answers."""

    def __init__(self, tmp_path: Path, question: str = QUESTION) -> None:
        self.kernel = WorkflowKernel(
            MemoryStore(), clock=FixedClock(), ids=SeededIds(7), workflow_cache=tmp_path
        )
        self.id = admitted_session(self.kernel, question)
        self.report = detect_ambiguities(question, HOSPITAL_VIEW, glossary=GLOSSARY)

    @property
    def state(self) -> Any:
        return self.kernel.load(self.id).state

    def plan(self, **kwargs: Any) -> ModuleOutcome:
        return plan_disambiguation(self.state, self.report, **kwargs)

    def ask(self, **kwargs: Any) -> tuple[int, ev.ReviewRequestedPayload]:
        applied = self.kernel.apply_outcome(
            self.id, "disambiguation", self.plan(**kwargs), actor=MODULE
        )
        event = applied.events[-1]
        assert isinstance(event, ev.ReviewRequested)
        return event.seq, event.payload

    def choose(self, seq: int, option: str) -> list[ev.Event]:
        answered = self.kernel.answer(self.id, seq, actor=ANA, choose=(option,))
        return [e for e in answered.events if not isinstance(e, ev.ReviewAnswered)]


def test_the_report_has_what_this_session_walks_through() -> None:
    report = detect_ambiguities(QUESTION, HOSPITAL_VIEW, glossary=GLOSSARY)
    assert [(a.kind, a.term) for a in report.ambiguities] == [
        ("glossary_conflict", "active patients"),
        ("precomputed_aggregate", "beds"),
        ("joinable_attribute", "region"),
    ]
    assert [u.term for u in report.unanswerable] == ["salary"]


def test_f1_asks_one_ambiguity_at_a_time_then_the_unanswerable_then_closes(tmp_path: Path) -> None:
    f1 = F1(tmp_path)
    seq, review = f1.ask()
    assert review.kind == "select" and review.closes is msgspec.UNSET
    assert [o.id for o in review.options] == ["r1", "r2", OPEN_OPTION]
    assert "2 more after this one" in review.prompt
    (clarified,) = f1.choose(seq, "r2")
    assert isinstance(clarified, ev.ConceptClarified)
    assert clarified.subject == "active patients"
    assert clarified.payload.meaning == "with an open admission"

    seq, review = f1.ask()
    assert "beds" in review.prompt
    (chosen,) = f1.choose(seq, "r2")
    assert isinstance(chosen, ev.ConceptClarified)
    assert chosen.payload.target == "beds_stats.avg_beds"
    assert chosen.payload.alternatives == ("hospitals.beds",)

    seq, review = f1.ask()
    assert "region" in review.prompt and "more after" not in review.prompt
    (left_open,) = f1.choose(seq, OPEN_OPTION)
    assert isinstance(left_open, ev.AmbiguityOpen)
    assert left_open.subject == "region"
    assert left_open.payload.unanswerable is False

    seq, review = f1.ask()
    assert [o.id for o in review.options] == [UNANSWERABLE_OPTION, OPEN_OPTION]
    (recorded,) = f1.choose(seq, UNANSWERABLE_OPTION)
    assert isinstance(recorded, ev.AmbiguityOpen)
    assert (recorded.subject, recorded.payload.unanswerable) == ("salary", True)

    seq, review = f1.ask()
    assert review.kind == "confirm" and not review.options
    assert "3 ambiguous, 1 unanswerable" in review.prompt
    f1.kernel.answer(f1.id, seq, actor=ANA, approve=True)
    stage = f1.state.stage("disambiguation")
    assert stage is not None and stage.state == "completed"


def test_a_retracted_decision_asks_the_term_again(tmp_path: Path) -> None:
    f1 = F1(tmp_path)
    seq, _ = f1.ask()
    (clarified,) = f1.choose(seq, "r1")
    assert "active patients" in decided_subjects(f1.state)
    f1.kernel.retract(f1.id, clarified.seq, actor=ANA, reason="not what was meant")
    assert "active patients" not in decided_subjects(f1.state)
    _, review = f1.ask()
    assert "active patients" in review.prompt


def test_nothing_found_is_a_confirm_that_says_so(tmp_path: Path) -> None:
    f1 = F1(tmp_path)
    outcome = plan_disambiguation(f1.state, AmbiguityReport(question=QUESTION))
    assert outcome.review is not None and outcome.review.kind == "confirm"
    assert "no ambiguous or unanswerable term" in outcome.review.prompt


def test_decided_terms_are_matched_folded(tmp_path: Path) -> None:
    f1 = F1(tmp_path)
    seq, _ = f1.ask()
    f1.choose(seq, "r1")
    folded = AmbiguityReport(
        question=QUESTION,
        ambiguities=tuple(
            msgspec.structs.replace(a, term="  ACTIVE   Patients ")
            if a.term == "active patients"
            else a
            for a in f1.report.ambiguities
        ),
    )
    outcome = plan_disambiguation(f1.state, folded)
    assert outcome.review is not None and "beds" in outcome.review.prompt


# --------------------------------------------------------------------------- agent proposals


def proposal(**events: Any) -> dict[str, Any]:
    return {"id": "agent-1", "label": "  the ward's   region ", "events": [events]}


def test_an_agent_proposal_is_normalized_to_the_catalog_spelling() -> None:
    option = normalize_agent_option(
        proposal(
            type="concept_clarified",
            payload={
                "meaning": " region of the ward ",
                "target": "HOSPITALS.Region",
                "alternatives": ["hospitals_region.REGION", "hospitals.region", "Wards"],
            },
        ),
        HOSPITAL_VIEW,
        subject="region ",
    )
    assert option.id == "agent-1" and option.label == "the ward's region"
    (event,) = option.events
    assert event.subject == "region"
    assert event.payload == {
        "meaning": "region of the ward",
        "target": "hospitals.region",
        "alternatives": ["hospitals_region.region", "wards"],
    }


def test_an_agent_value_proposal_needs_a_real_column() -> None:
    good = normalize_agent_option(
        proposal(type="value_grounded", payload={"value": " Lazio ", "column": "hospitals.REGION"}),
        PLAIN_VIEW,
        subject="Lazio",
    )
    assert good.events[0].payload["column"] == "hospitals.region"
    with pytest.raises(UsageError, match=r"not a table\.column"):
        normalize_agent_option(
            proposal(type="value_grounded", payload={"value": "Lazio", "column": "hospitals"}),
            PLAIN_VIEW,
            subject="Lazio",
        )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            proposal(type="concept_clarified", payload={"meaning": "m", "target": "nope.region"}),
            "not a table",
        ),
        (
            proposal(type="concept_clarified", payload={"meaning": "m", "target": "nope"}),
            "not a table",
        ),
        (
            proposal(type="concept_clarified", payload={"meaning": "m", "alternatives": ["x.y"]}),
            "alternative 'x.y'",
        ),
        (proposal(type="concept_clarified", payload={"meaning": "  "}), "needs a meaning"),
        (proposal(type="concept_clarified", payload={"meaning": "m", "extra": 1}), "schema"),
        (proposal(type="question_rewritten", payload={"text": "x"}), "not 'question_rewritten'"),
        (proposal(type="ambiguity_open", payload={"question": " "}), "needs the question"),
        (
            proposal(type="concept_clarified", subject="beds", payload={"meaning": "m"}),
            "about 'beds'",
        ),
        (
            {"id": "open", "label": "x", "events": [{"type": "ambiguity_open", "payload": {}}]},
            "F1's own",
        ),
        ({"id": "a", "label": "x", "events": []}, "records no event"),
        ({"id": " ", "label": "x", "events": []}, "identifier and a label"),
        ({"id": "a", "label": "x", "events": [], "selected": True}, "preselection"),
        ({"id": "a", "label": "x", "bogus": 1}, "proposed F1 option"),
    ],
)
def test_an_agent_proposal_that_breaks_the_contract_is_a_usage_error(
    option: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        normalize_agent_option(option, HOSPITAL_VIEW, subject="region")
    assert caught.value.exit_code == 2
    assert "\n" not in str(caught.value)


def test_proposals_join_the_review_before_leave_open(tmp_path: Path) -> None:
    f1 = F1(tmp_path)
    extra = normalize_agent_option(
        proposal(type="concept_clarified", payload={"meaning": "m", "target": "hospitals"}),
        HOSPITAL_VIEW,
        subject="active patients",
    )
    seq, review = f1.ask(proposals=(extra,))
    assert [o.id for o in review.options] == ["r1", "r2", "agent-1", OPEN_OPTION]
    (chosen,) = f1.choose(seq, "agent-1")
    assert chosen.subject == "active patients"
    with pytest.raises(UsageError, match="already an option"):
        f1.plan(proposals=(msgspec.structs.replace(extra, id="r1"),))
