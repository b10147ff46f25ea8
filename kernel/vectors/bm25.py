"""``Bm25Encoder``: sparse BM25 vectors computed in Python, equal to Qdrant's and fastembed's.

The recipe (ARCHITECTURE §4.2), step by step, exactly as Qdrant Edge's ``Bm25`` (the Rust
tokenizer Qdrant shares between its full-text index and its BM25 inference) applies it:

1. split the text at every character that is neither alphabetic nor numeric (Unicode
   ``Alphabetic`` / general category ``N``, like Rust's ``char::is_alphanumeric``);
2. lowercase each token (full Unicode lowercasing);
3. drop stopwords: the union of the workspace languages' lists (:mod:`kernel.vectors._stopwords`);
4. Snowball-stem with the first workspace language (``rust-stemmers``, the crate Qdrant and
   fastembed use; the pure-Python ``snowballstemmer`` 3.x stems differently, e.g. "added");
5. token id = ``abs(mmh3_32(stem, seed 0))`` read as a signed 32-bit integer;
6. document weight of a term = ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_len))``
   (fastembed's ``Bm25``: ``k1 = 1.2``, ``b = 0.75``, ``avg_len = 256``); a query term weighs 1.0.

IDF is not computed here: the collection's ``bm25`` vector has ``Modifier.IDF`` and the engine
multiplies each query term by its IDF at search time, so vectors stay valid as the corpus grows.

One deliberate difference from fastembed: fastembed's tokenizer keeps ``_`` inside tokens and drops
tokens longer than 40 characters; Qdrant splits at ``_`` and keeps long tokens. We follow Qdrant,
whose engine serves the queries (``free_meal_count`` -> ``free``, ``meal``, ``count``).

Several languages: stopwords of all of them are removed, stemming uses the first one (one
stemmer is what Qdrant's BM25 configuration admits, and query and documents are stemmed alike).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

import mmh3
import regex
from py_rust_stemmers import SnowballStemmer

from kernel.vectors._stopwords import STOPWORDS
from kernel.vectors.records import SparseVector

__all__ = ["BM25_RECIPE_VERSION", "SNOWBALL_LANGUAGES", "Bm25Encoder", "token_id"]

BM25_RECIPE_VERSION: Final = 1
"""Bumped whenever tokens or weights change for the same text: indexes must then be rebuilt."""

SNOWBALL_LANGUAGES: Final = {"it": "italian", "en": "english"}
"""Workspace language code -> Snowball algorithm name."""

_SEPARATORS: Final = regex.compile(r"[^\p{Alphabetic}\p{N}]+")


def token_id(stem: str) -> int:
    """The sparse index of a stem: ``abs`` of its signed 32-bit MurmurHash3 (seed 0)."""
    return abs(mmh3.hash(stem))


class Bm25Encoder:
    """Text -> sparse BM25 vector, for documents (TF weights) and queries (unit weights)."""

    def __init__(
        self,
        languages: Sequence[str] = ("it", "en"),
        *,
        k1: float = 1.2,
        b: float = 0.75,
        avg_len: float = 256.0,
    ) -> None:
        if not languages:
            raise ValueError("bm25: at least one language is needed")
        unknown = [lang for lang in languages if lang not in SNOWBALL_LANGUAGES]
        if unknown:
            raise ValueError(
                f"bm25: unsupported language(s) {', '.join(unknown)}; "
                f"supported: {', '.join(SNOWBALL_LANGUAGES)}"
            )
        if k1 < 0 or not 0.0 <= b <= 1.0 or avg_len <= 0:
            raise ValueError("bm25: need k1 >= 0, 0 <= b <= 1 and avg_len > 0")
        self.languages: tuple[str, ...] = tuple(dict.fromkeys(languages))
        self.k1 = float(k1)
        self.b = float(b)
        self.avg_len = float(avg_len)
        self._stopwords: frozenset[str] = frozenset().union(
            *(STOPWORDS[lang] for lang in self.languages)
        )
        self._stemmer = SnowballStemmer(SNOWBALL_LANGUAGES[self.languages[0]])

    @property
    def stem_language(self) -> str:
        """The Snowball algorithm used (the first workspace language)."""
        return SNOWBALL_LANGUAGES[self.languages[0]]

    @property
    def identity(self) -> str:
        """A string that changes whenever the vectors for a given text would change."""
        return (
            f"bm25/v{BM25_RECIPE_VERSION}/stem={self.languages[0]}"
            f"/stop={'+'.join(sorted(self.languages))}"
            f"/k1={self.k1:g}/b={self.b:g}/avg_len={self.avg_len:g}"
        )

    def tokens(self, text: str) -> list[str]:
        """The stems of ``text`` in order, stopwords removed (diagnostics and tests)."""
        stems: list[str] = []
        stem = self._stemmer.stem_word
        stopwords = self._stopwords
        for raw in _SEPARATORS.split(text):
            if not raw:
                continue
            token = raw.lower()
            if token in stopwords:
                continue
            stems.append(stem(token))
        return stems

    def embed_document(self, text: str) -> SparseVector:
        """TF-weighted sparse vector of a document (indices ascending)."""
        stems = self.tokens(text)
        if not stems:
            return SparseVector(indices=(), values=())
        counts: Counter[int] = Counter()
        for stem, n in Counter(stems).items():
            counts[token_id(stem)] += n  # a 32-bit hash collision merges two stems
        norm = self.k1 * (1.0 - self.b + self.b * len(stems) / self.avg_len)
        indices = sorted(counts)
        values = tuple(counts[i] * (self.k1 + 1.0) / (counts[i] + norm) for i in indices)
        return SparseVector(indices=tuple(indices), values=values)

    def embed_query(self, text: str) -> SparseVector:
        """Unit-weighted sparse vector of a query: each distinct term once (indices ascending)."""
        indices = tuple(sorted({token_id(stem) for stem in self.tokens(text)}))
        return SparseVector(indices=indices, values=(1.0,) * len(indices))
