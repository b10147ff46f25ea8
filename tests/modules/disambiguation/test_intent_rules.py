"""``RuleIntentParser`` and the clarify policy every parser shares (intent.py, intent_rules.py)."""

from __future__ import annotations

import copy
import unicodedata
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.clock import FixedClock
from kernel.domain_profile import Dimension, DomainProfile
from modules.disambiguation.intent import CLARIFY_MODES, Intent, IntentParser
from modules.disambiguation.intent_rules import RuleIntentParser, match_dimensions, word_forms

NOW = datetime(2026, 5, 20, 10, 0, tzinfo=UTC)

HOSPITAL = Dimension(
    name="hospital",
    synonyms={"it": ("ospedale", "presidio"), "en": ("hospital", "site")},
    clarify="ask_first",
)
DEPARTMENT = Dimension(
    name="department", synonyms={"it": ("reparto", "unità operativa"), "en": ("ward",)}
)
PERIOD = Dimension(
    name="period",
    kind="temporal",
    synonyms={"en": ("admission date",)},
    default="last 12 months",
    required=True,
    clarify="assume",
)
ADMISSIONS = Dimension(
    name="admissions", kind="measure", synonyms={"it": ("ricovero",), "en": ("admission",)}
)
PROFILE = DomainProfile(dimensions=(HOSPITAL, DEPARTMENT, PERIOD, ADMISSIONS))


def parse(question: str, profile: DomainProfile = PROFILE, **flags: bool) -> Intent:
    return RuleIntentParser().parse(question, profile, FixedClock(NOW), **flags)


def names(intent: Intent) -> list[tuple[str, str]]:
    """Dimensions and measures together, in question order."""
    mentions = sorted((*intent.dimensions, *intent.measures), key=lambda m: m.span)
    return [(m.name, m.matched) for m in mentions]


def test_the_rule_parser_is_an_intent_parser() -> None:
    parser: IntentParser = RuleIntentParser()
    assert parser.parse("ricoveri", PROFILE, FixedClock(NOW)).parser == "rules"


# ----------------------------------------------------------------------------- matching


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("ricoveri per OSPEDALE", [("admissions", "ricoveri"), ("hospital", "OSPEDALE")]),
        ("ricoveri negli ospedali", [("admissions", "ricoveri"), ("hospital", "ospedali")]),
        ("ricoveri nei presidi", [("admissions", "ricoveri"), ("hospital", "presidi")]),
        ("per reparti", [("department", "reparti")]),
        ("per unita' operative", [("department", "unita' operative")]),
        ("per UNITÀ OPERATIVA", [("department", "UNITÀ OPERATIVA")]),
        ("by sites and wards", [("hospital", "sites"), ("department", "wards")]),
        ("dell'ospedale", [("hospital", "ospedale")]),
    ],
)
def test_synonyms_match_whatever_the_case_accents_and_number(
    question: str, found: list[tuple[str, str]]
) -> None:
    assert names(parse(question)) == found


@pytest.mark.parametrize(
    "question",
    [
        "costi ospedalieri",  # an adjective of ospedale
        "hospitality costs",  # shares the stem of hospital
        "hospitalization rates",
        "presidiato dai vigili",  # a verb form of presidio
        "websites and wardrobes",  # synonyms inside other words
        "ospedal",  # a prefix is not the word
        "reparto" + "\u00ad" + "x",  # a soft hyphen does not split a word into a synonym
    ],
)
def test_a_synonym_never_matches_inside_or_as_a_derivation_of_another_word(question: str) -> None:
    assert [m.name for m in parse(question).dimensions if m.kind != "temporal"] == []


def test_the_longest_synonym_claims_its_words() -> None:
    intent = parse("admissions by admission date in 2023")
    assert names(intent) == [
        ("admissions", "admissions"),
        ("period", "admission date"),
        ("period", "in 2023"),
    ]


def test_two_dimensions_sharing_a_synonym_are_both_reported() -> None:
    site = Dimension(name="site", synonyms={"en": ("site",)})
    profile = DomainProfile(dimensions=(HOSPITAL, site))
    intent = parse("admissions by site", profile)
    assert [(m.name, m.span) for m in intent.dimensions] == [
        ("hospital", (14, 18)),
        ("site", (14, 18)),
    ]


