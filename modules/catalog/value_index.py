"""The value index (issue 14 item 6, "value grounding"): where a value occurs in the Workspace
Database — every text column holding it. Pure: the composition root reads the distinct values
(read-only, :func:`distinct_sql`) and persists the index; Disambiguation receives a lookup.

- **What is indexed**: text-typed columns (``TEXT``, ``VARCHAR``, ``CHAR``, ``CLOB``, ``STRING``,
  ``CITEXT``, ``ENUM`` …) of tables and views, never a column whose Sensitive Data Flag is set:
  a sensitive column's values never leave the database through the index.
- **Bounded**: at most :data:`VALUE_CAP` distinct values per column (a column with more is a
  free-text or key-like column: it is kept, marked ``truncated``, with the first ones), each at
  most :data:`MAX_VALUE_CHARS` characters (longer values are prose, not values).
- **Lookup**: exact on the normalized form (NFKC, case folded, accents stripped, white space
  collapsed); then whole-word containment in a longer value (a free-text column: "ablazione" in
  "Ablazione transcatetere di …", one match per column); then fuzzy (RapidFuzz ratio at least
  :data:`FUZZY_CUTOFF`, over the normalized values and their words of the same first letter, for
  spans of at least :data:`FUZZY_MIN_CHARS` characters): "ablazion" finds "ablazione". Every
  match lists every column where the value occurs.

The index is a projection, never an authority: it records the catalog head it was built from
(stale → not used), and the composition root confirms each match against the database before it
becomes an option of a review.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from modules.catalog.records import CatalogState

__all__ = [
    "FUZZY_CUTOFF",
    "MAX_VALUE_CHARS",
    "VALUE_CAP",
    "ColumnValues",
    "ValueFinder",
    "ValueIndex",
    "ValueMatch",
    "build_value_index",
    "distinct_sql",
    "indexable_columns",
    "normalize_value",
]

VALUE_CAP = 500
MAX_VALUE_CHARS = 120
FUZZY_CUTOFF = 88.0
FUZZY_MIN_CHARS = 5
CONTAINED_MIN_CHARS = 4
INDEX_VERSION = 1

_TEXT_TYPES = re.compile(
    r"(?i)\b(n?var)?char|text|clob|string|citext|enum|nchar|character|uuid_text|name\b"
)
_SPACE = re.compile(r"\s+")
_WORDS = re.compile(r"[^\w]+")


class ColumnValues(msgspec.Struct, frozen=True, kw_only=True):
    column: str  # table.column
    values: tuple[str, ...]
    truncated: bool = False


class ValueMatch(msgspec.Struct, frozen=True, kw_only=True):
    value: str  # as the database holds it
    columns: tuple[str, ...]
    kind: str  # normalized | contained | fuzzy
    score: float = 100.0


class ValueIndex(msgspec.Struct, frozen=True, kw_only=True):
    version: int = INDEX_VERSION
    #: what it indexed (tht/value_index_runtime.py ``fingerprint``): stale when it differs
    fingerprint: str = ""
    columns: tuple[ColumnValues, ...] = ()
    skipped_sensitive: tuple[str, ...] = ()

    def finder(self) -> ValueFinder:
        return ValueFinder(self)


class ValueFinder:
    """Lookups over one :class:`ValueIndex` (its normalized table built once)."""

    def __init__(self, index: ValueIndex) -> None:
        self.index = index
        table: dict[str, dict[str, list[str]]] = {}
        for entry in index.columns:
            for value in entry.values:
                key = normalize_value(value)
                if key:
                    table.setdefault(key, {}).setdefault(value, []).append(entry.column)
        self._table = table
        #: every normalized word (of FUZZY_MIN_CHARS or more) → column → a value holding it
        self._words: dict[str, dict[str, str]] = {}
        for key, found in table.items():
            for word in _WORDS.sub(" ", key).split():
                if len(word) >= FUZZY_MIN_CHARS:
                    for value, columns in found.items():
                        for column in columns:
                            self._words.setdefault(word, {}).setdefault(column, value)
        #: each value's normalized words, padded, for whole-word containment
        self._padded: list[tuple[str, str, str]] = [
            (" " + _WORDS.sub(" ", key) + " ", value, column)
            for key, found in table.items()
            for value, columns in found.items()
            for column in columns
        ]

    def find(self, text: str, *, fuzzy: bool = True, limit: int = 5) -> list[ValueMatch]:
        """The values ``text`` names: an exact normalized match, else the closest fuzzy ones."""
        key = normalize_value(text)
        if not key:
            return []
        exact = self._table.get(key)
        if exact:
            return [
                ValueMatch(value=value, columns=tuple(sorted(set(cols))), kind="normalized")
                for value, cols in sorted(exact.items())
            ]
        if len(key) >= CONTAINED_MIN_CHARS:
            contained = self._contained(key)
            if contained:
                return contained
        if not fuzzy or len(key) < FUZZY_MIN_CHARS:
            return []
        from rapidfuzz import fuzz, process

        def near(k: str) -> bool:
            return k[:1] == key[:1] and abs(len(k) - len(key)) <= 3

        choices = sorted({k for k in self._table if near(k)} | {w for w in self._words if near(w)})
        found = process.extract(
            key, choices, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF, limit=limit
        )
        matches = []
        for choice, raw_score, _ in found:
            score = round(float(raw_score), 1)
            for value, cols in sorted(self._table.get(choice, {}).items()):
                columns = tuple(sorted(set(cols)))
                matches.append(ValueMatch(value=value, columns=columns, kind="fuzzy", score=score))
            for column, value in sorted(self._words.get(choice, {}).items()):
                if not any(m.value == value and column in m.columns for m in matches):
                    matches.append(
                        ValueMatch(value=value, columns=(column,), kind="fuzzy", score=score)
                    )
        return matches

    def _contained(self, key: str) -> list[ValueMatch]:
        """Values holding ``key`` as whole words ("ablazione" in "Ablazione transcatetere di
        …"): one match per column, with the column's first such value."""
        needle = " " + _WORDS.sub(" ", key).strip() + " "
        first: dict[str, str] = {}
        for padded, value, column in self._padded:
            if needle in padded and column not in first:
                first[column] = value
        return [
            ValueMatch(value=value, columns=(column,), kind="contained")
            for column, value in sorted(first.items())
        ]

    def columns_of(self, text: str) -> tuple[str, ...]:
        """Every column where ``text`` (or its closest value) occurs."""
        return tuple(sorted({c for m in self.find(text) for c in m.columns}))


def normalize_value(text: str) -> str:
    """NFKC, case folded, accents stripped, white space collapsed, outer punctuation off."""
    folded = unicodedata.normalize("NFKC", str(text)).casefold()
    stripped = "".join(
        c for c in unicodedata.normalize("NFD", folded) if unicodedata.category(c) != "Mn"
    )
    return _SPACE.sub(" ", stripped).strip(" \t\n.,;:!?\"'()[]{}«»“”")


def indexable_columns(state: CatalogState) -> tuple[list[str], list[str]]:
    """``(indexed, sensitive)``: the text columns to index (``table.column``, sorted) and the
    text columns left out because their Sensitive Data Flag is set."""
    indexed: list[str] = []
    sensitive: list[str] = []
    for table in sorted(state.tables.values(), key=lambda t: t.name):
        for column in table.columns:
            if not _TEXT_TYPES.search(column.type or ""):
                continue
            name = f"{table.name}.{column.name}"
            (sensitive if column.sensitive else indexed).append(name)
    return indexed, sensitive


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def distinct_sql(column: str, cap: int = VALUE_CAP) -> str:
    """The read-only query of one column's distinct values (``cap + 1`` of them: one more says
    the column has more than ``cap``)."""
    table, _, name = column.rpartition(".")
    quoted = _quote(name)
    return (
        f"SELECT DISTINCT {quoted} FROM {_quote(table)} WHERE {quoted} IS NOT NULL "
        f"ORDER BY 1 LIMIT {cap + 1}"
    )


def build_value_index(
    state: CatalogState,
    fingerprint: str,
    distinct: Mapping[str, Sequence[Any]],
    *,
    cap: int = VALUE_CAP,
) -> ValueIndex:
    """The index from each column's distinct values (as :func:`distinct_sql` returned them)."""
    indexed, sensitive = indexable_columns(state)
    columns = []
    for name in indexed:
        raw = distinct.get(name)
        if raw is None:
            continue
        values = _values(raw)
        columns.append(
            ColumnValues(column=name, values=tuple(values[:cap]), truncated=len(raw) > cap)
        )
    return ValueIndex(
        fingerprint=fingerprint, columns=tuple(columns), skipped_sensitive=tuple(sensitive)
    )


def _values(raw: Iterable[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for value in raw:
        if isinstance(value, bytes | bytearray) or value is None:
            continue
        text = str(value)
        if text.strip() and len(text) <= MAX_VALUE_CHARS and "\x00" not in text:
            seen.setdefault(text, None)
    return list(seen)
