"""The **acronym** signal: a question that writes the acronym of a memory's term ("AOV" for
the subject "average order value", "LOS" for "length of stay", "TFR" for "trattamento di fine
rapporto").

Teams shorten the terms they use most, and neither the lexicon nor the embedder can know a
team's own acronyms. The rule is read off the words alone, in any language:

- an **acronym** is a written token of :data:`MIN_LETTERS` to :data:`MAX_LETTERS` capitals (a
  plural "s" dropped: "KPIs" is "KPI"); two-letter ones ("OR", "HR") are too often something
  else;
- a subject of two or more content words **spells** the acronym of its words' initials, every
  word counted ("length of stay", LOS) or its stopwords left out ("trattamento di fine
  rapporto", TFR).

A memory is named when the question holds an acronym its subject spells. The other direction —
a question that spells out a subject written as an acronym ("days sales outstanding" for "DSO")
— is the lexicon's (``kernel/_data/lexicon.json`` files the common expansions with their
acronyms): read off initials alone it names the wrong memory too often (measured on the 500
BIRD mini-dev questions, none about such acronyms: 3–11 % of them spell one of 95 common
business acronyms, "customers who pay in" CPI).

Pure; the stopword lists are the BM25 recipe's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import regex

from kernel.lexicon import fold
from kernel.vectors.stopwords import STOPWORDS

__all__ = [
    "MAX_LETTERS",
    "MIN_LETTERS",
    "SIBLING_EDITS",
    "AcronymIndex",
    "acronyms_in",
    "contradicts",
    "initials",
    "siblings",
]

MIN_LETTERS: Final = 3
MAX_LETTERS: Final = 6
_TOKEN: Final = regex.compile(r"[\p{Alphabetic}\p{N}]+")
# an acronym as written: capitals, then an optional plural "s" ("KPIs", "SLAs")
_ACRONYM: Final = regex.compile(r"(\p{Lu}{3,})s?")
_STOP: Final = frozenset().union(*STOPWORDS.values())


def acronyms_in(text: str) -> list[str]:
    """The acronyms written in ``text`` (:data:`MIN_LETTERS`–:data:`MAX_LETTERS` capitals, a
    plural "s" dropped), in order, each once."""
    found: dict[str, None] = {}
    for token in _TOKEN.findall(text):
        match = _ACRONYM.fullmatch(token)
        if match is not None and len(match.group(1)) <= MAX_LETTERS:
            found[match.group(1)] = None
    return list(found)


#: how far apart two acronyms of one length may be and still be siblings the embedder conflates
SIBLING_EDITS: Final = 2


def siblings(a: str, b: str) -> bool:
    """Two different acronyms of one length that differ in at most :data:`SIBLING_EDITS`
    letters: SAIDI and SAIFI, ROE and ROI, DSO and DPO, CPC and CPM — sibling measures, which
    share most of their subword tokens, so the embedder puts them close; EUR and USD, or SQL
    and CSV, are not."""
    if a == b or len(a) != len(b):
        return False
    return sum(x != y for x, y in zip(a, b, strict=True)) <= SIBLING_EDITS


def contradicts(question: Sequence[str], written: Sequence[str]) -> bool:
    """Whether a question that writes the acronyms ``question`` asks about a sibling of the
    measure a text that writes ``written`` is about: they share no acronym, and one of the
    question's is a :func:`sibling` of one of the text's ("SAIDI for 2025" is not "SAIFI by
    area"; "AOV and KPI" still is "AOV by month"; "revenue in EUR" does not contradict
    "revenue in USD": no siblings)."""
    if not question or not written or set(question) & set(written):
        return False
    return any(siblings(a, b) for a in question for b in written)


def initials(subject: str) -> set[str]:
    """The acronyms a subject spells: its words' initials, every word counted or its stopwords
    left out; none for a subject of fewer than two content words (a single word is no term to
    shorten) or an acronym outside :data:`MIN_LETTERS`–:data:`MAX_LETTERS`."""
    words: Sequence[str] = [fold(w) for w in _TOKEN.findall(subject)]
    words = [w for w in words if w[0].isalpha()]
    if sum(w not in _STOP for w in words) < 2:
        return set()
    every = "".join(w[0] for w in words).upper()
    content = "".join(w[0] for w in words if w not in _STOP).upper()
    return {a for a in (every, content) if MIN_LETTERS <= len(a) <= MAX_LETTERS}


class AcronymIndex:
    """The live memories' subjects, by the acronyms they spell."""

    def __init__(self, subjects: Iterable[tuple[str, str]]) -> None:
        """``subjects``: ``(id, subject)`` pairs, the subject as the reviewer wrote it."""
        self._by_acronym: dict[str, set[str]] = {}
        for item, subject in subjects:
            for acronym in initials(subject):
                self._by_acronym.setdefault(acronym, set()).add(item)

    def named_in(self, text: str) -> set[str]:
        """The ids whose subject spells an acronym written in ``text``."""
        out: set[str] = set()
        for acronym in acronyms_in(text):
            out |= self._by_acronym.get(acronym, set())
        return out
