"""The Evidence query text: one deterministic text shared by dense and BM25 retrieval.

Glossary ("Evidence query text"): the original question, then concepts, tables and columns, in
this fixed order; empty fields are omitted. Question and context receive only Unicode NFC
normalization, newline conversion and removal of outer whitespace. Context elements are then
de-duplicated and sorted without case conversion; punctuation and inner spaces of the question are
never rewritten. Rendered as::

    <question>
    concepts: <a>; <b>
    tables: <t>
    columns: <t.c>; <t.d>
"""

from __future__ import annotations

from collections.abc import Iterable

from modules.evidence.text import normalize_text

__all__ = ["evidence_query_text"]


def _elements(values: Iterable[str]) -> list[str]:
    cleaned = {normalize_text(v).strip() for v in values}
    return sorted(v for v in cleaned if v)


def evidence_query_text(
    question: str,
    *,
    concepts: Iterable[str] = (),
    tables: Iterable[str] = (),
    columns: Iterable[str] = (),
) -> str:
    """The query text for ``question`` and its context (pure, deterministic)."""
    lines = []
    q = normalize_text(question).strip()
    if q:
        lines.append(q)
    for label, values in (("concepts", concepts), ("tables", tables), ("columns", columns)):
        items = _elements(values)
        if items:
            lines.append(f"{label}: " + "; ".join(items))
    return "\n".join(lines)
