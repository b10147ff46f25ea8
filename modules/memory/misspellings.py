"""Misspelled words of a question, read as the subject word they nearly are ("sinsitri aperti"
names "sinistro aperto").

A question is typed in a hurry; a memory's subject was written by a reviewer who took the time.
A question word that is no lexicon term and no word of any subject meets a subject word whose
stem is one edit away from its own (an insertion, a deletion, a substitution or two adjacent
letters swapped: optimal string alignment, rapidfuzz's ``OSA``), in the same language. Only
stems of :data:`MIN_STEM` letters or more, with the same first letter, are compared: short
words one edit apart are usually other words ("costi", "conti"), and first letters are rarely
mistyped. Candidates come from a symmetric-deletion index (each stem and its one-letter
deletions), so a question costs a few dictionary look-ups whatever the number of memories.

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kernel.lexicon import LEXICON_LANGUAGES
from kernel.lexicon import stem as _stem

__all__ = ["MIN_STEM", "Misspellings"]

#: the shortest stem compared
MIN_STEM: Final = 6


def _deletions(word: str) -> set[str]:
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}


class Misspellings:
    """Every subject word, by the one-letter deletions of its stem in each language."""

    def __init__(
        self, words: Iterable[str], languages: tuple[str, ...] = LEXICON_LANGUAGES
    ) -> None:
        """``words``: the subjects' words, folded (case and accents)."""
        self._languages = languages
        self._known: dict[str, set[str]] = {}  # "lang:stem" -> the keys of its words
        self._by_deletion: dict[str, set[str]] = {}
        for word in set(words):
            for lang in languages:
                stem = _stem(lang, word)
                if len(stem) < MIN_STEM:
                    continue
                key = f"{lang}:{stem}"
                self._known.setdefault(key, set()).update({key, f"w:{word}"})
                for deleted in _deletions(stem):
                    self._by_deletion.setdefault(f"{lang}:{deleted}", set()).add(key)

    def corrections(self, key: str) -> set[str]:
        """The keys (``w:<word>``, ``<lang>:<stem>``) of the subject words whose stem is one
        edit away from ``key`` (a question word's stem key); none when ``key`` is a subject
        word's stem itself or too short to compare."""
        lang, _, stem = key.partition(":")
        if key in self._known or len(stem) < MIN_STEM - 1 or lang not in self._languages:
            return set()
        near: set[str] = set()
        for deleted in _deletions(stem):
            near |= self._by_deletion.get(f"{lang}:{deleted}", set())
        if not near:
            return set()
        from rapidfuzz.distance import OSA  # 16 ms to import: only when a candidate is near

        out: set[str] = set()
        for other in near:
            other_stem = other.partition(":")[2]
            if other_stem[0] == stem[0] and OSA.distance(stem, other_stem) <= 1:
                out |= self._known[other]
        return out
