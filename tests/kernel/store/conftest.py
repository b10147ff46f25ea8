"""Fixtures of the PostgreSQL store's own tests: a fresh database per test module on the
session's test server (tests keep apart by workspace id), and a store per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from kernel.store.postgres import PostgresStore

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer


@pytest.fixture(scope="module")
def pg_dsn(postgres_server: PostgresServer) -> str:
    from tests.kernel.store.postgres_support import fresh_database

    return fresh_database(postgres_server, "kernel")


@pytest.fixture
def workspace_id() -> str:
    return f"w-{uuid.uuid4().hex[:20]}"


@pytest.fixture
def pg_store(pg_dsn: str, workspace_id: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_dsn, workspace=workspace_id)
    yield store
    store.close()
