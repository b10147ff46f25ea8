"""The bilingual analytics lexicon in the kernel (kernel/lexicon.py): its loader, the exact and
stemmed lookup, and translation of a concept's terms into the other language."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kernel.lexicon import (
    LEXICON_LANGUAGES,
    LEXICON_VERSION,
    MAX_INFLECTION,
    NEGATIONS,
    concept_terms,
    content_words,
    default_lexicon,
    fold,
    lexicon_from,
    lookup,
    segments,
    stem,
    translate,
)

SMALL = lexicon_from(
    {
        "concepts": [
            {"key": "revenue", "en": ["revenue", "net sales"], "it": ["fatturato", "ricavi"]},
            {"key": "invoice", "en": ["invoice"], "it": ["fattura"]},
            {"key": "patient", "en": ["patient", "patients"], "it": ["paziente", "pazienti"]},
            {"key": "admission", "en": ["admission"], "it": ["ricovero", "ricoveri"]},
            {"key": "rate", "en": ["rate"], "it": ["tasso"]},
        ],
        "generic": ["rate"],
    }
)
SHIPPED = json.loads(resources.files("kernel").joinpath("_data/lexicon.json").read_bytes())
OTHER = {"it": "en", "en": "it"}


def test_the_shipped_lexicon_loads_with_its_version_and_every_concept() -> None:
    lexicon = default_lexicon()
    assert SHIPPED["version"] == LEXICON_VERSION
    assert lexicon.identity.startswith(f"lexicon/v{LEXICON_VERSION}/")
    assert len(lexicon.terms) == len(SHIPPED["concepts"]) == 1874
    assert lexicon.generic <= set(lexicon.terms)
    revenue = next(c for c in SHIPPED["concepts"] if c["key"] == "revenue")
    assert lexicon.terms["revenue"] == {"en": tuple(revenue["en"]), "it": tuple(revenue["it"])}
    assert default_lexicon() is lexicon  # read once per process


def test_memory_reads_the_kernels_lexicon() -> None:
    """Memory re-exports the kernel's names (one lexicon, one loader)."""
    import kernel.lexicon as kernel_lexicon
    import modules.memory.terms as terms

    assert terms.Lexicon is kernel_lexicon.Lexicon
    assert terms.default_lexicon is kernel_lexicon.default_lexicon
    assert terms.lexicon_from is kernel_lexicon.lexicon_from
    assert (terms.LEXICON_VERSION, terms.MAX_PHRASE) == (LEXICON_VERSION, 4)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"concepts": "nope"}, "'concepts' must be a list"),
        ({"concepts": [{"en": ["x"]}]}, "string 'key'"),
        ({"concepts": [{"key": "x", "en": "revenue"}]}, "x.en must be a list"),
        ({"concepts": [], "generic": "rate"}, "'generic' must be a list"),
    ],
)
def test_a_bad_lexicon_is_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        lexicon_from(data)


def test_lookup_prefers_the_exact_form_and_a_shared_stem_resolves_nothing() -> None:
    # "fatturato" and "fattura" share the Italian stem "fattur": only the exact forms decide
    assert lookup(SMALL, ["fatturato"], ("it",)) == "revenue"
    assert lookup(SMALL, ["fattura"], ("it",)) == "invoice"
    assert lookup(SMALL, ["fatture"], ("it",)) is None
    # inflections through the stem; the other language as a fallback (a loanword)
    assert lookup(SMALL, ["ricoveri"], ("it",)) == "admission"
    assert lookup(SMALL, ["admissions"], ("it",)) == "admission"
    assert lookup(SMALL, ["ospedale"], ("it", "en")) is None


def test_a_stem_meets_an_inflection_not_a_derivation() -> None:
    """Snowball cuts "manager" and "management" to one stem: a word meets a term through its
    stem only when it is within MAX_INFLECTION letters of the term's own word."""
    lexicon = lexicon_from(
        {
            "concepts": [
                {"key": "hr", "en": ["people management"], "it": []},
                {"key": "manager", "en": ["manager"], "it": []},
                {"key": "late_delivery", "en": ["late delivery"], "it": ["consegna in ritardo"]},
            ]
        }
    )
    assert lookup(lexicon, ["people", "manager"], ("en",)) is None
    assert lookup(lexicon, ["management"], ("en",)) is None
    assert lookup(lexicon, ["managers"], ("en",)) == "manager"
    assert lookup(lexicon, ["late", "deliveries"], ("en",)) == "late_delivery"
    assert lookup(lexicon, ["consegne", "ritardo"], ("it",)) == "late_delivery"


@given(st.sampled_from(["report", "order", "delivery", "customer"]), st.integers(0, MAX_INFLECTION))
def test_a_few_more_letters_are_still_an_inflection(word: str, extra: int) -> None:
    lexicon = lexicon_from({"concepts": [{"key": "k", "en": [word], "it": []}]})
    longer = word + "s" * extra
    if stem("en", longer) == stem("en", word):
        assert lookup(lexicon, [longer], ("en",)) == "k"


def test_segments_take_the_longest_term_first() -> None:
    words = content_words("the net sales of the patients")
    assert words == ["net", "sales", "patients"]
    assert segments(words, SMALL, ("en",)) == [
        ("revenue", ["net", "sales"]),
        (None, ["patients"]),
    ]


