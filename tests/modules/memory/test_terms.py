"""The term signal (modules/memory/terms.py): a question names a memory's subject in any
inflection, through the bilingual lexicon in the other language, and only when the subject's
words stay together."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.memory.terms import (
    LEXICON_VERSION,
    MAX_GAP,
    MAX_PHRASE,
    TermIndex,
    default_lexicon,
    language_of,
    lexicon_from,
    named,
    positions,
    subject_terms,
)

LEXICON = lexicon_from(
    {
        "concepts": [
            {"key": "revenue", "en": ["revenue", "net sales"], "it": ["fatturato", "ricavi"]},
            {"key": "delivery", "en": ["delivery"], "it": ["consegna"]},
            {"key": "late", "en": ["late", "delayed"], "it": ["in ritardo", "ritardo"]},
            {"key": "rate", "en": ["rate"], "it": ["tasso"]},
            {"key": "day", "en": ["day"], "it": ["giorno"]},
            {"key": "readmission", "en": ["readmission"], "it": ["riammissione"]},
            {"key": "total", "en": ["total"], "it": ["totale"]},
        ],
        "generic": ["rate", "total"],
    }
)

SUBJECTS = [
    ("revenue", "fatturato", "it"),
    ("late", "consegna in ritardo", "it"),
    ("turnover", "tasso di turnover", "it"),
    ("readmission", "riammissione a 30 giorni", "it"),
    ("generic", "tasso totale", "it"),
]


@pytest.fixture(scope="module")
def index() -> TermIndex:
    return TermIndex(SUBJECTS, LEXICON)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What was the revenue in March?", {"revenue"}),  # the other language, via a concept
        ("Ricavi netti di marzo", {"revenue"}),  # a synonym
        ("Quante consegne sono arrivate in ritardo?", {"late"}),  # inflection + one word between
        ("How many deliveries arrived late last month?", {"late"}),
        ("What was the voluntary turnover rate in 2024?", {"turnover"}),  # a loanword, generic rate
        ("How many 30-day readmissions were there?", {"readmission"}),  # free order
        ("Quali fornitori hanno consegnato merce al magazzino in ritardo?", set()),  # scattered
        ("Qual è il tasso totale di assenze?", set()),  # generic words alone name nothing
        ("How many deliveries were there?", set()),  # half a term
    ],
)
def test_named_in(index: TermIndex, question: str, expected: set[str]) -> None:
    assert index.named_in(question) == expected


def test_a_subject_of_stopwords_or_generic_words_is_never_named() -> None:
    assert subject_terms("il di the of", LEXICON).required == ()
    assert subject_terms("total rate", LEXICON).required == ()
    index = TermIndex([("x", "the of", "en"), ("y", "total rate", "en")], LEXICON)
    assert index.named_in("the total rate of the day") == set()


def test_language_of() -> None:
    assert language_of("Quante consegne sono arrivate in ritardo") == ("it",)
    assert language_of("How many deliveries were late") == ("en",)
    assert language_of("return rate") == ("it", "en")  # no clue: both stemmers
    assert language_of("anything", "en") == ("en",)


def test_stems_follow_the_texts_language() -> None:
    keys = positions("the deliveries", LEXICON, language="en")
    assert keys == [(frozenset({"c:delivery", "w:deliveries"}), False)]
    english = positions("carts", LEXICON, language="en")[0][0]
    assert "en:cart" in english
    assert not any(k.startswith("it:") for k in english)


_WORDS = st.sampled_from(["alfa", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"])


@given(
    before=st.lists(_WORDS, max_size=4),
    term=st.lists(_WORDS, min_size=1, max_size=3, unique=True),
    after=st.lists(_WORDS, max_size=4),
)
def test_a_question_containing_the_subject_names_it(
    before: list[str], term: list[str], after: list[str]
) -> None:
    empty = lexicon_from({"concepts": []})
    question = positions(" ".join([*before, *term, *after]), empty, language="en")
    assert named(subject_terms(" ".join(term), empty, language="en"), question)


@given(
    first=_WORDS,
    second=_WORDS,
    between=st.lists(st.sampled_from(["xray", "yankee", "zulu"]), min_size=MAX_GAP + 1, max_size=4),
)
def test_words_scattered_beyond_the_gap_do_not_name_it(
    first: str, second: str, between: list[str]
) -> None:
    if first == second:
        return
    empty = lexicon_from({"concepts": []})
    question = positions(" ".join([first, *between, second]), empty, language="en")
    assert not named(subject_terms(f"{first} {second}", empty, language="en"), question)


def test_the_shipped_lexicon() -> None:
    """Loads, has its version, and no term belongs to two concepts in one language."""
    from importlib import resources

    raw = resources.files("kernel").joinpath("_data/lexicon.json").read_bytes()
    data = json.loads(raw)
    assert data["version"] == LEXICON_VERSION
    keys = [c["key"] for c in data["concepts"]]
    assert len(keys) == len(set(keys))
    for lang in ("it", "en"):
        seen: dict[str, str] = {}
        for concept in data["concepts"]:
            for term in concept.get(lang, []):
                assert seen.setdefault(term, concept["key"]) == concept["key"], term
    assert set(data.get("generic", [])) <= set(keys)
    lexicon = default_lexicon()
    assert lexicon.identity.startswith(f"lexicon/v{LEXICON_VERSION}/")


def test_a_bad_lexicon_is_refused() -> None:
    with pytest.raises(ValueError, match="concepts"):
        lexicon_from({"concepts": "nope"})
    with pytest.raises(ValueError, match="key"):
        lexicon_from({"concepts": [{"en": ["x"]}]})


@given(
    first=_WORDS,
    second=_WORDS,
    size=st.integers(min_value=MAX_GAP + 1, max_value=MAX_PHRASE),
)
def test_a_lexicon_term_in_between_counts_all_its_words(first: str, second: str, size: int) -> None:
    """Distances count words, however the lexicon cuts them: a term of several words between
    the subject's words ("consegnato merce al magazzino in ritardo") is that many words apart."""
    if first == second:
        return
    between = ["xray", "yankee", "zulu", "kilo"][:size]
    lexicon = lexicon_from({"concepts": [{"key": "filler", "en": [" ".join(between)], "it": []}]})
    question = positions(" ".join([first, *between, second]), lexicon, language="en")
    assert len(question) == size + 2
    assert not named(subject_terms(f"{first} {second}", lexicon, language="en"), question)


