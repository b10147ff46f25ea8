"""The lexical signals of schema linking: name matches and Evidence mentions (pure).

- **Name matches**: the stems of a table or column name (split at ``snake_case`` and
  ``CamelCase``, stemmed like BM25 in the workspace's first language) met in the question. A
  name's words weigh by how specific they are among the candidate names (``id`` names half the
  schema, ``currency`` one column), and the whole name met as a phrase counts more than its words
  scattered.
- **Value-like tokens**: text in quotes (``'EUR'``, ``"Alameda"``) is a value, not a name: it is
  left out of name matching; a date-like value favours date and time columns.
- **Evidence mentions**: an Evidence Hint (the text of a mapping or formula unit found for the
  question, or the evidence a benchmark gives) that names a column — qualified
  (``frpm.`Free Meal Count (K-12)` ``, ``customers.Currency``), delimited (`` `Currency` ``,
  ``[Currency]``, ``"Currency"``) or in plain words (``count(Currency = 'EUR')``) — boosts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import msgspec
import regex

from kernel.schema_view import SchemaTable
from modules.catalog.schema_text import name_words

__all__ = [
    "NAME_WORDS",
    "EvidenceHint",
    "NameMatcher",
    "Stemmer",
    "date_like",
    "delimited_names",
    "has_proper_name",
    "is_date_type",
    "is_text_type",
    "qualified_names",
    "resolve_qualified",
    "stems_of_name",
    "stems_of_text",
    "strip_values",
]

Stemmer = Callable[[str], Sequence[str]]


class EvidenceHint(msgspec.Struct, frozen=True, kw_only=True):
    """A text that may name columns, and how much to trust it (1.0: the question's own)."""

    text: str
    weight: float = 1.0


_QUOTED: Final = regex.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|“([^”\n]{1,80})”")
_DATE: Final = regex.compile(r"^\d{4}(-\d{1,2}(-\d{1,2})?)?$|^\d{1,2}/\d{1,2}/\d{2,4}$")
_NAME: Final = (
    r"(?:`([^`\n]{1,80})`|\[([^\]\n]{1,80})\]|\"([^\"\n]{1,80})\"|([\p{L}_][\p{L}\p{N}_]*))"
)
_QUALIFIED: Final = regex.compile(_NAME + r"\s*\.\s*" + _NAME)
_DELIMITED: Final = regex.compile(r"`([^`\n]{1,80})`|\[([^\]\n]{1,80})\]|\"([^\"\n]{1,80})\"")
_DATE_TYPES: Final = ("date", "time", "year")
_TEXT_TYPES: Final = ("char", "text", "clob", "string")
#: words of a name-like column (Italian and English), stemmed by the caller's stemmer
NAME_WORDS: Final = ("name", "names", "title", "nome", "nomi", "titolo", "denominazione")
# two or more capitalised words, or one after a lowercase word: "Kevin Constant", "in Ajax"
_PROPER: Final = regex.compile(r"(?<=\p{Ll}[,;:]?\s)\p{Lu}[\p{L}'’.-]+(?:\s+\p{Lu}[\p{L}'’.-]+)*")


def strip_values(text: str) -> tuple[str, list[str]]:
    """``text`` with quoted values blanked out, and the values (in order)."""
    values: list[str] = []

    def blank(match: regex.Match[str]) -> str:
        values.append(next(g for g in match.groups() if g is not None))
        return " "

    return _QUOTED.sub(blank, text), values


def date_like(value: str) -> bool:
    return bool(_DATE.match(value.strip()))


def is_date_type(type_name: str) -> bool:
    lowered = type_name.lower()
    return any(t in lowered for t in _DATE_TYPES)


def is_text_type(type_name: str) -> bool:
    lowered = type_name.lower()
    return not lowered or any(t in lowered for t in _TEXT_TYPES)


def has_proper_name(text: str) -> bool:
    """A capitalised word inside a sentence (after a lowercase word): a name, a value."""
    return _PROPER.search(text) is not None


def qualified_names(text: str) -> list[tuple[str, str]]:
    """``(table, column)`` for every ``table.column`` written in ``text`` (delimiters removed)."""
    found: list[tuple[str, str]] = []
    for match in _QUALIFIED.finditer(text):
        groups = match.groups()
        table = next((g for g in groups[:4] if g is not None), "")
        column = next((g for g in groups[4:] if g is not None), "")
        if table and column:
            found.append((table, column))
    return found


def delimited_names(text: str) -> list[str]:
    """Every name written between backquotes, brackets or double quotes."""
    return [next(g for g in m.groups() if g is not None) for m in _DELIMITED.finditer(text)]


def stems_of_name(stem: Stemmer, name: str) -> tuple[str, ...]:
    return tuple(stem(" ".join(name_words(name))))


def stems_of_text(stem: Stemmer, text: str) -> tuple[str, ...]:
    return tuple(stem(" ".join(name_words(text))))


class NameMatcher:
    """Scores names against one text's stems, each word weighted by its specificity among the
    candidate names (``1 / (1 + ln df)``, df = candidate names containing the stem)."""

    def __init__(self, names: Iterable[tuple[str, ...]]) -> None:
        df: dict[str, int] = {}
        for stems in names:
            for s in set(stems):
                df[s] = df.get(s, 0) + 1
        self._weight = {s: 1.0 / (1.0 + math.log(n)) for s, n in df.items()}

    def weight(self, stem: str) -> float:
        return self._weight.get(stem, 1.0)

    def score(self, name: Sequence[str], text: Sequence[str], text_set: frozenset[str]) -> float:
        """In [0, 1]: weighted coverage of ``name``'s stems by ``text``, times the specificity
        of the best word met; the whole name as a contiguous phrase scores its full value."""
        if not name:
            return 0.0
        weights = [self.weight(s) for s in name]
        met = [w for s, w in zip(name, weights, strict=True) if s in text_set]
        if not met:
            return 0.0
        coverage = sum(met) / sum(weights)
        phrase = _contains(text, name)
        return max(met) * (coverage if phrase else 0.7 * coverage)


def _contains(text: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    if n == 0 or n > len(text):
        return False
    first = phrase[0]
    return any(
        text[i] == first and tuple(text[i : i + n]) == tuple(phrase)
        for i in range(len(text) - n + 1)
    )


def resolve_qualified(
    pairs: Iterable[tuple[str, str]], tables: Mapping[str, SchemaTable]
) -> list[tuple[str, str]]:
    """The ``(table, column)`` pairs that exist (case-insensitive), as the view spells them."""
    folded = {name.lower(): t for name, t in tables.items()}
    out: list[tuple[str, str]] = []
    for table_name, column_name in pairs:
        table = tables.get(table_name) or folded.get(table_name.lower())
        if table is None:
            continue
        column = table.column(column_name)
        if column is not None:
            out.append((table.name, column.name))
    return out
