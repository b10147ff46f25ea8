"""Relationship endpoints: their text form and the ids derived from them (pure).

An endpoint is a Catalog Table and an ordered tuple of its Catalog Columns; a relationship joins
``from_columns[i]`` of ``from_table`` to ``to_columns[i]`` of ``to_table``.

Text form (the Effective Relationship Map's ``from`` / ``to``, the CLI's ``FROM`` / ``TO``):
``table.column`` for one column; ``table.(a,b)`` for a composite key, the columns in key order.
The table name ends at the first dot.

Ids are deterministic from the endpoints, so the same join always has the same id — which is
what lets a Logical Relationship Deletion keep a generated relationship from being recreated:
``lr_<12 hex>`` for a Logical Relationship (Generated or Manual: one id space, so a manual
relationship and a generated candidate over the same columns are the same relationship) and
``fk_<12 hex>`` for a Catalog Relationship (a declared foreign key).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from kernel.errors import UsageError

__all__ = [
    "format_endpoint",
    "pair_key",
    "parse_endpoint",
    "relationship_id",
]


def format_endpoint(table: str, columns: Sequence[str]) -> str:
    """``t.c``, or ``t.(a,b)`` for several columns."""
    if len(columns) == 1:
        return f"{table}.{columns[0]}"
    return f"{table}.({','.join(columns)})"


def parse_endpoint(text: str) -> tuple[str, tuple[str, ...]]:
    """``t.c`` / ``t.(a,b)`` → ``(table, columns)``; ``UsageError`` when malformed."""
    table, dot, rest = text.strip().partition(".")
    if not dot or not table or not rest:
        raise UsageError(f"{text!r}: an endpoint is table.column (or table.(a,b) for a key)")
    if rest.startswith("("):
        if not rest.endswith(")"):
            raise UsageError(f"{text!r}: a composite endpoint is table.(a,b)")
        columns = tuple(c.strip() for c in rest[1:-1].split(","))
    else:
        columns = (rest,)
    if any(not c for c in columns):
        raise UsageError(f"{text!r}: an empty column name")
    if len(set(columns)) != len(columns):
        raise UsageError(f"{text!r}: a column appears twice")
    return table, columns


def relationship_id(
    kind: Literal["logical", "physical"],
    from_table: str,
    from_columns: Sequence[str],
    to_table: str,
    to_columns: Sequence[str],
) -> str:
    """The id of a relationship, from its endpoints alone (direction included)."""
    text = "\x1e".join((from_table, "\x1f".join(from_columns), to_table, "\x1f".join(to_columns)))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return ("lr_" if kind == "logical" else "fk_") + digest


def pair_key(
    from_table: str, from_columns: Sequence[str], to_table: str, to_columns: Sequence[str]
) -> frozenset[tuple[str, tuple[str, ...]]]:
    """The join without its direction: two relationships with the same key join the same
    columns (a physical FK "covers" a candidate with its key, either way round)."""
    return frozenset({(from_table, tuple(from_columns)), (to_table, tuple(to_columns))})
