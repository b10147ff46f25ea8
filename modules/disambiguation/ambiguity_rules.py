"""The structural rules of F1's ambiguity detection, read from the ``SchemaView`` alone. Pure.

**Joinable attribute** (AmbiQT's "J"): a term names columns of two tables that join, and the
columns are not the join's key. Two tables join through an effective relationship, or through a
*shared key*: a column of the same name in both that is the primary key of one of them (of both
only when its name says more than ``id``/``code``: tables all keyed ``id`` do not join). The
link is *one-to-one* when its key is the primary key on both sides, or when one table's other
columns all repeat the other table's (a vertical split: a copy of some of the same entity's
attributes). A one-to-one copy is always ambiguous; across a many-to-one link (``ward.name`` and
``hospital.name``) the question usually says whose attribute it means, so it is ambiguous only
when it names neither table.

**Precomputed aggregate** (AmbiQT's "P"): the question asks for an aggregate (*average, mean,
total, sum, count, number of, how many, maximum, highest, minimum, lowest, media, totale,
quanti, massimo, …*) of a measure the catalog holds twice: as a column ``x`` to aggregate and as
a precomputed aggregate column named ``<aggregate>_x`` or ``x_<aggregate>`` (``avg_x``,
``total_x``, ``x_count``, ``num_x``, ``tot_x``, ``media_x``…) in any table. The readings: each
``x`` to aggregate at query time, and each table holding precomputed aggregates of ``x`` (its
one column of the asked aggregate when there is exactly one, else the table).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernel.schema_view import SchemaTable, SchemaView
from modules.disambiguation.ambiguity_records import AmbiguityKind, ReadingKind
from modules.disambiguation.ambiguity_terms import Element, Lexicon, Term, Token, identifier_words

__all__ = [
    "AGGREGATE_CUES",
    "AGGREGATE_NAMES",
    "GENERIC_KEYS",
    "Aggregates",
    "Finding",
    "Joins",
    "Link",
    "Reading",
    "aggregate_functions",
    "index_aggregates",
    "joinable_findings",
    "precomputed_findings",
]

#: words of a column name that make it a precomputed aggregate, and its function
AGGREGATE_NAMES: dict[str, str] = {
    "avg": "avg", "average": "avg", "mean": "avg", "media": "avg", "medio": "avg",
    "sum": "sum", "total": "sum", "tot": "sum", "totale": "sum", "somma": "sum",
    "min": "min", "minimum": "min", "minimo": "min",
    "max": "max", "maximum": "max", "massimo": "max",
    "count": "count", "cnt": "count", "num": "count", "number": "count", "numero": "count",
    "n": "count", "nr": "count", "conteggio": "count",
}  # fmt: skip
#: words of a question that ask for an aggregate (folded), and its function
AGGREGATE_CUES: dict[str, str] = {
    "average": "avg", "averages": "avg", "avg": "avg", "mean": "avg", "media": "avg",
    "medio": "avg", "medi": "avg", "medie": "avg",
    "total": "sum", "totals": "sum", "sum": "sum", "overall": "sum", "totale": "sum",
    "totali": "sum", "somma": "sum", "complessivo": "sum", "complessiva": "sum",
    "count": "count", "number": "count", "numbers": "count", "numero": "count",
    "conteggio": "count", "quanti": "count", "quante": "count", "quanto": "count",
    "quanta": "count",
    "maximum": "max", "max": "max", "highest": "max", "largest": "max", "biggest": "max",
    "greatest": "max", "most": "max", "massimo": "max", "massima": "max", "massimi": "max",
    "minimum": "min", "min": "min", "lowest": "min", "smallest": "min", "least": "min",
    "fewest": "min", "minimo": "min", "minima": "min", "minimi": "min",
}  # fmt: skip
#: the words of a key's name that say nothing of its table
GENERIC_KEYS = frozenset({"id", "code", "key", "pk", "uuid", "guid", "codice", "chiave", "cod"})
_FUNCTION_WORDS = {"avg": "AVG", "sum": "SUM", "count": "COUNT", "max": "MAX", "min": "MIN"}


@dataclass(frozen=True)
class Reading:
    kind: ReadingKind
    target: str | None
    meaning: str
    label: str
    value: str | None = None


@dataclass(frozen=True)
class Finding:
    """One rule's verdict on one term: the readings it found (at least two)."""

    kind: AmbiguityKind
    term: str
    folded: str
    start: int
    end: int
    readings: tuple[Reading, ...]


def aggregate_functions(tokens: Sequence[Token]) -> tuple[str, ...]:
    """The aggregate functions the question asks for, in question order (``how many`` counts)."""
    found: list[str] = []
    for i, token in enumerate(tokens):
        function = AGGREGATE_CUES.get(token.text)
        if token.text == "many" and i > 0 and tokens[i - 1].text == "how":
            function = "count"
        if function and function not in found:
            found.append(function)
    return tuple(found)


# --------------------------------------------------------------------------- joins


