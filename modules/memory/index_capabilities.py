"""``MemoryIndexCapabilities``: what Memory's projection and its search are given, nothing more.

Built by the composition root. Heavy things — the workspace's vector store, its embedder and its
BM25 encoder (``kernel.vectors``) — are factories, so nothing is opened or loaded before it is
needed; the store is the workspace's one collection, shared with the Evidence Index and the
schema index (kinds ``memory`` and ``solved_question`` keep Memory's points apart).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kernel.errors import UnavailableError

if TYPE_CHECKING:
    from kernel.vectors import Embedder, SparseVector, VectorStore

__all__ = ["MemoryEncoder", "MemoryIndexCapabilities", "MemoryIndexUnavailable"]


class MemoryEncoder(Protocol):
    """The BM25 encoder (``kernel.vectors.bm25.Bm25Encoder``)."""

    @property
    def identity(self) -> str: ...

    def embed_document(self, text: str) -> SparseVector: ...

    def embed_query(self, text: str) -> SparseVector: ...


@dataclass(frozen=True)
class MemoryIndexCapabilities:
    #: folder of the index's own records (``<workspace>/.tht/memory_index/``)
    state_dir: Path
    vector_store: Callable[[], VectorStore]
    embedder: Callable[[], Embedder]
    bm25: Callable[[], MemoryEncoder]
    #: candidates taken from each ranking (dense, BM25) before fusion
    prefetch_limit: int = 50
    #: a nonce for a new index's id (random unless the composition root is deterministic)
    nonce: Callable[[], str] = lambda: uuid.uuid4().hex
    progress: Callable[[str, int, int], None] | None = None  # (stage, done, total)

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)


class MemoryIndexUnavailable(UnavailableError):
    """Memory's index cannot serve this search (missing, stale, incompatible, corrupt): exit 6.

    ``reason`` is a stable code: ``missing`` | ``stale`` | ``incompatible`` | ``corrupt``.
    Never an empty result instead, never a stale one: the remedy is ``tht memory reindex``.
    """

    def __init__(self, reason: str, message: str, *, remedy: Sequence[str] = ()) -> None:
        super().__init__(message, details={"reason": reason, "remedy": list(remedy)})
        self.reason = reason
