"""The IntentParser (ADR 0010, ARCHITECTURE §4.1): which dimensions, measures and period a question
asks for, and how Disambiguation should clarify it.

Two implementations share this contract: :class:`~modules.disambiguation.intent_rules.
RuleIntentParser` (offline, the default) and :class:`~modules.disambiguation.intent_llm.
LLMIntentParser` (a model through ``kernel.llm``, falling back to the rules on any failure). The
SecurityGate is not part of it: it runs first, on the raw question, and a parser only ever reads
the gate's masked question (a parsing error can produce a clarification, never a leak).

What a parser extracts (mentions and periods) is the only part that differs between them; the
clarify mode is policy, computed here from the DomainProfile by :func:`assemble_intent`, the same
for both:

- ``missing`` — the profile's *required* dimensions the question does not mention (a temporal
  dimension is mentioned by one of its synonyms or by any period expression);
- a missing dimension with ``clarify: ask_first``, or with ``clarify: assume`` but no default, or
  a period expression that cannot be resolved ("fino al 2023") → ``ask_first``;
- else a missing ``clarify: assume`` dimension records its default as an assumption (a temporal
  default such as "last 12 months" with its resolved dates), and so does a period read without a
  year ("di marzo") → ``answer_with_assumptions``;
- else ``none``; ``out_of_scope_entity`` when the caller says the SecurityGate refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date
from typing import Any, Literal, Protocol

import msgspec

from kernel.clock import Clock
from kernel.domain_profile import DimensionKind, DomainProfile
from modules.disambiguation.periods import Period, PeriodParse, parse_period

__all__ = [
    "CLARIFY_MODES",
    "ClarifyOutcome",
    "DimensionMention",
    "Intent",
    "IntentParser",
    "ParserName",
    "assemble_intent",
    "today_of",
]

ParserName = Literal["rules", "llm"]
ClarifyOutcome = Literal["none", "answer_with_assumptions", "ask_first", "out_of_scope_entity"]
CLARIFY_MODES: tuple[ClarifyOutcome, ...] = (
    "none",
    "answer_with_assumptions",
    "ask_first",
    "out_of_scope_entity",
)


class DimensionMention(msgspec.Struct, frozen=True, kw_only=True):
    """A dimension (or measure) of the profile named in the question: ``matched`` is the text as
    written, ``span`` where it lies; ``value`` is what the question sets it to, when it says (a
    quoted value after the synonym, ``ward = cardiology``; a period's ``start/end``)."""

    name: str
    kind: DimensionKind
    matched: str
    span: tuple[int, int]
    value: str | None = None


class Intent(msgspec.Struct, frozen=True, kw_only=True):
    """The parse of one question. The first four fields are the CLI contract (ARCHITECTURE §6);
    ``period`` is the one period when the question names exactly one, ``periods`` all of them."""

    parser: ParserName
    dimensions: tuple[DimensionMention, ...]
    period: Period | None
    clarify: ClarifyOutcome
    measures: tuple[DimensionMention, ...] = ()
    periods: tuple[Period, ...] = ()
    assumptions: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    #: why the LLM parser fell back to the rules (``no_profile``, ``provider:timeout``, …)
    fallback_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON builtins (spans as lists), fields in declaration order."""
        data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self))
        return data


class IntentParser(Protocol):
    """``parse`` is a function of (question, profile, today): a parser keeps no state between
    questions. ``out_of_scope_entity``: the SecurityGate refused the question (the parser then
    reads the masked text and reports that clarify mode; the LLM parser calls no model)."""

    def parse(
        self,
        question: str,
        profile: DomainProfile,
        clock: Clock,
        *,
        out_of_scope_entity: bool = False,
    ) -> Intent: ...


def today_of(clock: Clock) -> date:
    """The clock's date in UTC (read once per parse)."""
    return clock.now().astimezone(UTC).date()


def _inside(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    return any(s <= span[0] and span[1] <= e for s, e in spans)


def _period_target(profile: DomainProfile, named: Iterable[str]) -> str | None:
    """The temporal dimension a period belongs to: the one the question names, else the
    profile's only one; None when that is not one dimension."""
    temporal = [d.name for d in profile.dimensions if d.kind == "temporal"]
    chosen = sorted({n for n in named if n in temporal})
    if len(chosen) == 1:
        return chosen[0]
    return temporal[0] if not chosen and len(temporal) == 1 else None


def assemble_intent(
    *,
    parser: ParserName,
    profile: DomainProfile,
    today: date,
    mentions: Iterable[DimensionMention],
    periods: PeriodParse,
    out_of_scope_entity: bool = False,
    fallback_reason: str | None = None,
) -> Intent:
    """The Intent from what a parser found: periods attached to their temporal dimension,
    ``missing``, assumptions and the clarify mode (module docstring)."""
    covered = [p.span for p in periods.periods] + [span for _, span in periods.unresolved]
    kept = [m for m in mentions if not _inside(m.span, covered)]
    target = _period_target(profile, (m.name for m in kept))
    if target is not None:
        kept += [
            DimensionMention(
                name=target,
                kind="temporal",
                matched=p.text,
                span=p.span,
                value=f"{p.start}/{p.end}",
            )
            for p in periods.periods
        ]
        kept += [
            DimensionMention(name=target, kind="temporal", matched=text, span=span)
            for text, span in periods.unresolved
        ]
    unique = {(m.name, m.span): m for m in kept}
    ordered = sorted(unique.values(), key=lambda m: (m.span, m.name))
    dimensions = tuple(m for m in ordered if m.kind != "measure")
    measures = tuple(m for m in ordered if m.kind == "measure")
    mentioned = {m.name for m in ordered}
    missing = tuple(d.name for d in profile.dimensions if d.required and d.name not in mentioned)

    assumptions = [
        f'"{r.period.text}": no year given, read as {r.period.start} to {r.period.last_day}'
        for r in periods.resolved
        if r.yearless
    ]
    ask = bool(periods.unresolved)
    for dim in profile.dimensions:
        if dim.name not in missing:
            continue
        if dim.clarify == "ask_first" or (dim.clarify == "assume" and dim.default is None):
            ask = True
        elif dim.clarify == "assume" and dim.default is not None:
            assumptions.append(_default_assumption(dim.name, dim.default, dim.kind, today))

    resolved = periods.periods
    clarify: ClarifyOutcome = (
        "out_of_scope_entity"
        if out_of_scope_entity
        else "ask_first"
        if ask
        else "answer_with_assumptions"
        if assumptions
        else "none"
    )
    return Intent(
        parser=parser,
        dimensions=dimensions,
        period=resolved[0] if len(resolved) == 1 and not periods.unresolved else None,
        clarify=clarify,
        measures=measures,
        periods=resolved,
        assumptions=tuple(assumptions),
        missing=missing,
        unresolved=tuple(text for text, _ in periods.unresolved),
        fallback_reason=fallback_reason,
    )


def _default_assumption(name: str, default: str, kind: DimensionKind, today: date) -> str:
    text = f'{name}: not in the question, assumed "{default}"'
    period = parse_period(default, today) if kind == "temporal" else None
    return text if period is None else f"{text} ({period.start} to {period.last_day})"
