"""The BM25 encoder equals Qdrant Edge's own ``Bm25``: same token ids, same weights.

Qdrant Edge (``qdrant_edge.Bm25``) runs the Rust tokenizer and BM25 that Qdrant's server-side
BM25 uses, which mirrors fastembed's ``Bm25``. Each test configures it like the encoder (stopwords
of all languages, Snowball stemmer of the first) and compares on real evidence (BIRD), Italian
text and generated Unicode text.
"""

from __future__ import annotations

import math

import mmh3
import pytest
import qdrant_edge as qe
from hypothesis import given
from hypothesis import strategies as st

from kernel.vectors.bm25 import Bm25Encoder, token_id
from kernel.vectors.stopwords import STOPWORDS
from tests.contract import vector_corpus as corpus

_LANGUAGE = {"it": qe.Language.Italian, "en": qe.Language.English}
_SNOWBALL = {"it": qe.SnowballLanguage.Italian, "en": qe.SnowballLanguage.English}
LANGUAGE_SETS = [("it", "en"), ("en", "it"), ("en",), ("it",)]


def edge_bm25(languages: tuple[str, ...], **params: float) -> qe.Bm25:
    """Qdrant Edge's BM25 configured like ``Bm25Encoder(languages, **params)``."""
    return qe.Bm25(
        qe.Bm25Config(
            stopwords=qe.StopwordsSet(languages={_LANGUAGE[lang] for lang in languages}),
            stemmer=qe.SnowballParams(_SNOWBALL[languages[0]]),
            **params,
        )
    )


def assert_equal_vectors(ours: Bm25Encoder, theirs: qe.Bm25, text: str) -> None:
    doc = ours.embed_document(text)
    ref = theirs.embed_document(text)
    ref_doc = dict(zip(ref.indices, ref.values, strict=True))
    assert doc.as_dict().keys() == ref_doc.keys(), text
    for index, weight in doc.as_dict().items():
        assert math.isclose(weight, ref_doc[index], rel_tol=1e-6), (text, index)
    query = ours.embed_query(text)
    ref_query = theirs.embed_query(text)
    assert set(query.indices) == set(ref_query.indices), text
    assert set(query.values) <= {1.0} and set(ref_query.values) <= {1.0}


def real_texts() -> list[str]:
    return [f["text"] for f in corpus.fragments()] + [q["text"] for q in corpus.questions()]


@pytest.mark.parametrize("languages", LANGUAGE_SETS, ids="+".join)
def test_vectors_equal_qdrant_edge_bm25_on_real_evidence(languages: tuple[str, ...]) -> None:
    ours, theirs = Bm25Encoder(languages), edge_bm25(languages)
    texts = real_texts()
    for text in texts:
        assert_equal_vectors(ours, theirs, text)
    assert sum(len(ours.embed_document(t).indices) for t in texts) > 1500


def test_custom_k1_b_and_avg_len_match_qdrant_edge() -> None:
    ours = Bm25Encoder(("it", "en"), k1=2.0, b=0.3, avg_len=12.0)
    theirs = edge_bm25(("it", "en"), k=2.0, b=0.3, avg_len=12.0)
    for text in real_texts()[:80]:
        assert_equal_vectors(ours, theirs, text)


_ALPHABET = st.characters(
    codec="utf-8",
    categories=("L", "M", "N", "P", "S", "Zs"),
    max_codepoint=0x2FFF,  # Latin, Greek, Cyrillic, Hebrew, Arabic, Indic, symbols...
)
_WORDS = st.sampled_from(
    [
        "the",
        "il",
        "Perché",
        "ricoveri",
        "running",
        "ÉCOLE",
        "free_meal",
        "x²",
        "Σίσυφος",
        "l'ablazione",
    ]
)


@given(st.lists(st.one_of(st.text(_ALPHABET, max_size=12), _WORDS), max_size=30).map(" ".join))
def test_vectors_equal_qdrant_edge_bm25_on_generated_text(text: str) -> None:
    assert_equal_vectors(Bm25Encoder(("it", "en")), edge_bm25(("it", "en")), text)


@pytest.mark.parametrize("language", ["it", "en"])
def test_stopword_lists_are_qdrants(language: str) -> None:
    theirs = qe.Bm25(qe.Bm25Config(stopwords=_LANGUAGE[language], stemmer=qe.DisabledStemmer()))
    listed = STOPWORDS[language]
    for word in listed:
        if "'" not in word:  # the tokenizer splits at apostrophes: such entries never match
            assert theirs.embed_query(word).indices == [], word
    vocabulary = {w for t in real_texts() for w in Bm25Encoder((language,)).tokens(t)}
    vocabulary |= STOPWORDS["en"] | STOPWORDS["it"]
    for word in sorted(vocabulary - listed):
        if "'" not in word:
            assert theirs.embed_query(word).indices != [], f"{word!r} is a Qdrant stopword"


def test_token_id_is_abs_of_signed_murmur3() -> None:
    assert token_id("fox") == abs(mmh3.hash("fox")) == 1621867415
    assert mmh3.hash("fox") < 0


def test_document_weights_follow_bm25_tf_saturation() -> None:
    encoder = Bm25Encoder(("en",))
    doc = encoder.embed_document("Dogs chase cats; dogs sleep.")
    assert encoder.tokens("Dogs chase cats; dogs sleep.") == ["dog", "chase", "cat", "dog", "sleep"]
    norm = 1.2 * (1 - 0.75 + 0.75 * 5 / 256)
    weights = doc.as_dict()
    assert math.isclose(weights[token_id("dog")], 2 * 2.2 / (2 + norm))
    assert math.isclose(weights[token_id("cat")], 1 * 2.2 / (1 + norm))
    assert list(doc.indices) == sorted(doc.indices)


def test_query_weights_each_distinct_term_once() -> None:
    query = Bm25Encoder(("en",)).embed_query("dog dogs DOG cat")
    assert sorted(query.indices) == sorted({token_id("dog"), token_id("cat")})
    assert query.values == (1.0, 1.0)


def test_underscores_and_punctuation_split_tokens_like_qdrant() -> None:
    assert Bm25Encoder(("en",)).tokens("free_meal_count/Enrollment (K-12)") == [
        "free",
        "meal",
        "count",
        "enrol",
        "k",
        "12",
    ]


def test_stopwords_of_every_language_are_removed_and_the_first_language_stems() -> None:
    encoder = Bm25Encoder(("it", "en"))
    assert encoder.tokens("the ricoveri of the pazienti") == ["ricover", "pazient"]
    assert encoder.stem_language == "italian"
    assert Bm25Encoder(("en", "it")).tokens("the running of il") == ["run"]


def test_identity_changes_with_every_parameter() -> None:
    identities = {
        Bm25Encoder(("it", "en")).identity,
        Bm25Encoder(("en", "it")).identity,
        Bm25Encoder(("it",)).identity,
        Bm25Encoder(("it", "en"), k1=1.5).identity,
        Bm25Encoder(("it", "en"), avg_len=100).identity,
    }
    assert len(identities) == 5


def test_unsupported_language_and_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        Bm25Encoder(("de",))
    with pytest.raises(ValueError):
        Bm25Encoder(("en",), b=1.5)
    with pytest.raises(ValueError):
        Bm25Encoder(())


def test_empty_and_stopword_only_texts_give_empty_vectors() -> None:
    encoder = Bm25Encoder(("it", "en"))
    for text in ("", "   ", "the of and", "il di che", "... !!"):
        assert encoder.embed_document(text).indices == ()
        assert encoder.embed_query(text).indices == ()
