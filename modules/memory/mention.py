"""The **mention** signal: does the question name a memory's subject, in other words or in the
other language?

A memory's dense vector embeds its subject alone (``modules/memory/index.py``), and a whole
question is a poor match for a two-word subject: the sentence's cosine mixes the concept with
everything else the question says. Here the question is cut into its word n-grams (1 to
:data:`MAX_GRAM` words) and each is compared with the subject, both embedded as queries (short
text against short text): "How many active customers…" contains "active customers", whose vector
is close to "cliente attivo". The signal is the best n-gram's cosine.

Pure apart from the embedder it is given; numpy for the one matrix product.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kernel.vectors.embedder import Embedder
    from modules.memory.records import MemoryState

__all__ = ["MAX_GRAM", "MAX_GRAMS", "LiveSubjects", "mention_scores", "query_grams"]

MAX_GRAM: Final = 4
#: at most this many n-grams per text (a long question keeps its first ones)
MAX_GRAMS: Final = 96
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def query_grams(text: str) -> list[str]:
    """The word n-grams of ``text`` (1..MAX_GRAM words, in order, each once, lowercased NFC)."""
    words = _WORD.findall(unicodedata.normalize("NFC", text).casefold())
    grams: dict[str, None] = {}
    for start in range(len(words)):
        for size in range(1, MAX_GRAM + 1):
            if start + size > len(words):
                break
            grams[" ".join(words[start : start + size])] = None
            if len(grams) >= MAX_GRAMS:
                return list(grams)
    return list(grams)


def mention_scores(embedder: Embedder, text: str, subjects: Mapping[str, str]) -> dict[str, float]:
    """``id → the best cosine between an n-gram of text and that id's subject`` (vectors are
    L2-normalised by every embedder of the project, so the dot product is the cosine)."""
    grams = query_grams(text)
    items = [(item, subject.strip()) for item, subject in subjects.items() if subject.strip()]
    if not grams or not items:
        return {}
    import numpy as np

    vectors = embedder.embed_queries([*grams, *(s.casefold() for _, s in items)])
    matrix = np.asarray(vectors, dtype=np.float32)
    best = (matrix[: len(grams)] @ matrix[len(grams) :].T).max(axis=0)
    return {item: float(score) for (item, _), score in zip(items, best, strict=True)}


class LiveSubjects(Mapping[str, str]):
    """``memory id → subject`` of the registry's live memories, looked up on demand (a search
    asks for its few hits' subjects; building a dict of every memory would cost more)."""

    def __init__(self, state: MemoryState) -> None:
        self._memories = state.memories

    def __getitem__(self, item: str) -> str:
        record = self._memories.get(item)
        if record is None or record.status != "live":
            raise KeyError(item)
        return record.subject

    def __contains__(self, item: object) -> bool:
        record = self._memories.get(item) if isinstance(item, str) else None
        return record is not None and record.status == "live"

    def __iter__(self) -> Iterator[str]:
        return (k for k, r in self._memories.items() if r.status == "live")

    def __len__(self) -> int:
        return sum(1 for r in self._memories.values() if r.status == "live")
