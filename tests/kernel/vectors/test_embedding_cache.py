"""The embedding cache: unchanged texts are never embedded twice."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kernel.vectors.embedder import Vectors
from kernel.vectors.embedding_cache import CACHE_FILENAME, CachedEmbedder, EmbeddingCache
from kernel.vectors.hashing_embedder import HashingEmbedder


class CountingEmbedder:
    """The hashing embedder, recording every text it is asked to embed."""

    def __init__(self, dimension: int = 16, identity: str = "counting/v1") -> None:
        self._inner = HashingEmbedder(dimension)
        self._identity = identity
        self.calls: list[tuple[str, list[str]]] = []

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(("query", list(texts)))
        return self._inner.embed_queries(texts) * 1.0

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(("passage", list(texts)))
        return self._inner.embed_passages(texts)


def test_a_cache_hit_avoids_re_embedding_across_instances(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    first = CachedEmbedder.in_folder(inner, tmp_path)
    vectors = first.embed_passages(["a b", "c d", "a b"])
    assert inner.calls == [("passage", ["a b", "c d"])]  # duplicates embedded once
    first.close()

    inner2 = CountingEmbedder()
    second = CachedEmbedder.in_folder(inner2, tmp_path)  # a new process, same folder
    again = second.embed_passages(["c d", "e f", "a b"])

    assert inner2.calls == [("passage", ["e f"])]
    assert np.array_equal(again[0], vectors[1]) and np.array_equal(again[2], vectors[0])
    assert (second.hits, second.misses) == (2, 1)
    assert (tmp_path / CACHE_FILENAME).is_file()


def test_roles_and_identities_do_not_share_vectors(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder.in_folder(inner, tmp_path)
    cached.embed_passages(["x"])
    cached.embed_queries(["x"])
    assert inner.calls == [("passage", ["x"]), ("query", ["x"])]
    other = CountingEmbedder(identity="counting/v2")
    CachedEmbedder.in_folder(other, tmp_path).embed_passages(["x"])
    assert other.calls == [("passage", ["x"])]


def test_cached_vectors_equal_fresh_ones(tmp_path: Path) -> None:
    inner = HashingEmbedder(24)
    texts = ["Eligible free rate", "tasso di riammissione", ""]
    cached = CachedEmbedder.in_folder(inner, tmp_path)
    cached.embed_queries(texts)
    assert np.array_equal(cached.embed_queries(texts), inner.embed_queries(texts))
    assert cached.hits == 3


def test_the_text_itself_is_not_stored(tmp_path: Path) -> None:
    CachedEmbedder.in_folder(CountingEmbedder(), tmp_path).embed_passages(["secret phrase"])
    assert b"secret phrase" not in (tmp_path / CACHE_FILENAME).read_bytes()


def test_a_corrupt_cache_file_is_set_aside_and_rebuilt(tmp_path: Path) -> None:
    (tmp_path / CACHE_FILENAME).write_bytes(b"this is not a sqlite database" * 100)
    inner = CountingEmbedder()
    cached = CachedEmbedder.in_folder(inner, tmp_path)
    cached.embed_passages(["a"])
    cached.embed_passages(["a"])
    assert inner.calls == [("passage", ["a"])]
    assert (tmp_path / (CACHE_FILENAME + ".corrupt")).is_file()


def test_an_unusable_cache_location_degrades_to_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(blocker / "cache" / CACHE_FILENAME))
    first = cached.embed_passages(["a"])
    second = cached.embed_passages(["a"])
    assert np.array_equal(first, second)
    assert len(inner.calls) == 2


def test_rows_of_an_old_dimension_are_embedded_again(tmp_path: Path) -> None:
    """An endpoint that changed its model under the same name: its old vectors are not mixed in."""
    CachedEmbedder.in_folder(CountingEmbedder(16), tmp_path).embed_passages(["a"])
    inner = CountingEmbedder(17)  # same identity, other dimension
    vectors = CachedEmbedder.in_folder(inner, tmp_path).embed_passages(["a", "b"])
    assert vectors.shape == (2, 17)
    assert inner.calls == [("passage", ["b"]), ("passage", ["a"])]