def test_concept_terms_names_each_concept_once_in_order_with_the_other_languages_terms() -> None:
    found = concept_terms("pazienti ricoverati, ricoveri dei pazienti", "en", lexicon=SMALL)
    assert found == [("patient", ("patient", "patients")), ("admission", ("admission",))]
    # the text's language given: English terms looked up in English first
    assert concept_terms("net sales rate", "it", lexicon=SMALL, language="en") == [
        ("revenue", ("fatturato", "ricavi")),
        ("rate", ("tasso",)),
    ]
    assert concept_terms("nothing to see here", "it", lexicon=SMALL) == []


def test_translate_one_term() -> None:
    assert translate("Fatturato", "it", "en", lexicon=SMALL) == ("revenue", "net sales")
    assert translate("net sales", "en", "it", lexicon=SMALL) == ("fatturato", "ricavi")
    assert translate("ospedale", "it", "en", lexicon=SMALL) == ()
    assert translate("", "it", "en", lexicon=SMALL) == ()
    assert translate("giro d'affari", "it", "en") == default_lexicon().terms["revenue"]["en"]


_TERMS = [
    (concept["key"], lang, term)
    for concept in SHIPPED["concepts"]
    for lang in LEXICON_LANGUAGES
    for term in concept[lang]
]


@given(st.sampled_from(_TERMS))
def test_translating_a_concepts_term_gives_that_concepts_other_language_terms(
    item: tuple[str, str, str],
) -> None:
    key, lang, term = item
    lexicon = default_lexicon()
    words = content_words(term)[:4]
    # a term whose folded words another concept lists first (as written, or after the
    # stopwords go: "in media") is that concept's: the property is about the terms that are
    # their own concept's
    assume(words and lexicon.exact.get((lang, *(fold(w) for w in words))) == key)
    other = OTHER[lang]
    assert translate(term, lang, other) == tuple(
        next(c for c in SHIPPED["concepts"] if c["key"] == key)[other]
    )
    assert (key, lexicon.terms[key][other]) in concept_terms(term, other, language=lang)


def test_nearly_every_shipped_term_is_its_own_concepts() -> None:
    """The property above skips few terms (it would be vacuous if it skipped most)."""
    lexicon = default_lexicon()
    own = sum(
        1
        for key, lang, term in _TERMS
        if lexicon.exact.get((lang, *(fold(w) for w in content_words(term)[:4]))) == key
    )
    assert own / len(_TERMS) > 0.97


def test_compounds_meet_with_or_without_their_hyphen_or_space() -> None:
    lexicon = lexicon_from(
        {
            "concepts": [
                {"key": "complication", "en": ["postoperative complications"], "it": []},
                {"key": "day_hospital", "en": ["day hospital"], "it": ["day hospital"]},
            ]
        }
    )
    words = content_words("post-operative complications in day-hospital, dayhospital")
    assert segments(words, lexicon, ("en",)) == [
        ("complication", ["post", "operative", "complications"]),
        ("day_hospital", ["day", "hospital"]),
        (None, ["dayhospital"]),  # one word: a term through lookup
    ]
    assert lookup(lexicon, ["dayhospital"], ("en",)) == "day_hospital"


def test_a_negation_is_part_of_a_term_not_dropped() -> None:
    """Without its "non" "fatture non saldate" would read "fatture saldate", and "no-show"
    would be any "show": negations are words of a term."""
    lexicon = lexicon_from(
        {
            "concepts": [
                {"key": "unpaid_invoice", "en": ["unpaid invoices"], "it": ["fatture non saldate"]},
                {"key": "no_show", "en": ["no-show", "did not attend"], "it": ["no show"]},
                {"key": "invoice", "en": ["invoice"], "it": ["fattura", "fatture"]},
            ]
        }
    )
    assert [c for c, _ in concept_terms("fatture saldate nel 2024", "en", lexicon=lexicon)] == [
        "invoice"
    ]
    assert [c for c, _ in concept_terms("fatture non saldate", "en", lexicon=lexicon)] == [
        "unpaid_invoice"
    ]
    assert concept_terms("show me the totals; students who attend", "it", lexicon=lexicon) == []
    assert [c for c, _ in concept_terms("patients who did not attend", "it", lexicon=lexicon)] == [
        "no_show"
    ]
    assert {"non", "not", "no", "senza", "without"} <= NEGATIONS


def test_a_two_word_term_is_met_in_either_order() -> None:
    lexicon = lexicon_from(
        {"concepts": [{"key": "churn", "en": ["lose customers"], "it": ["clienti persi"]}]}
    )
    assert segments(content_words("customers did we lose"), lexicon, ("en",)) == [
        ("churn", ["customers", "lose"])
    ]
    assert segments(content_words("persi clienti"), lexicon, ("it",)) == [
        ("churn", ["persi", "clienti"])
    ]
    # three words keep their order: only a pair is read both ways
    three = lexicon_from({"concepts": [{"key": "k", "en": ["net sales value"], "it": []}]})
    assert segments(content_words("value sales net"), three, ("en",))[0][0] is None
