"""The mention signal (modules/memory/mention.py) and how relevance reads it."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kernel.vectors.hashing_embedder import HashingEmbedder
from modules.memory.mention import MAX_GRAM, MAX_GRAMS, mention_scores, query_grams
from modules.memory.search import MENTION_OFFSET, ScoredMemoryHit, relevance, relevant


def test_grams_are_the_word_ngrams_in_order_each_once() -> None:
    assert query_grams("Clienti attivi, clienti!") == [
        "clienti",
        "clienti attivi",
        "clienti attivi clienti",
        "attivi",
        "attivi clienti",
    ]
    assert query_grams("") == [] and query_grams("  ,;  ") == []


@given(st.text(max_size=400))
def test_grams_are_bounded_and_short(text: str) -> None:
    grams = query_grams(text)
    assert len(grams) <= MAX_GRAMS and len(set(grams)) == len(grams)
    assert all(1 <= len(g.split()) <= MAX_GRAM for g in grams)


def test_a_question_naming_the_subject_scores_it_highest() -> None:
    embedder = HashingEmbedder(384)
    subjects = {"m1": "cliente attivo", "m2": "fatturato"}
    scores = mention_scores(embedder, "Quanti cliente attivo abbiamo in Veneto?", subjects)
    assert math.isclose(scores["m1"], 1.0, abs_tol=1e-5)  # the n-gram is the subject itself
    assert scores["m2"] < scores["m1"]
    assert mention_scores(embedder, "", subjects) == {}
    assert mention_scores(embedder, "anything", {}) == {}


def _hit(dense: float | None, mention: float | None) -> ScoredMemoryHit:
    return ScoredMemoryHit(
        id="m", kind="memory", score=0.0, dense=dense, lexical=None, mention=mention
    )


def test_relevance_is_the_dense_cosine_or_the_offset_mention() -> None:
    assert relevance(_hit(0.8, None)) == 0.8
    assert relevance(_hit(0.8, 0.99)) == 0.99 - MENTION_OFFSET
    assert relevance(_hit(0.9, 0.5)) == 0.9
    assert relevance(_hit(None, 0.99)) == 0.99 - MENTION_OFFSET
    assert relevance(_hit(None, None)) is None
    # a subject named verbatim clears the memory floor; a near one does not
    assert relevant([_hit(0.7, 1.0)]) and not relevant([_hit(0.7, 0.95)])
