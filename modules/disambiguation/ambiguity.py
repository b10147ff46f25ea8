"""F1's ambiguity detection over the catalog: from the question, the ``SchemaView``, the Evidence
glossary and the value index, the terms that map to more than one reading and the terms that
map to nothing. Pure and deterministic: the same inputs give the same report, byte for byte.

Four kinds of ambiguity (their rules: :mod:`~modules.disambiguation.ambiguity_rules`,
:mod:`~modules.disambiguation.ambiguity_values`, :mod:`~modules.disambiguation.ambiguity_glossary`):

- a term two glossary units define differently;
- a measure that is both a column to aggregate and a precomputed aggregate (``x`` / ``avg_x``);
- a value that occurs in several columns, or a value and a column;
- an attribute that lives in two joinable tables.

Terms are matched by :mod:`~modules.disambiguation.ambiguity_terms` (case and accents folded,
English and Italian stems, ``_`` and camelCase split). Findings for the same term merge into one
:class:`~modules.disambiguation.ambiguity_records.Ambiguity`: its readings (each with the event
it records) and a last "leave open" option. The report orders them most decision-relevant first
(:data:`~modules.disambiguation.ambiguity_records.KIND_ORDER`, then question order); F1 shows
one at a time, the first one not yet decided. Unanswerable terms:
:mod:`~modules.disambiguation.unanswerable`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel import events as ev
from kernel.schema_view import SchemaView
from modules.disambiguation.ambiguity_glossary import glossary_findings, glossary_matches
from modules.disambiguation.ambiguity_records import (
    KIND_ORDER,
    OPEN_OPTION,
    Ambiguity,
    AmbiguityKind,
    AmbiguityOption,
    AmbiguityReport,
    FoundValue,
    GlossaryEntry,
    ValueLookup,
)
from modules.disambiguation.ambiguity_rules import (
    AGGREGATE_CUES,
    AGGREGATE_NAMES,
    Finding,
    Joins,
    Reading,
    aggregate_functions,
    index_aggregates,
    joinable_findings,
    precomputed_findings,
)
from modules.disambiguation.ambiguity_terms import (
    Lexicon,
    Stemmer,
    default_stem,
    match_terms,
    tokenize,
)
from modules.disambiguation.ambiguity_values import value_findings, value_hits
from modules.disambiguation.periods import period_spans
from modules.disambiguation.unanswerable import unanswerable_terms

__all__ = ["LEAVE_OPEN_LABEL", "detect_ambiguities"]

_AGGREGATE_WORDS = frozenset(AGGREGATE_CUES) | frozenset(AGGREGATE_NAMES)
LEAVE_OPEN_LABEL = "leave it open: answer without choosing (recorded as an open ambiguity)"

_PROMPTS: dict[AmbiguityKind, str] = {
    "glossary_conflict": "The glossary defines {term} in more than one way: which one does "
    "the question mean?",
    "precomputed_aggregate": "{term} can be computed from a column or read from a precomputed "
    "aggregate: which one does the question mean?",
    "value_columns": "{term} occurs in more than one place: which one does the question mean?",
    "joinable_attribute": "{term} is held by more than one of the tables that join here: which "
    "one does the question mean?",
}


def detect_ambiguities(
    question: str,
    view: SchemaView,
    *,
    glossary: Sequence[GlossaryEntry] = (),
    values: ValueLookup | None = None,
    stem: Stemmer | None = None,
) -> AmbiguityReport:
    """The ambiguous terms of ``question`` over ``view`` (most decision-relevant first) and
    its unanswerable terms."""
    lexicon = Lexicon(view, stem or default_stem)
    tokens = tokenize(question)
    terms = match_terms(tokens, lexicon, question, not_alone=_AGGREGATE_WORDS)
    mentioned = frozenset(t for term in terms for t in term.tables)
    glossed = glossary_matches(tokens, glossary, lexicon) if glossary else []
    hits = value_hits(question, tokens, terms, view, values) if values is not None else []

    findings: list[Finding] = []
    findings += glossary_findings(question, glossed, view)
    findings += precomputed_findings(
        terms, view, index_aggregates(view, lexicon), lexicon, aggregate_functions(tokens)
    )
    findings += value_findings(hits, terms)
    findings += joinable_findings(terms, view, Joins(view), mentioned)

    covered = {i for term in terms for i in term.tokens}
    covered |= {i for match in glossed for i in match.tokens}
    covered |= {
        i for i, t in enumerate(tokens) for h in hits if h.start <= t.start and t.end <= h.end
    }
    periods = period_spans(question)  # "l'anno scorso", "last quarter": a time, not a concept
    covered |= {i for i, t in enumerate(tokens) for a, b in periods if a <= t.start and t.end <= b}
    return AmbiguityReport(
        question=question,
        ambiguities=tuple(_merge(findings)),
        unanswerable=tuple(unanswerable_terms(tokens, covered, lexicon)),
        values=tuple(
            FoundValue(text=h.text, span=(h.start, h.end), columns=h.columns) for h in hits
        ),
    )


def _merge(findings: Sequence[Finding]) -> list[Ambiguity]:
    """One ambiguity per term (folded): its kinds in :data:`KIND_ORDER`, their readings once
    each, the most decision-relevant first."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.folded, []).append(finding)
    merged = []
    for group in groups.values():
        group.sort(key=lambda f: (KIND_ORDER.index(f.kind), f.start))
        readings: list[Reading] = []
        for finding in group:
            for reading in finding.readings:
                if not any(_same(r, reading) for r in readings):
                    readings.append(reading)
        kinds = tuple(dict.fromkeys(f.kind for f in group))
        merged.append(_ambiguity(group[0], kinds, readings))
    merged.sort(key=lambda a: (KIND_ORDER.index(a.kind), a.span[0], a.term.casefold()))
    return merged