@dataclass(frozen=True)
class Link:
    keys: frozenset[str]  # folded key column names, both sides
    one_to_one: bool


def _folded_columns(table: SchemaTable) -> dict[str, bool]:
    return {c.name.casefold(): c.pk for c in table.columns}


class Joins:
    """How the view's tables join: effective relationships and shared keys."""

    def __init__(self, view: SchemaView) -> None:
        self._view = view
        #: table pair → the key column pairs of its relationships (folded), per table
        self._relationships: dict[frozenset[str], list[dict[str, tuple[str, ...]]]] = {}
        for r in view.relationships():
            if r.from_table == r.to_table:
                continue
            pair = frozenset({r.from_table, r.to_table})
            self._relationships.setdefault(pair, []).append(
                {
                    r.from_table: tuple(c.casefold() for c in r.from_columns),
                    r.to_table: tuple(c.casefold() for c in r.to_columns),
                }
            )

    def link(self, a: str, b: str) -> Link | None:
        if a == b:
            return None
        ta, tb = self._view.table(a), self._view.table(b)
        if ta is None or tb is None:
            return None
        ca, cb = _folded_columns(ta), _folded_columns(tb)
        sides = [
            (rel.get(ta.name, ()), rel.get(tb.name, ()))
            for rel in self._relationships.get(frozenset({ta.name, tb.name}), ())
        ]
        sides += [((k,), (k,)) for k in sorted(ca.keys() & cb.keys()) if _shared_key(k, ca, cb)]
        if not sides:
            return None
        keys = frozenset(k for side_a, side_b in sides for k in (*side_a, *side_b))
        both_keyed = any(
            side_a
            and side_b
            and all(ca.get(k, False) for k in side_a)
            and all(cb.get(k, False) for k in side_b)
            for side_a, side_b in sides
        )
        split = _repeats(ca, cb, keys) or _repeats(cb, ca, keys)
        return Link(keys=keys, one_to_one=both_keyed or split)


def _shared_key(name: str, a: dict[str, bool], b: dict[str, bool]) -> bool:
    """A same-named column joins two tables when it is the primary key of one of them, or of
    both when its name says more than "id" (every table keyed ``id`` joins no other by it)."""
    if a[name] != b[name]:
        return True
    return a[name] and not set(identifier_words(name)) <= GENERIC_KEYS


def _repeats(small: dict[str, bool], big: dict[str, bool], keys: frozenset[str]) -> bool:
    """Every non-key column of ``small`` is also a column of ``big`` (and there is one)."""
    rest = [c for c in small if c not in keys]
    return bool(rest) and len(small) < len(big) and all(c in big for c in rest)


def _described(view: SchemaView, element: Element) -> str:
    table = view.table(element.table)
    column = table.column(element.column) if table and element.column else None
    if column is None:
        return ""
    bits = [column.type.lower()] if column.type else []
    if column.description:
        bits.append(column.description)
    return f" ({'; '.join(bits)})" if bits else ""


def joinable_findings(
    terms: Iterable[Term], view: SchemaView, joins: Joins, mentioned: frozenset[str]
) -> list[Finding]:
    """Terms naming non-key columns of two joinable tables (rule in the module docstring)."""
    found: list[Finding] = []
    for term in terms:
        columns = term.columns
        pairs: dict[Element, set[str]] = {}  # column → join keys that describe it
        for i, a in enumerate(columns):
            for b in columns[i + 1 :]:
                link = joins.link(a.table, b.table)
                if link is None or a.column is None or b.column is None:
                    continue
                if a.column.casefold() in link.keys or b.column.casefold() in link.keys:
                    continue
                if not link.one_to_one and (a.table in mentioned or b.table in mentioned):
                    continue
                for element, other in ((a, b), (b, a)):
                    pairs.setdefault(element, set()).add(
                        f"joined to {other.table} on {', '.join(sorted(link.keys))}"
                    )
        if len(pairs) < 2:
            continue
        readings = tuple(
            Reading(
                kind="column",
                target=e.target,
                meaning=f"{term.text!r} is {e.target}{_described(view, e)}, "
                f"{'; '.join(sorted(pairs[e]))}",
                label=f"{e.target}{_described(view, e)}",
            )
            for e in sorted(pairs, key=lambda e: e.target)
        )
        found.append(_finding("joinable_attribute", term, readings))
    return found


def _finding(kind: AmbiguityKind, term: Term, readings: tuple[Reading, ...]) -> Finding:
    return Finding(kind, term.text, term.folded, term.start, term.end, readings)


# --------------------------------------------------------------------------- aggregates


@dataclass(frozen=True)
class Aggregates:
    """The view's columns by measure key: plain ones, and precomputed aggregates of each."""

    plain: dict[str, set[Element]]
    precomputed: dict[str, set[tuple[Element, str]]]