def test_words_inside_a_period_belong_to_the_period() -> None:
    month = Dimension(name="month", synonyms={"it": ("mese",)})
    intent = parse("ricoveri del mese scorso per mese", DomainProfile(dimensions=(month, PERIOD)))
    assert [(m.name, m.matched) for m in intent.dimensions] == [
        ("period", "del mese scorso"),
        ("month", "mese"),
    ]


def test_the_gate_placeholders_are_not_words_of_the_question() -> None:
    competitor = Dimension(name="rival", synonyms={"en": ("competitor",)})
    intent = parse(
        "admissions of [competitor] by competitor", DomainProfile(dimensions=(competitor,))
    )
    assert [m.span for m in intent.dimensions] == [(30, 40)]


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ('ricoveri per ospedale "San Carlo"', "San Carlo"),
        ("ricoveri per ospedale «San Carlo»", "San Carlo"),
        ("ricoveri per ospedale: 'Nord'", "Nord"),
        ("ricoveri per ospedale = Nord", "Nord"),
        ("ricoveri per ospedale San Carlo", None),  # not stated as a value: not guessed
        ('ricoveri per ospedale ""', None),
        ("ricoveri per ospedale 'Nord", None),  # unclosed quote
    ],
)
def test_a_value_is_read_only_when_the_question_states_it(question: str, value: str | None) -> None:
    (hospital,) = [m for m in parse(question).dimensions if m.name == "hospital"]
    assert hospital.value == value


def test_mentions_point_at_the_raw_question() -> None:
    question = "Ricoveri per Unità Operativa nel 2023"
    for m in parse(question).dimensions + parse(question).measures:
        assert question[m.span[0] : m.span[1]] == m.matched


def test_word_forms_cover_italian_and_english_number() -> None:
    assert {"reparti"} <= word_forms("reparto", "it")
    assert {"presidi"} <= word_forms("presidio", "it")
    assert {"operative"} <= word_forms("operativa", "it")
    assert {"banche"} <= word_forms("banca", "it")
    assert {"ospedale"} <= word_forms("ospedali", "it")
    assert {"wards", "categories"} <= word_forms("ward", "en") | word_forms("category", "en")
    assert "ward" in word_forms("wards", "en")


_ALIASES = st.sampled_from(["reparto", "ospedale", "unità operativa", "ward", "site", "presidio"])
_FILLER = st.lists(
    st.sampled_from("quanti ricoveri nel per di the by in and e con 2023".split()), max_size=6
)


def _variant(word: str, upper: bool, strip_accents: bool) -> str:
    text = word.upper() if upper else word
    if strip_accents:
        text = "".join(
            c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)
        )
    return text


@given(_FILLER, _ALIASES, _FILLER, st.booleans(), st.booleans())
def test_a_synonym_is_found_anywhere_in_any_case_with_or_without_accents(
    before: list[str], alias: str, after: list[str], upper: bool, strip: bool
) -> None:
    written = _variant(alias, upper, strip)
    question = " ".join([*before, written, *after])
    expected = {"reparto": "department", "unità operativa": "department", "ward": "department"}
    found = [(m.name, m.matched) for m in match_dimensions(question, PROFILE)]
    assert (expected.get(alias, "hospital"), written) in found


# ----------------------------------------------------------------------------- clarify policy


def test_nothing_missing_is_clarify_none() -> None:
    intent = parse("ricoveri per ospedale nel 2023")
    assert (intent.clarify, intent.missing, intent.assumptions) == ("none", (), ())


def test_a_missing_assume_dimension_records_its_default_with_dates() -> None:
    intent = parse("ricoveri per ospedale")
    assert intent.clarify == "answer_with_assumptions"
    assert intent.missing == ("period",)
    assert intent.assumptions == (
        'period: not in the question, assumed "last 12 months" (2025-05-21 to 2026-05-20)',
    )
    assert intent.period is None


def test_a_missing_ask_first_dimension_asks_even_when_another_is_assumed() -> None:
    required_hospital = Dimension(
        name="hospital", synonyms={"en": ("hospital",)}, required=True, clarify="ask_first"
    )
    intent = parse("admissions", DomainProfile(dimensions=(required_hospital, PERIOD, ADMISSIONS)))
    assert intent.clarify == "ask_first"
    assert intent.missing == ("hospital", "period")
    assert len(intent.assumptions) == 1


