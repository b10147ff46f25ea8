"""Evidence Fragments: the searchable projections of a Published Evidence unit.

Glossary: the split follows headings and paragraph boundaries; formulas, value/meaning pairs,
mappings, rules and URLs are never cut. The full rendered text of a fragment (unit title, heading
path, text) is at most ``max_chunk_chars`` (default 4,000); an atomic element too large for it is
a blocking review item.

Atoms are what may not be cut: a paragraph (a rule, a mapping or a URL lives inside one), a list
item (a value/meaning pair, a mapping line), a table row (repeated under its header when a table
spans fragments), a fenced block (a formula), a block quote. Fragments are filled greedily with
whole atoms, and a heading always starts a new fragment. Fragment ids are
``evidence:<slug>#<n>``, numbered from 1 in body order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modules.evidence.markdown import parse_blocks
from modules.evidence.units import EvidenceUnit

__all__ = ["EvidenceFragment", "FragmentPlan", "fragment_unit"]

_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass(frozen=True)
class EvidenceFragment:
    unit_id: str
    index: int
    headings: tuple[str, ...]
    text: str  # the Markdown passage of the unit body
    rendered: str  # what is embedded and BM25-encoded: title, heading path, text

    @property
    def id(self) -> str:
        return f"{self.unit_id}#{self.index}"


@dataclass(frozen=True)
class FragmentPlan:
    fragments: tuple[EvidenceFragment, ...]
    too_large: tuple[str, ...]  # one message per atomic element over the limit


@dataclass(frozen=True)
class _Atom:
    text: str
    table_header: str | None = None  # rows of one table share their header
    table_id: int | None = None


def _header(title: str, headings: tuple[str, ...]) -> str:
    return title + ("\n" + " › ".join(headings) if headings else "")


def _render(title: str, headings: tuple[str, ...], atoms: list[_Atom]) -> str:
    parts: list[str] = []
    table: int | None = None
    rows: list[str] = []
    for atom in atoms:
        if atom.table_id is not None and atom.table_id == table:
            rows.append(atom.text)
            continue
        if rows:
            parts.append("\n".join(rows))
            rows = []
        table = atom.table_id
        if atom.table_id is not None:
            rows = [atom.table_header or "", atom.text] if atom.table_header else [atom.text]
        else:
            parts.append(atom.text)
    if rows:
        parts.append("\n".join(rows))
    return _header(title, headings) + "\n\n" + "\n\n".join(parts)


def _sections(body: str) -> list[tuple[tuple[str, ...], list[_Atom]]]:
    lines = body.split("\n")
    sections: list[tuple[tuple[str, ...], list[_Atom]]] = [((), [])]
    path: list[tuple[int, str]] = []
    tables = 0
    for block in parse_blocks(body):
        if block.kind == "heading":
            path = [h for h in path if h[0] < block.level]
            path.append((block.level, block.heading))
            sections.append((tuple(h for _, h in path), []))
            continue
        atoms = sections[-1][1]
        if block.kind == "list":
            for item in block.items:
                atoms.append(_Atom("\n".join(lines[item.start : item.end]).rstrip()))
        elif block.kind == "table":
            raw = block.text.split("\n")
            head = raw[:2]
            header = "\n".join(head) if len(raw) >= 2 and _TABLE_SEPARATOR.match(raw[1]) else None
            tables += 1
            body_rows = raw[2:] if header else raw
            if not body_rows:
                atoms.append(_Atom(block.text))
            for row in body_rows:
                atoms.append(_Atom(row, table_header=header, table_id=tables))
        elif block.kind != "rule":
            atoms.append(_Atom(block.text))
    return [(h, a) for h, a in sections if a]


def fragment_unit(unit: EvidenceUnit, max_chars: int) -> FragmentPlan:
    """Split ``unit`` into fragments of at most ``max_chars`` rendered characters."""
    title = unit.front.title
    sections = _sections(unit.body)
    if not sections:  # an empty body: the excerpts are the text
        sections = [((), [_Atom(e) for e in unit.front.excerpts])]
    fragments: list[EvidenceFragment] = []
    too_large: list[str] = []

    def flush(headings: tuple[str, ...], atoms: list[_Atom]) -> None:
        if atoms:
            rendered = _render(title, headings, atoms)
            text = rendered.split("\n\n", 1)[1]
            fragments.append(
                EvidenceFragment(
                    unit_id=unit.id,
                    index=len(fragments) + 1,
                    headings=headings,
                    text=text,
                    rendered=rendered,
                )
            )

    for headings, atoms in sections:
        current: list[_Atom] = []
        for atom in atoms:
            if len(_render(title, headings, [atom])) > max_chars:
                preview = " ".join(atom.text.split())[:60]
                too_large.append(
                    f"an atomic element of {len(atom.text)} characters does not fit in "
                    f"max_chunk_chars={max_chars}: “{preview}…”"
                )
            if current and len(_render(title, headings, [*current, atom])) > max_chars:
                flush(headings, current)
                current = []
            current.append(atom)
        flush(headings, current)
    return FragmentPlan(fragments=tuple(fragments), too_large=tuple(too_large))
