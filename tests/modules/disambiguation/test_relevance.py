"""Question Admission's scope relevance (issue 14 item 3): the vocabulary, the lexical judgement
and the rescues, and what admission records."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kernel.capabilities import DisambiguationCapabilities, WorkspaceScope
from kernel.clock import FixedClock
from modules.disambiguation.admission import admit
from modules.disambiguation.relevance import (
    GENERIC_WORDS,
    ScopeVocabulary,
    content_words,
    judge_relevance,
)

DEMO_TERMS = (
    ("table", "ospedali"),
    ("column", "ospedali.citta"),
    ("table", "procedure"),
    ("column", "procedure.flag_ablazione"),
    ("column", "procedure.patologia"),
    ("table", "ricoveri"),
    ("column", "ricoveri.data_ricovero"),
    ("table", "pazienti"),
)
SCOPE = WorkspaceScope(description="", refuse=(), languages=("it", "en"))


def caps(**extra: object) -> DisambiguationCapabilities:
    return DisambiguationCapabilities(clock=FixedClock(), scope=SCOPE, **extra)  # type: ignore[arg-type]


def test_identifiers_are_split_and_generic_words_never_count() -> None:
    vocab = ScopeVocabulary.build(
        [("column", "procedure.flag_ablazione"), ("column", "FreeMealCount")]
    )
    assert {"flag", "ablazione", "meal", "free"} <= {
        w.split(":")[1] for w in vocab.sources.values()
    }
    assert content_words("What is the total number of names per year?") == []
    assert not judge_relevance("Show me the total number of records", vocab).in_scope
    assert "count" in GENERIC_WORDS and "date" in GENERIC_WORDS


def test_a_question_about_the_data_is_in_scope_and_one_about_the_weather_is_not() -> None:
    vocab = ScopeVocabulary.build(DEMO_TERMS)
    inside = judge_relevance("Quante ablazioni per ospedale nel 2024?", vocab)
    assert inside.in_scope and any(m.startswith("ablazioni") for m in inside.matched)
    assert judge_relevance("What is the weather in Rome tomorrow?", vocab).in_scope is False
    assert judge_relevance("Anything at all", ScopeVocabulary.build([])).in_scope is None


def test_admission_refuses_an_off_topic_question_with_the_narrowing() -> None:
    outcome = admit("What is the weather in Rome tomorrow?", caps(scope_terms=DEMO_TERMS))
    assert outcome.status == "failed"
    (event,) = outcome.events
    assert event.type == "question_refused" and event.payload["code"] == "out_of_scope"
    assert "ospedali" in str(event.payload["narrowing"])
    assert outcome.failure is not None and outcome.failure.code == "refused:out_of_scope"


def test_without_a_vocabulary_relevance_is_not_judged() -> None:
    outcome = admit("What is the weather in Rome tomorrow?", caps())
    assert outcome.status == "completed"
    assert outcome.events[0].payload == {"checks": ["usable", "in_scope"]}  # unchanged lines


def test_a_value_of_the_database_or_a_translation_rescues_a_question() -> None:
    question = "How many admissions in Milano?"
    assert admit(question, caps(scope_terms=DEMO_TERMS)).status == "failed"
    seen: list[str] = []

    def value(word: str) -> bool:
        seen.append(word)
        return word == "milano"

    assert admit(question, caps(scope_terms=DEMO_TERMS, value_check=value)).status == "completed"
    assert "milano" in seen

    def bridge(words: object) -> list[str]:
        return ["admissions"]

    rescued = admit(question, caps(scope_terms=DEMO_TERMS, word_bridge=bridge))
    assert rescued.status == "completed"


def test_the_security_gate_still_comes_first() -> None:
    from kernel.domain_profile import DomainProfile, Entity

    profile = DomainProfile(external_entities=(Entity(display="Clinica Rivale"),))
    outcome = admit(
        "Quante ablazioni fa la Clinica Rivale?", caps(scope_terms=DEMO_TERMS, profile=profile)
    )
    assert outcome.events[0].payload["code"] == "competitor"


@given(st.text(max_size=60))
def test_relevance_is_a_pure_function_of_question_and_vocabulary(question: str) -> None:
    vocab = ScopeVocabulary.build(DEMO_TERMS)
    assert judge_relevance(question, vocab) == judge_relevance(question, vocab)