def test_a_not_required_dimension_never_triggers_a_clarification() -> None:
    assert HOSPITAL.clarify == "ask_first" and not HOSPITAL.required
    assert parse("ricoveri nel 2023").clarify == "none"


def test_assume_without_a_default_cannot_assume_and_asks() -> None:
    bare = Dimension(name="period", kind="temporal", required=True, clarify="assume")
    intent = parse("admissions", DomainProfile(dimensions=(bare, ADMISSIONS)))
    assert (intent.clarify, intent.assumptions) == ("ask_first", ())


def test_a_required_dimension_with_clarify_none_is_listed_but_not_asked() -> None:
    payer = Dimension(name="payer", synonyms={"en": ("payer",)}, required=True)
    intent = parse("admissions in 2023", DomainProfile(dimensions=(payer, PERIOD, ADMISSIONS)))
    assert (intent.clarify, intent.missing) == ("none", ("payer",))


def test_a_default_that_is_not_a_period_is_assumed_as_written() -> None:
    ward = Dimension(name="ward", default="Cardiologia", required=True, clarify="assume")
    intent = parse("admissions in 2023", DomainProfile(dimensions=(ward, PERIOD)))
    assert intent.assumptions == ('ward: not in the question, assumed "Cardiologia"',)


def test_an_unresolved_period_asks_instead_of_assuming_the_default() -> None:
    intent = parse("ricoveri per ospedale fino al 2023")
    assert intent.clarify == "ask_first"
    assert intent.unresolved == ("fino al 2023",)
    assert intent.missing == () and intent.assumptions == ()
    assert [(m.name, m.value) for m in intent.dimensions if m.name == "period"] == [
        ("period", None)
    ]


def test_a_period_without_a_year_is_an_assumption() -> None:
    intent = parse("ricoveri per ospedale di marzo")
    assert intent.clarify == "answer_with_assumptions"
    assert intent.assumptions == ('"di marzo": no year given, read as 2026-03-01 to 2026-03-31',)


def test_the_gate_flag_overrides_every_other_mode() -> None:
    intent = parse("ricoveri fino al 2023", out_of_scope_entity=True)
    assert intent.clarify == "out_of_scope_entity"
    assert intent.clarify in CLARIFY_MODES


def test_periods_attach_to_no_dimension_when_two_temporal_ones_are_possible() -> None:
    discharge = Dimension(name="discharge", kind="temporal", synonyms={"en": ("discharge date",)})
    profile = DomainProfile(dimensions=(PERIOD, discharge))
    assert [m.name for m in parse("admissions in 2023", profile).dimensions] == []
    named = parse("admissions by discharge date in 2023", profile)
    assert [(m.name, m.value) for m in named.dimensions] == [
        ("discharge", None),
        ("discharge", "2023-01-01/2024-01-01"),
    ]
    assert named.missing == ("period",)


# ----------------------------------------------------------------------------- purity


def test_parsing_is_a_pure_function_of_question_profile_and_date() -> None:
    before = copy.deepcopy(PROFILE)
    first = parse("ricoveri per reparto negli ultimi 30 giorni")
    later = RuleIntentParser().parse(
        "ricoveri per reparto negli ultimi 30 giorni",
        PROFILE,
        FixedClock(NOW.replace(hour=23)),  # the same date later in the day
    )
    assert first == later
    assert before == PROFILE


def test_the_clock_is_read_once_per_question() -> None:
    class OneReading:
        def __init__(self) -> None:
            self.readings = 0

        def now(self) -> datetime:
            self.readings += 1
            return NOW

    clock = OneReading()
    RuleIntentParser().parse("ricoveri nel 2023 per ospedale", PROFILE, clock)
    assert clock.readings == 1


def test_an_empty_profile_still_reads_periods() -> None:
    intent = parse("admissions in Q3 2024", DomainProfile())
    assert intent.period is not None and intent.period.start == "2024-07-01"
    assert (intent.dimensions, intent.measures, intent.clarify) == ((), (), "none")


def test_the_json_form_starts_with_the_cli_contract_fields() -> None:
    body = parse("ricoveri nel 2023").to_json()
    assert list(body)[:4] == ["parser", "dimensions", "period", "clarify"]
    assert body["period"]["span"] == [9, 17]
