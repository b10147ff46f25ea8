"""``OpenAIEmbedder``: any OpenAI-compatible ``POST {baseUrl}/embeddings`` endpoint, by profile.

Ollama, LM Studio, a gateway: the provider profile (``kernel.llm``) says where and how; the one
transport of the project (:class:`kernel.llm.OpenAICompatibleClient`) makes the call - this adapter
has no HTTP code. Texts are sent in batches of ``batch_size``; every returned vector is checked
(count, dimension, finite) and L2-normalised, as the ``Embedder`` port promises.

Asymmetric models want their role said in the text (e5: ``"query: "`` / ``"passage: "``; nomic:
``"search_query: "`` / ``"search_document: "``): give ``query_prefix`` / ``passage_prefix``. They
are part of :attr:`identity`, so cached vectors of another convention are never reused.

Any transport failure (timeout, network, auth, missing model, malformed answer) is an
:class:`~kernel.vectors.errors.EmbedderUnavailableError` (exit 6) naming the provider error's kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kernel.llm import OpenAICompatibleClient, ProviderError, ProviderProfile
from kernel.vectors.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    from kernel.vectors.embedder import Vectors

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint, through ``kernel.llm``'s client."""

    def __init__(
        self,
        client: OpenAICompatibleClient,
        profile: ProviderProfile,
        *,
        model: str | None = None,
        dimension: int | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        timeout_ms: int = 30_000,
        batch_size: int = 64,
    ) -> None:
        if batch_size < 1 or timeout_ms < 1:
            raise ValueError("openai embedder: batch_size and timeout_ms must be positive")
        self._client = client
        self._profile = profile
        self.model = model or profile.model
        self._dimension = dimension
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._timeout_ms = timeout_ms
        self._batch_size = batch_size

    @property
    def identity(self) -> str:
        prefixes = f"q={self.query_prefix!r},p={self.passage_prefix!r}"
        return f"openai/{self._profile.base_url}/{self.model}/{prefixes}"

    @property
    def dimension(self) -> int:
        """Given at construction, or learnt from one short request on first use."""
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self.query_prefix + t for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self.passage_prefix + t for t in texts])

    def _embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._request(texts[start : start + self._batch_size])
            for start in range(0, len(texts), self._batch_size)
        ]
        out = np.concatenate(parts)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        if out.shape[1] != self._dimension:
            raise EmbedderUnavailableError(
                f"embeddings ({self._profile.id}, {self.model}): the endpoint returned "
                f"{out.shape[1]}-dimensional vectors, {self._dimension} expected",
                details={"profile": self._profile.id, "kind": "invalid-response"},
            )
        return out

    def _request(self, texts: list[str]) -> Vectors:
        try:
            result = self._client.embeddings(
                self._profile, texts, timeout_ms=self._timeout_ms, model=self.model
            )
        except ProviderError as err:
            raise EmbedderUnavailableError(
                f"embeddings ({self._profile.id}, {self.model}): {err}",
                details={"profile": self._profile.id, "kind": err.kind},
            ) from err
        vectors = np.asarray(result.vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts) or vectors.shape[1] == 0:
            raise EmbedderUnavailableError(
                f"embeddings ({self._profile.id}, {self.model}): malformed answer",
                details={"profile": self._profile.id, "kind": "invalid-response"},
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not all(math.isfinite(float(n)) and n > 0 for n in norms[:, 0]):
            raise EmbedderUnavailableError(
                f"embeddings ({self._profile.id}, {self.model}): zero or non-finite vector",
                details={"profile": self._profile.id, "kind": "invalid-response"},
            )
        normalised: Vectors = (vectors / norms).astype(np.float32)
        return normalised
