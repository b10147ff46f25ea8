"""``SchemaIndexCapabilities``: what schema linking is given, and nothing more.

Built by the composition root (``tht/schema_runtime.py``). Heavy things — the workspace's vector
store, its embedder and its BM25 encoder (``kernel.vectors``) — are factories, so nothing is
opened or loaded before it is needed; the store is the workspace's one collection, shared with
the Evidence Index (kinds ``schema_table`` and ``schema_column`` keep them apart).
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

__all__ = ["SchemaEncoder", "SchemaIndexCapabilities", "SchemaIndexUnavailable"]


class SchemaEncoder(Protocol):
    """The BM25 encoder (``kernel.vectors.bm25.Bm25Encoder``): vectors and the stems it uses."""

    @property
    def identity(self) -> str: ...

    def embed_document(self, text: str) -> SparseVector: ...

    def embed_query(self, text: str) -> SparseVector: ...

    def tokens(self, text: str) -> list[str]: ...


@dataclass(frozen=True)
class SchemaIndexCapabilities:
    #: folder of the index's own records (``<workspace>/.tht/schema_index/``)
    state_dir: Path
    vector_store: Callable[[], VectorStore]
    embedder: Callable[[], Embedder]
    bm25: Callable[[], SchemaEncoder]
    #: candidates taken from each ranking (dense, BM25) before fusion
    prefetch_limit: int = 50
    #: a nonce for a new index's id (random unless the composition root is deterministic)
    nonce: Callable[[], str] = lambda: uuid.uuid4().hex
    progress: Callable[[str, int, int], None] | None = None  # (stage, done, total)

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)


class SchemaIndexUnavailable(UnavailableError):
    """The schema index cannot serve this link (missing, stale, incompatible): exit 6.

    ``reason`` is a stable code: ``missing`` | ``stale`` | ``incompatible`` | ``corrupt``.
    """

    def __init__(self, reason: str, message: str, *, remedy: Sequence[str] = ()) -> None:
        super().__init__(message, details={"reason": reason, "remedy": list(remedy)})
        self.reason = reason
