"""F1's term matching and unanswerable terms: case, accents, plurals, ``_``/camelCase, Italian,
clause boundaries, one typo; the concept-like words that map to nothing, and the words that are
no missing concept. Catalogs from ``test_ambiguity``."""

from __future__ import annotations

import msgspec
import pytest

from modules.disambiguation.ambiguity import detect_ambiguities
from modules.disambiguation.ambiguity_records import GlossaryEntry
from modules.disambiguation.ambiguity_terms import identifier_words, tokenize
from tests.modules.disambiguation.test_ambiguity import (
    GLOSSARY,
    HOSPITAL_VIEW,
    PLAIN_VIEW,
    FakeValues,
    only,
    table,
    view,
)

# --------------------------------------------------------------------------- unanswerable


def test_a_concept_the_catalog_lacks_is_unanswerable_not_ambiguous() -> None:
    report = detect_ambiguities("What is the average salary of the nurses?", PLAIN_VIEW)
    assert report.ambiguities == ()
    assert [(u.term, u.span) for u in report.unanswerable] == [
        ("salary", (20, 26)),
        ("nurses", (34, 40)),
    ]


@pytest.mark.parametrize(
    "question",
    [
        "Show the name and the beds of every hospital",  # catalog words, plural
        "beds in Rome",  # a proper name is a value, not a concept
        "List wards quickly sorted by name",  # adverbs and participles
        "the letter w in the names",  # the vocabulary of text patterns
        "the hospitals with the largest region",  # superlatives
        "Elenca gli ospedali",  # a verb of asking (and an untranslated table)
    ],
)
def test_words_that_are_no_missing_concept_are_not_unanswerable(question: str) -> None:
    assert [u.term for u in detect_ambiguities(question, PLAIN_VIEW).unanswerable] in (
        [],
        ["ospedali"],
    )


def test_a_glossary_term_or_a_known_value_is_not_unanswerable() -> None:
    glossary = (GlossaryEntry(term="salary", definition="gross pay", unit="evidence:pay"),)
    assert (
        detect_ambiguities("the salary of wards", PLAIN_VIEW, glossary=glossary).unanswerable == ()
    )
    values = FakeValues({"oncology": ["wards.name"]})
    assert detect_ambiguities("beds of the oncology", PLAIN_VIEW, values=values).unanswerable == ()


# --------------------------------------------------------------------------- term matching


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("unitPrice", ("unit", "price")),
        ("tot_ricoveri", ("tot", "ricoveri")),
        ("HTTPServerName", ("http", "server", "name")),
        ("città_2023", ("citta", "2023")),
    ],
)
def test_identifiers_split_into_folded_words(name: str, words: tuple[str, ...]) -> None:
    assert identifier_words(name) == words


@pytest.mark.parametrize(
    "question",
    [
        "Show name and REGION of hospitals",
        "Show name and Regions of hospitals",
        "Mostra nome e regione degli ospedali",
        "Show name and régions of hospitals",
    ],
)
def test_terms_match_across_case_accents_plurals_and_italian(question: str) -> None:
    assert only(detect_ambiguities(question, HOSPITAL_VIEW)).target_group == (
        "hospitals.region",
        "hospitals_region.region",
    )


def test_camel_case_and_compound_names_are_matched() -> None:
    clinics = table("Clinic", "ClinicId", "CityName", "surfacearea", pk=("ClinicId",))
    copy = table("ClinicCity", "ClinicId", "CityName", "surfacearea")
    catalog = view(clinics, copy)
    assert only(detect_ambiguities("the city name", catalog)).term == "city name"
    assert only(detect_ambiguities("the surface area", catalog)).term == "surface area"


def test_a_term_never_spans_a_comma() -> None:
    catalog = view(
        table("people_list", "person_id", "first_name", pk=("person_id",)),
        table("people_list_first_name", "person_id", "first_name"),
    )
    assert only(detect_ambiguities("first name", catalog)).term == "first name"
    assert detect_ambiguities("first, name", catalog).ambiguities == ()


def test_one_typo_in_a_long_word_still_names_the_column() -> None:
    assert only(detect_ambiguities("the reigon of hospitals", HOSPITAL_VIEW)).term == "reigon"
    assert detect_ambiguities("the regn of hospitals", HOSPITAL_VIEW).ambiguities == ()


def test_names_one_typo_apart_from_each_other_do_not_chain() -> None:
    # "abcdeg" is one typo from "abcdef" and "abcdeh", each of them from the next: a typo is
    # tried once, from the question's word, never from a name found by a typo
    chain = view(table("chain", "chain_id", "abcdef", "abcdeg", "abcdeh", pk=("chain_id",)))
    assert detect_ambiguities("the abcdez of chains", chain).unanswerable == ()
    assert detect_ambiguities("the qqqqqq of chains", chain).unanswerable[0].term == "qqqqqq"


def test_tokens_remember_their_raw_spans_and_clause_ends() -> None:
    tokens = tokenize("Città, e poi")
    assert [(t.text, t.raw, t.start, t.end, t.clause_end) for t in tokens] == [
        ("citta", "Città", 0, 5, True),
        ("e", "e", 7, 8, False),
        ("poi", "poi", 9, 12, True),
    ]


def test_a_custom_stemmer_is_used() -> None:
    def stem(word: str) -> list[str]:
        return ["regionx" if word in ("zone", "region") else word]

    assert only(detect_ambiguities("zone of hospitals", HOSPITAL_VIEW, stem=stem)).term == "zone"
    assert detect_ambiguities("zone of hospitals", HOSPITAL_VIEW).ambiguities == ()


def test_the_report_is_deterministic_bytes() -> None:
    args = ("average beds of active patients by region", HOSPITAL_VIEW)
    one = msgspec.json.encode(detect_ambiguities(*args, glossary=GLOSSARY))
    two = msgspec.json.encode(detect_ambiguities(*args, glossary=tuple(reversed(GLOSSARY))))
    assert one == two
