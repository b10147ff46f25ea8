"""Invariants of F1's ambiguity detection (Hypothesis), over generated catalogs whose names are
made-up words, so no rule can be tuned to them:

- a vertical split of any attribute is always found (both copies in one ambiguity's target
  group), and never without the split;
- a precomputed aggregate of any measure, asked with any aggregate word, is always found, and
  never without the precomputed table;
- every option records a schema-valid event about the term, its targets exist in the catalog,
  "leave open" is last;
- the report depends on neither the catalog's table order nor the question's case and accents.
"""

from __future__ import annotations

import msgspec
from hypothesis import assume, given
from hypothesis import strategies as st

from kernel import events as ev
from kernel.schema_view import SchemaView, StaticSchemaView
from kernel.vectors.stopwords import STOPWORDS
from modules.disambiguation.ambiguity import detect_ambiguities
from modules.disambiguation.ambiguity_records import OPEN_OPTION, AmbiguityReport
from modules.disambiguation.ambiguity_rules import AGGREGATE_CUES, AGGREGATE_NAMES
from modules.disambiguation.ambiguity_terms import default_stem, fold_text
from modules.disambiguation.ambiguity_values import canonical_target
from modules.disambiguation.unanswerable import NOUN_CUES, QUESTION_WORDS
from tests.modules.disambiguation.test_ambiguity import (
    GLOSSARY,
    HOSPITAL_VIEW,
    FakeValues,
    table,
    view,
)

_RESERVED = (
    frozenset().union(*STOPWORDS.values())
    | frozenset(AGGREGATE_CUES)
    | frozenset(AGGREGATE_NAMES)
    | QUESTION_WORDS
    | NOUN_CUES
)
WORDS = st.text(alphabet="bcdfgklmnprstvz", min_size=3, max_size=5).map(
    lambda consonants: "".join(c + "aeiou"[i % 5] for i, c in enumerate(consonants))
)


def _distinct(words: list[str]) -> bool:
    """No two words share a stem or a prefix (one would partly name the other)."""
    stems = [set(default_stem(w)) for w in words]
    if any(a & b for i, a in enumerate(stems) for b in stems[i + 1 :]):
        return False
    return not any(a != b and (a.startswith(b) or b.startswith(a)) for a in words for b in words)


def _structural(report: AmbiguityReport) -> list[tuple[str, ...]]:
    return [
        a.target_group
        for a in report.ambiguities
        if a.kind in ("joinable_attribute", "precomputed_aggregate")
    ]


@given(
    names=st.lists(WORDS, min_size=4, max_size=6, unique=True),
    pick=st.integers(min_value=1, max_value=5),
    template=st.sampled_from(["show the {a} of each {e}", "{a} and {b} of every {e}", "{e} {a}"]),
)
def test_a_split_attribute_is_always_found_and_never_without_the_split(
    names: list[str], pick: int, template: str
) -> None:
    assume(_distinct(names) and not set(names) & _RESERVED)
    entity, *attributes = names
    attribute = attributes[pick % len(attributes)]
    other = attributes[(pick + 1) % len(attributes)]
    key = f"{entity}_id"
    base = table(entity, key, *attributes, pk=(key,))
    copy = table(f"{entity}_{attribute}", key, attribute)
    question = template.format(a=attribute, b=other, e=entity)
    split = detect_ambiguities(question, view(base, copy))
    both = (f"{entity}.{attribute}", f"{entity}_{attribute}.{attribute}")
    assert any(set(both) <= set(group) for group in _structural(split)), split
    assert _structural(detect_ambiguities(question, view(base))) == []


@given(
    names=st.lists(WORDS, min_size=3, max_size=4, unique=True),
    cue=st.sampled_from(sorted(AGGREGATE_CUES)),
    stored=st.sampled_from(sorted(AGGREGATE_NAMES)),
    suffix=st.booleans(),
)
def test_a_precomputed_aggregate_is_always_found_and_never_without_it(
    names: list[str], cue: str, stored: str, suffix: bool
) -> None:
    assume(_distinct(names) and not set(names) & _RESERVED)
    entity, measure, *rest = names
    key = f"{entity}_id"
    base = table(entity, key, measure, *rest, pk=(key,))
    column = f"{measure}_{stored}" if suffix else f"{stored}_{measure}"
    aggregates = table(f"{measure}_summary", column)
    question = f"the {cue} {measure} of the {entity}"
    found = detect_ambiguities(question, view(base, aggregates))
    groups = _structural(found)
    assert any(
        f"{entity}.{measure}" in g and any(t.startswith(f"{measure}_summary") for t in g)
        for g in groups
    ), found
    assert _structural(detect_ambiguities(question, view(base))) == []


QUESTION_WORDS_POOL = [
    "average", "beds", "region", "regions", "name", "hospital", "ward", "wards", "active",
    "patients", "Lazio", "the", "of", "by", "in", "total", "how", "many", "salary", "type",
    "ospedali", "regione", "media", ",", "?", "hospital_id",
]  # fmt: skip
QUESTIONS = st.lists(st.sampled_from(QUESTION_WORDS_POOL), min_size=1, max_size=10).map(" ".join)
_LAZIO = FakeValues({"lazio": ["hospitals.region", "hospitals_region.region"]})


def VALUES(value: str) -> list[str]:  # a value index folds as a real one would
    return _LAZIO(fold_text(value))


def _report(question: str, catalog: SchemaView) -> AmbiguityReport:
    return detect_ambiguities(question, catalog, glossary=GLOSSARY, values=VALUES)


@given(question=QUESTIONS)
def test_every_option_records_a_valid_event_about_an_existing_target(question: str) -> None:
    report = _report(question, HOSPITAL_VIEW)
    for found in report.ambiguities:
        assert found.options[-1].id == OPEN_OPTION
        assert len(found.readings) >= 2
        assert " ".join(question[found.span[0] : found.span[1]].split()) == found.term
        for option in found.options:
            assert option.event.subject == found.term
            ev.payload_from_builtins(option.event.type, option.event.payload)
            if option.target is not None:
                assert canonical_target(HOSPITAL_VIEW, option.target) == option.target
        assert all(canonical_target(HOSPITAL_VIEW, t) == t for t in found.target_group)
    for term in report.unanswerable:
        assert question[term.span[0] : term.span[1]] == term.term


@given(question=QUESTIONS, order=st.permutations(range(len(HOSPITAL_VIEW.schema_tables))))
def test_the_report_does_not_depend_on_the_catalog_order(question: str, order: list[int]) -> None:
    shuffled = StaticSchemaView(
        dialect="sqlite",
        version="test",
        schema_tables=tuple(HOSPITAL_VIEW.schema_tables[i] for i in order),
        schema_relationships=HOSPITAL_VIEW.schema_relationships,
    )
    one = msgspec.json.encode(_report(question, HOSPITAL_VIEW))
    assert msgspec.json.encode(_report(question, shuffled)) == one


_ACCENTED = {"a": "à", "e": "é", "i": "ì", "o": "ò", "u": "ù"}


@given(question=QUESTIONS, flips=st.lists(st.booleans(), min_size=60, max_size=60))
def test_case_and_accents_do_not_change_what_is_found(question: str, flips: list[bool]) -> None:
    variant = "".join(
        (_ACCENTED.get(c, c).upper() if flips[i % 60] else c) for i, c in enumerate(question)
    )
    plain, varied = _report(question, HOSPITAL_VIEW), _report(variant, HOSPITAL_VIEW)
    assert [(a.kinds, a.target_group) for a in varied.ambiguities] == [
        (a.kinds, a.target_group) for a in plain.ambiguities
    ]
