"""A term two glossary units define differently (F1). Pure.

The glossary comes in as :class:`~modules.disambiguation.ambiguity_records.GlossaryEntry`
records (term, definition, unit, target). An entry's term is found in the question the way
catalog names are (folded, stemmed, ``_``/camelCase split, phrases of up to four words).
Entries for the same span conflict when they differ in their definition (compared folded, with
whitespace collapsed) or their target; one reading per distinct definition, naming its units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernel.schema_view import SchemaView
from modules.disambiguation.ambiguity_records import GlossaryEntry
from modules.disambiguation.ambiguity_rules import Finding, Reading
from modules.disambiguation.ambiguity_terms import (
    MAX_PHRASE,
    Lexicon,
    Token,
    fold_text,
    identifier_words,
)
from modules.disambiguation.ambiguity_values import canonical_target

__all__ = ["GlossaryMatch", "glossary_findings", "glossary_matches"]


@dataclass(frozen=True)
class GlossaryMatch:
    start: int
    end: int
    tokens: tuple[int, ...]
    entries: tuple[GlossaryEntry, ...]


def _target(view: SchemaView, target: str | None) -> str | None:
    return canonical_target(view, target) if target else None


def glossary_matches(
    tokens: Sequence[Token], entries: Sequence[GlossaryEntry], lexicon: Lexicon
) -> list[GlossaryMatch]:
    """Where the entries' terms occur in the question (longest first, no overlap)."""
    by_span: dict[tuple[int, ...], list[GlossaryEntry]] = {}
    wanted = [(identifier_words(e.term), e) for e in entries]
    for words, entry in sorted(wanted, key=lambda pair: -len(pair[0])):
        n = len(words)
        if not n or n > MAX_PHRASE:
            continue
        keys = lexicon.keys(words)
        for i in range(len(tokens) - n + 1):
            span = tuple(range(i, i + n))
            if any(tokens[j].clause_end for j in span[:-1]):
                continue
            if lexicon.keys([tokens[j].text for j in span]) & keys:
                by_span.setdefault(span, []).append(entry)
    taken: set[int] = set()
    found: list[GlossaryMatch] = []
    for span in sorted(by_span, key=lambda s: (-len(s), s[0])):
        if taken & set(span):
            continue
        taken.update(span)
        found.append(
            GlossaryMatch(tokens[span[0]].start, tokens[span[-1]].end, span, tuple(by_span[span]))
        )
    return sorted(found, key=lambda m: m.start)


def glossary_findings(
    question: str, matches: Sequence[GlossaryMatch], view: SchemaView
) -> list[Finding]:
    found: list[Finding] = []
    for match in matches:
        readings: dict[tuple[str, str | None], list[GlossaryEntry]] = {}
        for entry in match.entries:
            key = (" ".join(fold_text(entry.definition).split()), _target(view, entry.target))
            readings.setdefault(key, []).append(entry)
        if len(readings) < 2:
            continue
        term = question[match.start : match.end]
        out = []
        for (_, target), group in readings.items():
            units = ", ".join(sorted({e.unit for e in group}))
            definition = group[0].definition.strip()
            where = f" → {target}" if target else ""
            out.append(
                Reading(
                    kind="definition",
                    target=target,
                    meaning=definition,
                    label=f"{definition}{where} ({units})",
                )
            )
        out.sort(key=lambda r: (r.meaning.casefold(), r.target or "", r.label))
        folded = " ".join(fold_text(term).split())
        found.append(Finding("glossary_conflict", term, folded, match.start, match.end, tuple(out)))
    return found
