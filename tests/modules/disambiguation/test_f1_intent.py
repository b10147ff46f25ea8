"""F1 asks what the question's intent wants settled first (issue 14 item 5): a required
dimension the question does not name (``clarify: ask_first``, or ``assume`` with no default)
and a period that cannot be read as dates, after the catalog's ambiguities and unanswerable
terms, one at a time; a dimension the question names by a value the catalog holds is not asked;
the assumptions are listed in the confirm that closes F1. Driven through a real Workflow Kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.domain_profile import Dimension, DomainProfile
from modules.disambiguation.ambiguity import detect_ambiguities
from modules.disambiguation.ambiguity_records import OPEN_OPTION, AmbiguityReport, FoundValue
from modules.disambiguation.f1_policy import plan_disambiguation
from modules.disambiguation.intent_questions import (
    EVERY_OPTION,
    MAX_VALUE_OPTIONS,
    intent_questions,
)
from modules.disambiguation.intent_rules import RuleIntentParser
from tests.modules.disambiguation.test_ambiguity import PLAIN_VIEW
from tests.modules.disambiguation.test_ambiguity_policy import F1

WARD = Dimension(
    name="ward",
    synonyms={"en": ("ward", "department"), "it": ("reparto",)},
    required=True,
    clarify="ask_first",
)
PERIOD = Dimension(name="period", kind="temporal", default="last 12 months", required=True,
                   clarify="assume")  # fmt: skip
PROFILE = DomainProfile(dimensions=(WARD, PERIOD))
QUESTION = "How many beds does each hospital have?"


def _intent(question: str, profile: DomainProfile = PROFILE) -> Any:
    return RuleIntentParser().parse(question, profile, FixedClock())


class IntentF1(F1):
    def __init__(self, tmp_path: Path, question: str, profile: DomainProfile = PROFILE) -> None:
        super().__init__(tmp_path, question)
        self.report = detect_ambiguities(question, PLAIN_VIEW)
        self.intent = _intent(question, profile)
        self.profile = profile

    def plan(self, **kwargs: Any) -> Any:
        return plan_disambiguation(
            self.state, self.report, intent=self.intent, profile=self.profile, **kwargs
        )


def test_a_required_ask_first_dimension_is_asked_then_f1_closes_with_the_assumptions(
    tmp_path: Path,
) -> None:
    f1 = IntentF1(tmp_path, QUESTION)
    assert f1.report.ambiguities == () and f1.report.unanswerable == ()
    seq, review = f1.ask()
    assert review.kind == "select"
    assert "which ward" in review.prompt and "'department'" in review.prompt
    assert [o.id for o in review.options] == [EVERY_OPTION, OPEN_OPTION]
    (every,) = f1.choose(seq, EVERY_OPTION)
    assert isinstance(every, ev.ConceptClarified) and every.subject == "ward"
    assert "no filter" in every.payload.meaning

    _, closing = f1.ask()
    assert closing.kind == "confirm"
    assert "1 asked for the DomainProfile" in closing.prompt
    assert 'period: not in the question, assumed "last 12 months"' in closing.prompt


def test_leaving_it_open_settles_it_and_a_retraction_asks_again(tmp_path: Path) -> None:
    f1 = IntentF1(tmp_path, QUESTION)
    seq, _ = f1.ask()
    (opened,) = f1.choose(seq, OPEN_OPTION)
    assert isinstance(opened, ev.AmbiguityOpen) and opened.subject == "ward"
    assert f1.plan().review is not None and f1.plan().review.kind == "confirm"
    f1.kernel.retract(f1.id, opened.seq, actor="human:ana", reason="the ward matters")
    again = f1.plan().review
    assert again is not None and again.kind == "select" and "which ward" in again.prompt


def test_a_dimension_the_question_names_is_not_asked(tmp_path: Path) -> None:
    f1 = IntentF1(tmp_path, "How many beds does each ward have in 2024?")
    assert f1.intent.missing == ()
    review = f1.plan().review
    assert review is not None and review.kind == "confirm"
    assert "assume" not in review.prompt  # the period is named: nothing assumed


def test_a_value_the_catalog_holds_names_its_dimension(tmp_path: Path) -> None:
    """ "oncology" is a value of ``wards.ward_type``: the ward is named, not missing."""
    f1 = IntentF1(tmp_path, "How many beds does oncology have in 2024?")
    assert f1.intent.missing == ("ward",)  # the IntentParser reads synonyms only
    f1.report = AmbiguityReport(
        question=f1.report.question,
        values=(FoundValue(text="oncology", span=(19, 27), columns=("wards.ward_type",)),),
    )
    review = f1.plan().review
    assert review is not None and review.kind == "confirm"
    # a value of a column no synonym names does not count
    f1.report = AmbiguityReport(
        question=f1.report.question,
        values=(FoundValue(text="oncology", span=(19, 27), columns=("hospitals.name",)),),
    )
    review = f1.plan().review
    assert review is not None and review.kind == "select" and "which ward" in review.prompt


def test_an_unreadable_period_is_asked_with_only_leave_open(tmp_path: Path) -> None:
    profile = DomainProfile(dimensions=(PERIOD,))
    f1 = IntentF1(tmp_path, "How many beds fino al 2023?", profile)
    assert f1.intent.unresolved == ("fino al 2023",)
    seq, review = f1.ask()
    assert "'fino al 2023' names a period that cannot be read as dates" in review.prompt
    assert [o.id for o in review.options] == [OPEN_OPTION]
    (opened,) = f1.choose(seq, OPEN_OPTION)
    assert opened.subject == "fino al 2023"
    assert f1.plan().review.kind == "confirm"  # type: ignore[union-attr]


def test_catalog_ambiguities_come_before_the_intent_s_questions(tmp_path: Path) -> None:
    f1 = IntentF1(tmp_path, "What is the salary of each hospital?")
    assert [u.term for u in f1.report.unanswerable] == ["salary"]
    first = f1.plan().review
    assert first is not None and "salary" in first.prompt


def test_without_a_profile_or_dimensions_nothing_is_asked(tmp_path: Path) -> None:
    f1 = IntentF1(tmp_path, QUESTION, DomainProfile())
    review = f1.plan().review
    assert review is not None and review.kind == "confirm" and "assume" not in review.prompt


NAMES = ("ward", "region", "payer", "unit", "shift")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(NAMES),
            st.booleans(),  # required
            st.sampled_from(["ask_first", "assume", "none"]),
            st.sampled_from([None, "all"]),  # default
        ),
        unique_by=lambda d: d[0],
        max_size=5,
    )
)
def test_exactly_the_required_dimensions_with_nothing_to_assume_are_asked_in_profile_order(
    dims: list[tuple[str, bool, str, str | None]],
) -> None:
    profile = DomainProfile(
        dimensions=tuple(
            Dimension(name=n, required=r, clarify=c, default=d)  # type: ignore[arg-type]
            for n, r, c, d in dims
        )
    )
    intent = _intent("How many beds?", profile)
    asked = [q.subject for q in intent_questions(intent, profile)]
    expected = [
        n for n, r, c, d in dims if r and (c == "ask_first" or (c == "assume" and d is None))
    ]
    assert asked == expected
    for question in intent_questions(intent, profile):
        assert question.options[-1].id == OPEN_OPTION
        assert all(e.subject == question.subject for o in question.options for e in o.events)


BOUND = Dimension(
    name="ward", synonyms={"en": ("ward",)}, required=True, clarify="ask_first",
    column="wards.name",
)  # fmt: skip


def test_a_bound_dimension_is_offered_its_column_s_values_as_groundings() -> None:
    profile = DomainProfile(dimensions=(BOUND,))
    intent = _intent(QUESTION, profile)
    (question,) = intent_questions(intent, profile, (), {"WARDS.name": ("Oncology", "ICU")})
    assert [o.id for o in question.options] == ["v1", "v2", EVERY_OPTION, OPEN_OPTION]
    grounded = question.options[0].events[0]
    assert grounded.type == "value_grounded" and grounded.subject == "ward"
    assert grounded.payload == {
        "value": "Oncology",
        "column": "wards.name",
        "meaning": "ward = 'Oncology' (wards.name)",
    }
    many = {"wards.name": tuple(f"w{i}" for i in range(MAX_VALUE_OPTIONS + 1))}
    (crowded,) = intent_questions(intent, profile, (), many)
    assert [o.id for o in crowded.options] == [EVERY_OPTION, OPEN_OPTION]
    assert f"more than {MAX_VALUE_OPTIONS} values" in crowded.prompt
    (unindexed,) = intent_questions(intent, profile, (), {})  # sensitive, or no index
    assert [o.id for o in unindexed.options] == [EVERY_OPTION, OPEN_OPTION]


def test_a_bound_dimension_is_named_by_a_value_of_its_column_only() -> None:
    profile = DomainProfile(dimensions=(BOUND,))
    intent = _intent("How many beds does oncology have?", profile)
    own = FoundValue(text="oncology", span=(19, 27), columns=("wards.name",))
    other = FoundValue(text="oncology", span=(19, 27), columns=("wards.ward_type",))
    assert intent_questions(intent, profile, (own,)) == []
    # unbound, "ward_type" would name the ward; bound to wards.name, it does not
    assert [q.subject for q in intent_questions(intent, profile, (other,))] == ["ward"]
