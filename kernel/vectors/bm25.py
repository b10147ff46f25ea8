"""``Bm25Encoder``: sparse BM25 vectors computed in Python, equal to Qdrant's and fastembed's.

The recipe (ARCHITECTURE §4.2), step by step, exactly as Qdrant Edge's ``Bm25`` (the Rust
tokenizer Qdrant shares between its full-text index and its BM25 inference) applies it:

1. split the text at every character that is neither alphabetic nor numeric (Unicode
   ``Alphabetic`` / general category ``N``, like Rust's ``char::is_alphanumeric``);
2. lowercase each token (full Unicode lowercasing);
3. drop stopwords: the union of the workspace languages' lists (:mod:`kernel.vectors.stopwords`);
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

``stemming="per_language"`` (opt-in; the default is unchanged): a document is stemmed with its
own language — the workspace language its function words show (:mod:`kernel.vectors.language`),
the first one when they show none — and a query with every workspace language, each word's
distinct stems once ("patients" -> ``patient`` (en), ``patients`` (it)). An English unit in an
Italian-first workspace is then stemmed as English, and a query matches it whichever language
it is written in. (Stemming documents with every language too was measured and rejected: the
second language's stems of a word match unrelated words and BM25 gets worse; docs/evidence.md.)
Tokens, ids and weights are otherwise the recipe's; the identity says ``stem=per_language:...``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final, Literal

import mmh3
import regex
from py_rust_stemmers import SnowballStemmer

from kernel.vectors.language import detect_language
from kernel.vectors.records import SparseVector
from kernel.vectors.stopwords import STOPWORDS

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
        stemming: Literal["first", "per_language"] = "first",
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
        if stemming not in ("first", "per_language"):
            raise ValueError(f"bm25: stemming must be 'first' or 'per_language', got {stemming!r}")
        self.stemming: Literal["first", "per_language"] = stemming
        self._stemmer = SnowballStemmer(SNOWBALL_LANGUAGES[self.languages[0]])
        self._stemmers = {
            lang: SnowballStemmer(SNOWBALL_LANGUAGES[lang]) for lang in self.languages
        }

    @property
    def stem_language(self) -> str:
        """The Snowball algorithm used (the first workspace language)."""
        return SNOWBALL_LANGUAGES[self.languages[0]]

    @property
    def identity(self) -> str:
        """A string that changes whenever the vectors for a given text would change."""
        stem = self.languages[0]
        if self.stemming == "per_language":
            stem = "per_language:" + "+".join(self.languages)
        return (
            f"bm25/v{BM25_RECIPE_VERSION}/stem={stem}"
            f"/stop={'+'.join(sorted(self.languages))}"
            f"/k1={self.k1:g}/b={self.b:g}/avg_len={self.avg_len:g}"
        )

    def tokens(self, text: str, *, language: str | None = None) -> list[str]:
        """The stems of ``text`` in order, stopwords removed (diagnostics and tests).

        ``language`` (a workspace language) stems with that one instead of the first.
        """
        stems: list[str] = []
        lang = language if language in self._stemmers else self.languages[0]
        stem = self._stemmers[lang].stem_word
        stopwords = self._stopwords
        for raw in _SEPARATORS.split(text):
            if not raw:
                continue
            token = raw.lower()
            if token in stopwords:
                continue
            stems.append(stem(token))
        return stems

    def document_language(self, text: str) -> str:
        """The language a document is stemmed with (``per_language``: its own, else the first)."""
        if self.stemming == "per_language":
            found = detect_language(text, self.languages)
            if found is not None:
                return found
        return self.languages[0]

    def query_tokens(self, text: str) -> list[str]:
        """The distinct stems of a query (``per_language``: over every workspace language)."""
        if self.stemming != "per_language":
            return self.tokens(text)
        seen: dict[str, None] = {}
        for lang in self.languages:
            seen.update(dict.fromkeys(self.tokens(text, language=lang)))
        return list(seen)

    def embed_document(self, text: str) -> SparseVector:
        """TF-weighted sparse vector of a document (indices ascending)."""
        stems = self.tokens(text, language=self.document_language(text))
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
        indices = tuple(sorted({token_id(stem) for stem in self.query_tokens(text)}))
        return SparseVector(indices=indices, values=(1.0,) * len(indices))
