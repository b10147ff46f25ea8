"""The index text of Catalog Tables and Catalog Columns: what schema linking searches (pure).

Names are split at ``snake_case``, ``CamelCase``, digits and punctuation
(``FreeMealCount_K12`` → ``free meal count k 12``), so a question's words meet the name's words
in the dense embedding and in BM25 alike. A column's text carries its table's name, its type, its
key flag and its Description when there is one; a table's text carries its columns' names and its
Description. The raw identifier is kept beside the split words when splitting changed more than
the separators (``FreeMealCount``), so a question that quotes it verbatim still matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import regex

from kernel.schema_view import SchemaColumn, SchemaTable

__all__ = [
    "MAX_TABLE_COLUMNS_IN_TEXT",
    "column_text",
    "name_words",
    "split_identifier",
    "table_text",
]

#: a table's text names at most this many columns (wide tables stay within the model's window)
MAX_TABLE_COLUMNS_IN_TEXT: Final = 60

# an acronym before a capitalised word | a (capitalised) lowercase run | an uppercase run | digits
# | any other letters (scripts without case)
_PARTS: Final = regex.compile(
    r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{N}+|[\p{L}\p{M}]+"
)
_SEPARATORS: Final = regex.compile(r"[^\p{L}\p{M}\p{N}]+")


def name_words(name: str) -> list[str]:
    """The lowercase words of an identifier: ``FreeMealCount_K12`` → ``free meal count k 12``.

    Splits at every non-alphanumeric character (``_``, spaces, ``-``, parentheses), at
    lower→upper case changes (``mealCount``), before the last capital of an acronym followed by a
    lowercase letter (``HTMLParser`` → ``html parser``) and between letters and digits.
    """
    words: list[str] = []
    for chunk in _SEPARATORS.split(name):
        if chunk:
            words.extend(part.lower() for part in _PARTS.findall(chunk))
    return words


def split_identifier(name: str) -> str:
    """:func:`name_words` joined by single spaces."""
    return " ".join(name_words(name))


def _with_raw(name: str) -> str:
    split = split_identifier(name)
    plain = " ".join(w.lower() for w in _SEPARATORS.split(name) if w)
    return split if plain == split else f"{split} ({name})"


def column_text(table: SchemaTable, column: SchemaColumn) -> str:
    """The index text of ``column``: split name, table, type, key flag, Description."""
    parts = [f"{_with_raw(column.name)}: column of table {_with_raw(table.name)}"]
    if column.type:
        parts.append(f"type {column.type.lower()}")
    if column.pk:
        parts.append("primary key")
    text = ", ".join(parts) + "."
    if column.description.strip():
        text += f" {' '.join(column.description.split())}"
    return text


def table_text(table: SchemaTable, columns: Sequence[SchemaColumn] | None = None) -> str:
    """The index text of ``table``: split name, its columns' split names, Description."""
    cols = list(table.columns if columns is None else columns)[:MAX_TABLE_COLUMNS_IN_TEXT]
    text = f"{_with_raw(table.name)}: table"
    if cols:
        text += " with columns " + ", ".join(split_identifier(c.name) for c in cols)
    text += "."
    if table.description.strip():
        text += f" {' '.join(table.description.split())}"
    return text
