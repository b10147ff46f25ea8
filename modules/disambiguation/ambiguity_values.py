"""Values that occur in several columns (F1, issue 14's "ablazione": a boolean flag column and a
value of the free-text pathology column). Pure: the value index comes in as a
:class:`~modules.disambiguation.ambiguity_records.ValueLookup`.

The spans looked up, longest first, each at most once: quoted text, runs of capitalised words,
the question's terms (phrases naming catalog elements), and every other content word; bare
numbers only when quoted (the value index holds text and categorical columns). A span that the
index finds covers its tokens: no shorter span inside it is looked up.

A span is ambiguous when its readings reach two or more targets: the columns where it occurs as
a value (``value_grounded``), and, when the span is also a term, the columns it names
(``concept_clarified``). Columns the view does not hold (a stale index) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kernel.schema_view import SchemaView
from modules.disambiguation.ambiguity_records import ValueLookup
from modules.disambiguation.ambiguity_rules import Finding, Reading
from modules.disambiguation.ambiguity_terms import Term, Token, fold_text

__all__ = ["ValueHit", "canonical_column", "canonical_target", "value_findings", "value_hits"]

_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|“([^”]+)”|«([^»]+)»")


@dataclass(frozen=True)
class ValueHit:
    text: str
    start: int
    end: int
    columns: tuple[str, ...]


def canonical_column(view: SchemaView, name: str) -> str | None:
    """``table.column`` as the view spells it, or None when the view has no such column."""
    table_name, dot, column_name = name.strip().rpartition(".")
    if not dot:
        return None
    table = view.table(table_name.strip())
    column = table.column(column_name.strip()) if table is not None else None
    return None if column is None or table is None else f"{table.name}.{column.name}"


def canonical_target(view: SchemaView, target: str) -> str | None:
    """A catalog element as the view spells it: ``table.column`` (a column) when the name has
    a dot, else ``table``; None when the view has no such element."""
    name = target.strip()
    if "." in name:
        return canonical_column(view, name)
    table = view.table(name) if name else None
    return None if table is None else table.name


def _spans(question: str, tokens: Sequence[Token], terms: Sequence[Term]) -> list[tuple[int, int]]:
    spans: set[tuple[int, int]] = set()
    for m in _QUOTED.finditer(question):
        group = next(i for i in range(1, 5) if m.group(i) is not None)
        spans.add((m.start(group), m.end(group)))
    run: list[Token] = []
    for token in [*tokens, None]:
        capital = token is not None and token.raw[:1].isupper() and not token.raw.isdigit()
        if token is not None and capital:
            run.append(token)
        if run and (not capital or (token is not None and token.clause_end)):
            while run and run[0].stop:
                run.pop(0)
            while run and run[-1].stop:
                run.pop()
            if run:
                spans.add((run[0].start, run[-1].end))
            run = []
    spans.update((t.start, t.end) for t in terms)
    spans.update((t.start, t.end) for t in tokens if not t.stop and not t.text.isdigit())
    return sorted(spans, key=lambda s: (s[0] - s[1], s[0]))


def value_hits(
    question: str,
    tokens: Sequence[Token],
    terms: Sequence[Term],
    view: SchemaView,
    values: ValueLookup,
) -> list[ValueHit]:
    """The spans the value index finds, longest first, none inside another."""
    hits: list[ValueHit] = []
    for start, end in _spans(question, tokens, terms):
        if any(h.start <= start and end <= h.end for h in hits):
            continue
        text = question[start:end].strip()
        if not fold_text(text).strip():
            continue
        found = []
        for name in values(text):
            column = canonical_column(view, name)
            if column is not None and column not in found:
                found.append(column)
        if found:
            hits.append(ValueHit(text, start, end, tuple(sorted(found))))
    return sorted(hits, key=lambda h: h.start)


def value_findings(hits: Sequence[ValueHit], terms: Sequence[Term]) -> list[Finding]:
    """Hits whose readings (value columns, and the columns the same span names) are two or more."""
    by_span = {(t.start, t.end): t for t in terms}
    found: list[Finding] = []
    for hit in hits:
        readings = [
            Reading(
                kind="value",
                target=column,
                value=hit.text,
                meaning=f"{hit.text!r} is a value of {column}",
                label=f"the value {hit.text!r} of {column}",
            )
            for column in hit.columns
        ]
        term = by_span.get((hit.start, hit.end))
        if term is not None:
            readings += [
                Reading(
                    kind="column",
                    target=e.target,
                    meaning=f"{hit.text!r} names the column {e.target}",
                    label=f"the column {e.target}",
                )
                for e in term.columns
                if e.target not in hit.columns
            ]
        if len({r.target for r in readings}) < 2:
            continue
        folded = " ".join(fold_text(hit.text).split())
        found.append(
            Finding("value_columns", hit.text, folded, hit.start, hit.end, tuple(readings))
        )
    return found