def _aggregate_split(words: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    if len(words) < 2:
        return None
    if words[0] in AGGREGATE_NAMES:
        return AGGREGATE_NAMES[words[0]], words[1:]
    if words[-1] in AGGREGATE_NAMES:
        return AGGREGATE_NAMES[words[-1]], words[:-1]
    return None


def index_aggregates(view: SchemaView, lexicon: Lexicon) -> Aggregates:
    """Every non-key column under its keys, and every precomputed aggregate under its
    measure's keys."""
    plain: dict[str, set[Element]] = {}
    precomputed: dict[str, set[tuple[Element, str]]] = {}
    for table in view.tables():
        for column in table.columns:
            if column.pk:
                continue
            words = identifier_words(column.name)
            element = Element(table.name, column.name)
            for key in lexicon.keys(words):
                plain.setdefault(key, set()).add(element)
            split = _aggregate_split(words)
            if split is not None:
                function, base = split
                for key in lexicon.keys(base):
                    precomputed.setdefault(key, set()).add((element, function))
    return Aggregates(plain, precomputed)


def _measures(term: Term, lexicon: Lexicon) -> list[frozenset[str]]:
    """The keys of each measure the term may name: each column's words, and, for a column
    that is itself an aggregate (``avg_x``), the measure it aggregates."""
    measures: list[frozenset[str]] = []
    for element in term.columns:
        assert element.column is not None
        words = identifier_words(element.column)
        split = _aggregate_split(words)
        for base in (words, split[1] if split else None):
            if base and lexicon.keys(base) not in measures:
                measures.append(lexicon.keys(base))
    return measures


def _held_twice(
    measures: Iterable[frozenset[str]], aggregates: Aggregates
) -> tuple[set[Element], dict[str, set[tuple[Element, str]]]]:
    """The plain columns and the precomputed aggregates (by table) of the measures that the
    catalog holds both ways."""
    plain: set[Element] = set()
    stored: dict[str, set[tuple[Element, str]]] = {}
    for keys in measures:
        these = set().union(*(aggregates.plain.get(k, set()) for k in keys))
        kept = set().union(*(aggregates.precomputed.get(k, set()) for k in keys))
        if these and kept:
            plain |= these
            for element, function in kept:
                stored.setdefault(element.table, set()).add((element, function))
    plain -= {e for pairs in stored.values() for e, _ in pairs}
    return plain, stored


def _aggregate_readings(
    text: str,
    plain: set[Element],
    stored: dict[str, set[tuple[Element, str]]],
    functions: tuple[str, ...],
) -> tuple[Reading, ...]:
    asked = " / ".join(_FUNCTION_WORDS[f] for f in functions)
    readings = [
        Reading(
            kind="column",
            target=e.target,
            meaning=f"{text!r}: {asked} of {e.target}, computed when the query runs",
            label=f"compute {asked} of {e.target} when the query runs",
        )
        for e in sorted(plain, key=lambda e: e.target)
    ]
    for table in sorted(stored):
        columns = sorted(stored[table], key=lambda pair: pair[0].target)
        matching = [e for e, f in columns if f in functions]
        target = matching[0].target if len(matching) == 1 else table
        names = ", ".join(e.column or "" for e in (matching or [e for e, _ in columns]))
        readings.append(
            Reading(
                kind="column" if len(matching) == 1 else "table",
                target=target,
                meaning=f"{text!r}: the precomputed aggregate {names} of {table}, read as "
                "stored (not recomputed)",
                label=f"read the precomputed {names} of {table}",
            )
        )
    return tuple(readings)


def precomputed_findings(
    terms: Sequence[Term],
    view: SchemaView,
    aggregates: Aggregates,
    lexicon: Lexicon,
    functions: tuple[str, ...],
) -> list[Finding]:
    """Terms naming a measure held both as a column and as precomputed aggregates of it, in a
    question that asks for an aggregate (rule in the module docstring). When the question
    names no measure at all, only a table, the table's measures that are held both ways are
    the readings (*"on average, when were the orders shipped?"*)."""
    if not functions:
        return []
    found: list[Finding] = []
    for term in terms:
        plain, stored = _held_twice(_measures(term, lexicon), aggregates)
        if plain and stored:
            found.append(
                _finding(
                    "precomputed_aggregate",
                    term,
                    _aggregate_readings(term.text, plain, stored, functions),
                )
            )
    if found or any(e.column and not _is_key(view, e) for t in terms for e in t.columns):
        return found
    for term in terms:
        for table_name in term.tables:
            table = view.table(table_name)
            if table is None:
                continue
            measures = [lexicon.keys(identifier_words(c.name)) for c in table.columns if not c.pk]
            plain, stored = _held_twice(measures, aggregates)
            plain = {e for e in plain if e.table == table.name}
            if plain and stored:
                readings = _aggregate_readings(term.text, plain, stored, functions)
                found.append(_finding("precomputed_aggregate", term, readings))
    return found


def _is_key(view: SchemaView, element: Element) -> bool:
    table = view.table(element.table)
    column = table.column(element.column) if table and element.column else None
    return column is not None and column.pk