def _same(a: Reading, b: Reading) -> bool:
    """Two findings' readings that record the same thing (a definition is its meaning)."""
    if (a.kind, a.target, a.value) != (b.kind, b.target, b.value):
        return False
    return a.kind != "definition" or a.meaning == b.meaning


def _ambiguity(
    first: Finding, kinds: tuple[AmbiguityKind, ...], readings: Sequence[Reading]
) -> Ambiguity:
    term = " ".join(first.term.split())
    targets = tuple(dict.fromkeys(r.target for r in readings if r.target is not None))
    prompt = _PROMPTS[kinds[0]].format(term=repr(term))
    options = [
        AmbiguityOption(
            id=f"r{i}",
            label=reading.label,
            reading=reading.kind,
            target=reading.target,
            event=_event(term, reading, targets),
        )
        for i, reading in enumerate(readings, start=1)
    ]
    options.append(
        AmbiguityOption(
            id=OPEN_OPTION,
            label=LEAVE_OPEN_LABEL,
            reading="open",
            target=None,
            event=ev.ProposedEvent(
                type="ambiguity_open",
                subject=term,
                payload={
                    "question": prompt,
                    "options": [r.label for r in readings],
                    "unanswerable": False,
                },
            ),
        )
    )
    return Ambiguity(
        term=term,
        span=(first.start, first.end),
        kinds=kinds,
        target_group=targets,
        prompt=prompt,
        options=tuple(options),
    )


def _event(term: str, reading: Reading, targets: tuple[str, ...]) -> ev.ProposedEvent:
    if reading.kind == "value":
        assert reading.target is not None and reading.value is not None
        return ev.ProposedEvent(
            type="value_grounded",
            subject=term,
            payload={"value": reading.value, "column": reading.target, "meaning": reading.meaning},
        )
    payload: dict[str, object] = {
        "meaning": reading.meaning,
        "alternatives": [t for t in targets if t != reading.target],
    }
    if reading.target is not None:
        payload["target"] = reading.target
    return ev.ProposedEvent(type="concept_clarified", subject=term, payload=payload)