BROAD = lexicon_from(
    {
        "concepts": [
            {"key": "meter", "en": ["meter", "meters", "smart meter"], "it": ["contatore"]},
            {
                "key": "complication",
                "en": ["complication", "complications", "postoperative complications"],
                "it": ["complicanza", "complicanza post operatoria"],
            },
            {"key": "churn", "en": ["churn", "churned"], "it": ["clienti persi"]},
            {"key": "customer", "en": ["customer"], "it": ["clienti", "cliente"]},
        ],
        "generic": [],
    }
)


def test_a_concept_broader_than_the_subject_is_met_only_by_its_longer_terms() -> None:
    """ "smart meter" is filed under meter beside "meter": any meter does not name it; the
    concept's other terms of several words still do, across languages and hyphens."""
    index = TermIndex(
        [("m", "smart meter", "en"), ("c", "complicanza post operatoria", "it")], BROAD
    )
    assert index.named_in("average age of the gas meters") == set()
    assert index.named_in("readings of smart meters by region") == {"m"}
    assert index.named_in("post-operative complications after hip replacements") == {"c"}
    assert index.named_in("complications of pregnancy") == set()


def test_a_broader_concept_with_only_a_generic_word_more_is_the_subject() -> None:
    lexicon = lexicon_from(
        {
            "concepts": [
                {"key": "churn", "en": ["churn", "churn rate"], "it": ["abbandono"]},
                {"key": "rate", "en": ["rate"], "it": ["tasso"]},
            ],
            "generic": ["rate"],
        }
    )
    assert TermIndex([("r", "churn rate", "en")], lexicon).named_in("abbandono per regione") == {
        "r"
    }


def test_a_misspelled_word_meets_the_subject_word_it_nearly_is() -> None:
    empty = lexicon_from({"concepts": []})
    index = TermIndex([("s", "sinistro aperto", "it"), ("o", "overtime hours", "en")], empty)
    assert index.named_in("sinsitro aperto in Lombardia") == {"s"}  # two letters swapped
    assert index.named_in("ovretime hours by team") == {"o"}
    assert index.named_in("sinistro chiuso") == set()
    assert index.named_in("destro aperto") == set()  # another word, not a typo


@given(word=_WORDS, negation=st.sampled_from(["non", "not", "senza", "without", "no"]))
def test_a_negated_word_never_names_the_affirmative_subject(word: str, negation: str) -> None:
    """ "clienti non attivi" is not "cliente attivo"; a negated subject is named only by the
    negation ("pazienti che non si sono presentati" names "paziente non presentato")."""
    empty = lexicon_from({"concepts": []})
    index = TermIndex(
        [("plain", f"cliente {word}", "it"), ("neg", f"cliente non {word}", "it")], empty
    )
    assert index.named_in(f"quanti clienti {negation} {word}?") == {"neg"}
    assert index.named_in(f"quanti clienti {word}?") == {"plain"}


def test_negations_in_the_shipped_lexicon_keep_their_sense() -> None:
    index = TermIndex(
        [("active", "cliente attivo", "it"), ("noshow", "paziente non presentato", "it")],
        default_lexicon(),
    )
    assert index.named_in("clienti non attivi per regione") == set()
    assert index.named_in("clienti attivi per regione") == {"active"}
    assert index.named_in("pazienti che non si sono presentati a marzo") == {"noshow"}
    assert index.named_in("pazienti presentati a marzo") == set()
