"""Language of a text from function words, and BM25's per-language stemming (opt-in)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.vectors.bm25 import Bm25Encoder, token_id
from kernel.vectors.language import detect_language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Qual è la percentuale di pazienti donne nate dopo il 1930?", "it"),
        ("peso medio delle supereroine", "it"),
        ("What is the percentage of female patients born after 1930?", "en"),
        ("Germany is a name of country", "en"),
        ("Percent (%) Eligible Free (K-12) = `Free Meal Count (K-12)` / `Enrollment (K-12)`", None),
        ("TR004", None),
        ("", None),
        ("the della", None),  # one cue each: no language
        ("perché", "it"),  # an accent is a cue
    ],
)
def test_language_comes_from_function_words_and_accents(text: str, expected: str | None) -> None:
    assert detect_language(text) == expected


def test_only_the_given_languages_are_candidates() -> None:
    assert detect_language("il gatto e la volpe", ("en",)) is None
    assert detect_language("il gatto e la volpe", ("en", "it")) == "it"
    assert detect_language("the cat", ("de",)) is None  # no stop list: ignored


@given(st.text(max_size=80))
def test_detection_is_total_and_deterministic(text: str) -> None:
    found = detect_language(text)
    assert found in (None, "it", "en")
    assert detect_language(text) == found


def test_the_default_encoder_is_unchanged() -> None:
    default = Bm25Encoder(("it", "en"))
    assert default.identity == "bm25/v1/stem=it/stop=en+it/k1=1.2/b=0.75/avg_len=256"
    assert default.tokens("patients consumption") == ["patients", "consumption"]  # Italian rules
    doc = default.embed_document("patients patients consumption")
    assert doc.indices == tuple(sorted((token_id("patients"), token_id("consumption"))))


def test_per_language_stems_a_document_with_its_own_language() -> None:
    enc = Bm25Encoder(("it", "en"), stemming="per_language")
    assert enc.identity == "bm25/v1/stem=per_language:it+en/stop=en+it/k1=1.2/b=0.75/avg_len=256"
    english = "The patients with the highest consumption"
    assert enc.document_language(english) == "en"
    assert set(enc.embed_document(english).indices) == {
        token_id(s) for s in ("patient", "highest", "consumpt")
    }
    italian = "I pazienti con il consumo più alto"
    assert enc.document_language(italian) == "it"
    assert token_id("pazient") in enc.embed_document(italian).indices
    # no language shown: the first workspace language
    assert enc.document_language("TR004 bond_type") == "it"


def test_per_language_queries_are_stemmed_with_every_language() -> None:
    enc = Bm25Encoder(("it", "en"), stemming="per_language")
    query = enc.embed_query("patients")
    assert set(query.indices) == {token_id("patient"), token_id("patients")}
    assert query.values == (1.0, 1.0)
    # an English query now meets the English stem of an English unit
    doc = enc.embed_document("The patient was admitted to the hospital")
    assert set(query.indices) & set(doc.indices) == {token_id("patient")}
    first = Bm25Encoder(("it", "en"))
    assert not set(first.embed_query("patients").indices) & set(
        first.embed_document("The patient was admitted to the hospital").indices
    )


def test_per_language_keeps_the_weights_recipe() -> None:
    enc = Bm25Encoder(("en",), stemming="per_language")
    plain = Bm25Encoder(("en",))
    text = "the patients of the hospital and the patients"
    assert enc.embed_document(text) == plain.embed_document(text)
    assert enc.embed_query(text) == plain.embed_query(text)


def test_an_unknown_stemming_is_refused() -> None:
    with pytest.raises(ValueError, match="stemming"):
        Bm25Encoder(("it", "en"), stemming="all")  # type: ignore[arg-type]
