"""Capabilities over real engines for the index tests: Qdrant Edge in the workspace, the hashing
embedder (deterministic, fast), the real BM25 encoder."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kernel.vectors.bm25 import Bm25Encoder
from kernel.vectors.edge import EdgeVectorStore
from kernel.vectors.hashing_embedder import HashingEmbedder
from kernel.workspace import Workspace
from modules.evidence import EvidencePaths
from modules.evidence.capabilities import EvidenceCapabilities, EvidenceSettings
from modules.evidence.fusion import FusionSettings


class CountingEmbedder:
    """The hashing embedder, counting how many passages and queries it embedded."""

    def __init__(self, dimension: int = 64) -> None:
        self.inner = HashingEmbedder(dimension)
        self.passages = 0
        self.queries = 0

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> Any:
        self.queries += len(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


@dataclass
class Engines:
    workspace: Workspace
    embedder: CountingEmbedder = field(default_factory=CountingEmbedder)
    bm25: Bm25Encoder = field(default_factory=lambda: Bm25Encoder(("it", "en")))
    store: EdgeVectorStore | None = None

    def open_store(self) -> EdgeVectorStore:
        if self.store is None:
            self.store = EdgeVectorStore.for_workspace(self.workspace, lock_timeout=1.0)
        return self.store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def caps(
        self, *, rrf_k: int = 60, max_chunk_chars: int = 4000, fusion: FusionSettings | None = None
    ) -> EvidenceCapabilities:
        """The capabilities over these engines (``fusion``: the settings' default when None)."""
        settings = EvidenceSettings(max_chunk_chars=max_chunk_chars, rrf_k=rrf_k)
        if fusion is not None:
            settings = replace(settings, fusion=fusion)
        return EvidenceCapabilities(
            paths=EvidencePaths.of(self.workspace),
            settings=settings,
            clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            vector_store=self.open_store,
            embedder=lambda: self.embedder,
            bm25=lambda: self.bm25,
        )


def engines_for(workspace: Workspace) -> Iterator[Engines]:
    engines = Engines(workspace)
    try:
        yield engines
    finally:
        engines.close()
