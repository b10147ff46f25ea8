"""Typed failures of the vector infrastructure; all are :class:`kernel.errors.UnavailableError`.

Fail-closed retrieval (glossary, *Fail-closed Evidence retrieval*): an index that is missing,
incompatible or unreadable yields no results and an explicit warning, never stale content. A
caller maps any :class:`VectorStoreError` to an ``unavailable`` search outcome; the CLI exits 6.
``reason`` is a stable code for that warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from kernel.errors import UnavailableError

__all__ = [
    "CollectionCorruptError",
    "CollectionIncompatibleError",
    "CollectionMissingError",
    "EmbedderUnavailableError",
    "VectorStoreBusyError",
    "VectorStoreError",
    "VectorStoreUnreachableError",
]


class VectorStoreError(UnavailableError):
    """The vector store cannot serve this request; nothing was changed (exit 6)."""

    reason: ClassVar[str] = "unavailable"

    def __init__(self, message: str, *, details: Mapping[str, object] | None = None) -> None:
        merged = {"reason": self.reason, **(details or {})}
        super().__init__(message, details=merged)


class CollectionMissingError(VectorStoreError):
    """The workspace collection does not exist (never built, or its folder was removed)."""

    reason = "missing"


class CollectionIncompatibleError(VectorStoreError):
    """The collection exists with another layout (dense size, distance, ``bm25`` without IDF…)."""

    reason = "incompatible"


class CollectionCorruptError(VectorStoreError):
    """The collection's files cannot be read (truncated, garbled, or from another engine)."""

    reason = "corrupt"


class VectorStoreBusyError(VectorStoreError):
    """Another process holds the embedded store's lock; retry when it is done."""

    reason = "busy"


class VectorStoreUnreachableError(VectorStoreError):
    """The Qdrant server does not answer (connection refused, timeout, server error)."""

    reason = "unreachable"


class EmbedderUnavailableError(UnavailableError):
    """The embedder cannot produce vectors (model missing, endpoint unreachable)."""

    code = "unavailable"
