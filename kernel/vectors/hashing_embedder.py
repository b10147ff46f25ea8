"""``HashingEmbedder``: deterministic feature-hashing vectors, for fast unit tests only.

Not a language model: texts that share words and character trigrams get similar vectors, which is
enough to exercise stores, filters and fusion without loading a model. Never the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import mmh3
import numpy as np
import regex

if TYPE_CHECKING:
    from kernel.vectors.embedder import Vectors

__all__ = ["HashingEmbedder"]

_WORDS: Final = regex.compile(r"[\p{Alphabetic}\p{N}]+")


class HashingEmbedder:
    """Word and character-trigram features hashed into ``dimension`` signed buckets, L2-normalised.

    Each feature adds a hash-derived weight in [0.5, 1.5), so distinct texts practically never
    tie (integer counts would make many cosines equal). Queries and passages are embedded alike.
    """

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 2:
            raise ValueError("hashing embedder: dimension must be at least 2")
        self._dimension = dimension

    @property
    def identity(self) -> str:
        return f"hashing/v1/{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in _features(text):
                h = mmh3.hash(feature, signed=False)
                weight = 0.5 + (mmh3.hash(feature, seed=1, signed=False) % 65536) / 65536.0
                out[row, h % self._dimension] += weight if h & 0x8000_0000 else -weight
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:  # no features (or they cancelled out): a fixed unit vector
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


def _features(text: str) -> list[str]:
    features: list[str] = []
    for word in _WORDS.findall(text.lower()):
        features.append("w:" + word)
        padded = f"#{word}#"
        features.extend("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
    return features
