"""Generated Relationships: deterministic rules on names, primary keys and type compatibility
(glossary "Generated Relationship": no model, no embedding, no data sampling). Pure.

A candidate joins a column ``T.c`` to the single-column primary key ``U.p`` of another table
when the types are compatible and the names say so, after normalisation (``CamelCase`` and
``snake_case`` both become lowercase words joined by ``_``; ``CustomerID`` → ``customer_id``):

- ``table_pk``  — ``c`` is ``<form>_<p>``: ``orders.customer_id`` → ``customers.id``,
  ``orders.country_code`` → ``countries.code``;
- ``pk_table``  — ``c`` is ``<p>_<form>``: ``ricoveri.id_ospedale`` → ``ospedali.id``;
- ``same_pk``   — ``c`` equals ``p`` and ``p`` names the table: ``orders.customer_id`` →
  ``customers.customer_id``.

A table's *forms* are its normalised name and its singulars (English and Italian plurals:
``categories`` → ``category``, ``ospedali`` → ``ospedale``, ``procedure`` → ``procedura``), and,
after a conventional prefix (``dim_``, ``fact_``, ``tbl_``, …), the rest of the name likewise.
Types are compatible within a family (integers and other numbers together; text; temporal;
boolean; binary); an undeclared type (SQLite allows one) is compatible with any.

Never generated: a join of a table with itself, a join a declared foreign key already covers
(either direction), a target without a single-column primary key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from modules.catalog.endpoints import pair_key, relationship_id
from modules.catalog.records import CatalogRelationship, CatalogTable

__all__ = [
    "Candidate",
    "compatible_types",
    "generate_candidates",
    "name_words",
    "table_forms",
    "type_family",
]

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_PREFIXES = frozenset({"tbl", "tb", "t", "dim", "fact", "fct", "ref", "lkp", "lu", "stg", "d", "f"})
_IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman"}


@dataclass(frozen=True, order=True)
class Candidate:
    from_table: str
    from_column: str
    to_table: str
    to_column: str
    rule: str

    @property
    def id(self) -> str:
        return relationship_id(
            "logical", self.from_table, (self.from_column,), self.to_table, (self.to_column,)
        )


@lru_cache(maxsize=1 << 16)  # a catalog repeats its column names: pure, so memoized
def name_words(name: str) -> str:
    """``CustomerID`` / ``customer_id`` / ``Customer-Id`` → ``customer_id``."""
    words: list[str] = []
    for part in re.split(r"[^0-9A-Za-z]+", name):
        words.extend(w.lower() for w in _CAMEL.findall(part))
    return "_".join(words)


def _singulars(word: str) -> set[str]:
    found = {word}
    if word in _IRREGULAR:
        found.add(_IRREGULAR[word])
    if len(word) < 3:
        return found
    if word.endswith("ies"):
        found.add(word[:-3] + "y")
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        found.add(word[:-2])
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        found.add(word[:-1])
    if word.endswith("i"):  # Italian: ospedali → ospedale, ricoveri → ricovero
        found.update({word[:-1] + "o", word[:-1] + "e"})
    if word.endswith("e"):  # Italian: procedure → procedura
        found.add(word[:-1] + "a")
    return found


@lru_cache(maxsize=1 << 14)
def table_forms(table: str) -> frozenset[str]:
    """The names a column may use for ``table``: normalised, singular forms, minus a
    conventional prefix."""
    words = name_words(table).split("_")
    bases = [words]
    if len(words) > 1 and words[0] in _PREFIXES:
        bases.append(words[1:])
    forms: set[str] = set()
    for base in bases:
        head, last = base[:-1], base[-1]
        for single in _singulars(last):
            forms.add("_".join([*head, single]))
    return frozenset(f for f in forms if f)


def type_family(declared: str) -> str:
    """A declared type's family (``""`` for an undeclared one)."""
    t = declared.upper().strip()
    if not t:
        return ""
    if "INTERVAL" in t or "DATE" in t or "TIME" in t:
        return "temporal"
    if "INT" in t or t in ("SERIAL", "BIGSERIAL", "SMALLSERIAL"):
        return "number"
    if any(k in t for k in ("NUMERIC", "DECIMAL", "REAL", "FLOA", "DOUB", "NUMBER", "MONEY")):
        return "number"
    if any(k in t for k in ("CHAR", "TEXT", "CLOB", "STRING", "UUID")):
        return "text"
    if "BOOL" in t:
        return "boolean"
    if any(k in t for k in ("BLOB", "BYTEA", "BINARY")):
        return "binary"
    return re.sub(r"\(.*", "", t).strip()


def compatible_types(a: str, b: str) -> bool:
    fa, fb = type_family(a), type_family(b)
    return not fa or not fb or fa == fb


def _keys(pk: str, forms: frozenset[str]) -> list[tuple[str, str]]:
    """The normalised column names that point at a table with these forms and pk, with the
    rule each one follows (first rule wins)."""
    keys = [(f"{form}_{pk}", "table_pk") for form in sorted(forms)]
    keys += [(f"{pk}_{form}", "pk_table") for form in sorted(forms)]
    if pk != "id":
        words = pk.split("_")
        for form in sorted(forms):
            n = len(form.split("_"))
            if len(words) > n and form in ("_".join(words[:n]), "_".join(words[-n:])):
                keys.append((pk, "same_pk"))
                break
    return keys


def generate_candidates(
    tables: Mapping[str, CatalogTable],
    physical: Iterable[CatalogRelationship],
    *,
    only_columns: frozenset[tuple[str, str]] | None = None,
) -> list[Candidate]:
    """Every candidate over ``tables`` (sorted), or only those with an endpoint in
    ``only_columns`` (``(table, column)`` pairs: the newly observed columns of a sync)."""
    covered = {pair_key(r.from_table, r.from_columns, r.to_table, r.to_columns) for r in physical}
    # normalised column name → the targets it points at: (table, pk column, pk type, rule)
    index: dict[str, list[tuple[str, str, str, str]]] = {}
    for target in tables.values():
        key = target.primary_key
        if len(key) != 1:
            continue
        pk = target.column(key[0])
        assert pk is not None
        seen: set[str] = set()
        for name, rule in _keys(name_words(pk.name), table_forms(target.name)):
            if name not in seen:
                seen.add(name)
                index.setdefault(name, []).append((target.name, pk.name, pk.type, rule))
    found: list[Candidate] = []
    for source in tables.values():
        for column in source.columns:
            for to_table, pk_name, pk_type, rule in index.get(name_words(column.name), ()):
                if to_table == source.name:
                    continue
                if only_columns is not None and not (
                    (source.name, column.name) in only_columns
                    or (to_table, pk_name) in only_columns
                ):
                    continue
                if not compatible_types(column.type, pk_type):
                    continue
                if pair_key(source.name, (column.name,), to_table, (pk_name,)) in covered:
                    continue
                found.append(Candidate(source.name, column.name, to_table, pk_name, rule))
    found.sort()
    return found
