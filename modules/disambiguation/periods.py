"""Periods in Italian and English, resolved against today's date (docs/disambiguation.md).

:func:`find_periods` returns every period expression of a question, each resolved to a half-open
interval of dates ``[start, end)`` (``last_day`` is the inclusive last day), its grain, the raw
text it matched and whether the resolution depended on today (``relative``). Deterministic, and it
never guesses: an expression it recognises but cannot resolve to one interval ("fino al 2023",
"03/04/2024", "31 febbraio 2024", "FY2023", "2023/24") is *unresolved*, never a wrong period; a
text it does not recognise yields nothing.

Grammar, on the folded text (case, accents, apostrophe and dash variants do not matter):

- **atoms**: a year ("nel 2023", "anno 2022", a bare "2023" unless a quantity cue says it is a
  number: "almeno 2000", "top 2000", "2000 euro"); a month ("marzo 2024", "March of last year",
  "2024-03", "03/2024", "di marzo"; "may" needs a year or a preposition); a date ("15 marzo
  2024", "March 15, 2024", "2024-03-15", "15/03/2024"; a numeric date whose day and month could
  be swapped is unresolved); a quarter ("Q3 2024", "3° trimestre 2024", "III trimestre", "third
  quarter of 2024", "ultimo trimestre del 2023"); a half ("H1 2024", "primo semestre", "first
  half of 2024"); an ISO week ("settimana 12 del 2024", "week 12 of 2024", "2024-W12"); a day
  range in a month ("tra il 1 e il 15 marzo", "from 1 to 15 March 2024", "March 1-15, 2024");
  "primi/ultimi N mesi del 2024", "first/last N months of 2024";
- **relative atoms**: "oggi"/"today", "ieri"/"yesterday"; this / last / next calendar unit
  ("questo mese", "mese scorso", "l'anno scorso", "last quarter", "trimestre in corso", "next
  month": "last X" is the previous *complete calendar* X); rolling windows ending today ("ultimi
  30 giorni", "last 6 months", "past 12 months": ``[today - N units + 1 day, today + 1 day)``);
  to-date windows ("ytd", "da inizio anno", "mtd", "qtd"); "lo scorso marzo", "last March";
- **combinations**: a range of two atoms ("da gennaio a marzo 2024", "dal 2020 al 2022",
  "2023-2024", "between March 1 and March 15, 2024"); since ("dal 2022", "since March 2024": up
  to today) and after ("dopo il 2023"); until / before / excluding ("fino al 2023", "prima del
  2023", "escluso il 2023") and fiscal or split years ("esercizio 2023", "fiscal year 2023",
  "2023/24", "2011-12") are unresolved: an open start or a calendar the parser does not know.

A month, quarter, half, week or day without a year is the latest one begun by today (on
2026-05-20 "marzo" is March 2026, "giugno" June 2025): :attr:`Resolved.yearless` tells the caller
to record that reading as an assumption. Several periods ("nel 2023 e nel 2024") are all returned;
overlapping readings are settled longest first. A leading preposition and article ("nel", "dell'",
"in the") belong to the matched text. Weeks are ISO weeks (Monday first); today is the clock's
date (UTC). :func:`fold_text` is the folded view with its map back to the raw text, shared with
the rule parser's dimension matching.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

import msgspec

from modules.disambiguation.period_grammar import (
    FINENESS,
    UNRESOLVED,
    Atom,
    Grain,
    Interval,
    alternation,
    grammar,
)

__all__ = [
    "Folded",
    "Grain",
    "Period",
    "PeriodParse",
    "Resolved",
    "find_periods",
    "fold_text",
    "parse_period",
    "period_spans",
]


class Period(msgspec.Struct, frozen=True, kw_only=True):
    """One resolved period: ``start`` inclusive, ``end`` exclusive, ``last_day`` inclusive (ISO
    dates); ``span`` is where ``text`` lies in the question."""

    start: str
    end: str
    last_day: str
    grain: Grain
    text: str
    relative: bool
    span: tuple[int, int]


@dataclass(frozen=True)
class Resolved:
    period: Period
    yearless: bool  # no year given: read as the latest one begun by today


@dataclass(frozen=True)
class PeriodParse:
    resolved: tuple[Resolved, ...]
    unresolved: tuple[tuple[str, tuple[int, int]], ...]  # (raw text, span), in text order

    @property
    def periods(self) -> tuple[Period, ...]:
        return tuple(r.period for r in self.resolved)


# ----------------------------------------------------------------------------- folded view

_CHAR_MAP = str.maketrans({**dict.fromkeys("’‘`´ʼ′", "'"), **dict.fromkeys("‐‑‒–—―−", "-")})


@dataclass(frozen=True)
class Folded:
    """``text`` folded (NFKD, casefold, accents dropped); ``origin[i]`` is the raw index of
    ``text[i]``."""

    text: str
    origin: tuple[int, ...]

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        return (self.origin[start], self.origin[end - 1] + 1)


def fold_text(raw: str) -> Folded:
    """Invisible format characters (soft hyphen, zero-width space and joiners) are dropped."""
    chars: list[str] = []
    origin: list[int] = []
    for index, ch in enumerate(raw):
        if unicodedata.category(ch) == "Cf":
            continue
        folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())
        for out in folded.translate(_CHAR_MAP):
            if not unicodedata.combining(out):
                chars.append(out)
                origin.append(index)
    return Folded("".join(chars), tuple(origin))


# ----------------------------------------------------------------------------- combinations

_ART = r"(?:(?:il|lo|la|the)\s+)?"
_PREPS = (
    "nel nello nella nei negli nelle del dello della dei degli delle al allo alla ai agli alle "
    "sul sullo sulla in a ad di per durante during for of over within at on"
)
_EXTEND = re.compile(
    rf"(?:(?<![\w'])(?:{alternation(_PREPS.split())})\s+(?:(?:il|lo|la|i|gli|le|the)\s+|l')?"
    r"|(?<![\w'])(?:il|lo|la|i|gli|le|the)\s+|(?<![\w'])(?:nell|dell|all|sull|l)')$"
)
_RANGE_START = re.compile(
    rf"(?:(?<!\w)(?:da|dal|dalla|dallo|from|between|tra|fra)\s+{_ART}|(?<!\w)(?:dall|tra\s+l|"
    r"fra\s+l)')$"
)
_RANGE_GAP = re.compile(
    rf"\s*-\s*|\s+(?P<w>a|al|alla|allo|ad|to|until|till|through|thru|and|e|fino\s+a|fino\s+al|"
    rf"fino\s+alla)\s+{_ART}|\s+(?P<w2>all|fino\s+all|e\s+l)'"
)
_SINCE = re.compile(
    rf"(?:(?<!\w)(?:dal|dalla|dallo|da|since|from|starting(?:\s+from|\s+in)?|a\s+partire\s+"
    rf"da(?:l|lla|llo)?|a\s+decorrere\s+da(?:l|lla)?)\s+{_ART}|(?<!\w)(?:dall|a\s+partire\s+"
    r"dall)')$"
)
_AFTER = re.compile(rf"(?:(?<!\w)(?:dopo|after|following)\s+{_ART}|(?<!\w)dopo\s+l')$")
_UNTIL = re.compile(
    rf"(?:(?<!\w)(?:fino\s+a(?:l|lla|llo)?|entro|until|till|up\s+to|by|before|prima\s+(?:del|"
    rf"della|dello|di)|through|escluso|esclusa|esclusi|eccetto|tranne|except|excluding|not\s+in|"
    rf"non\s+nel|outside)\s+{_ART}|(?<!\w)(?:fino\s+all|prima\s+dell|entro\s+l|escluso\s+l)')$"
)


# ----------------------------------------------------------------------------- candidates

_Kind = Literal["atom", "range", "since", "after", "unresolved"]
Found = tuple[Interval, Grain, bool, bool]  # interval, grain, relative, yearless


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    rank: int
    kind: _Kind
    first: Atom | None = None
    second: Atom | None = None

    def resolve(self, today: date) -> Found | None:
        a, b = self.first, self.second
        if a is None or self.kind == "unresolved":
            return None
        if self.kind == "range" and b is not None:
            return _resolve_range(a, b, today)
        found = a.interval(today)
        if found is None:
            return None
        yearless = a.yearless
        if self.kind == "atom":
            return found, a.grain, a.relative or yearless, yearless
        after = today + timedelta(days=1)
        start = found[0] if self.kind == "since" else found[1]
        return ((start, after), a.grain, True, yearless) if start < after else None


def _resolve_range(a: Atom, b: Atom, today: date) -> Found | None:
    if a.yearless and not b.yearless:
        second, year = b.interval(today), b.anchor(today)
        first = a.interval(today, year)
        if first and second and year is not None and first[0] > second[0]:
            first = a.interval(today, year - 1)
    else:
        first = a.interval(today)
        year = a.anchor(today)
        second = b.interval(today, year)
        if first and second and b.yearless and year is not None and second[0] < first[0]:
            second = b.interval(today, year + 1)
    if first is None or second is None or second[1] <= first[0]:
        return None
    grain = min(a.grain, b.grain, key=FINENESS.index)
    both_yearless = a.yearless and b.yearless
    return (first[0], second[1]), grain, a.relative or b.relative or both_yearless, both_yearless


def _candidates(text: str, today: date) -> list[_Candidate]:
    found: list[_Candidate] = []
    for rank, (pattern, build) in enumerate(grammar()):
        for m in pattern.finditer(text):
            built = build(m, text, today)
            if built == UNRESOLVED:
                found.append(_Candidate(m.start(), m.end(), rank, "unresolved"))
            elif isinstance(built, Atom):
                found.append(_Candidate(m.start(), m.end(), rank, "atom", built))
    return found + _combinations(text, found)


_OPENERLESS = (None, "to", "through", "thru")  # a dash or these join two atoms without "from"


def _combinations(text: str, found: list[_Candidate]) -> list[_Candidate]:
    """Ranges of two atoms, since / after an atom, and until / before / excluding anything."""
    rank = len(grammar())
    out: list[_Candidate] = []
    atoms = [c for c in found if c.kind == "atom"]
    for a in atoms:
        for b in atoms:
            if not 0 <= b.start - a.end <= 24:
                continue
            gap = _RANGE_GAP.fullmatch(text, a.end, b.start)
            if gap is None:
                continue
            opener = _RANGE_START.search(text, 0, a.start)
            if (
                opener is None
                and gap["w2"] is None
                and gap["w"] not in (None, "to", "through", "thru")
            ):
                continue
            start = opener.start() if opener else a.start
            out.append(_Candidate(start, b.end, rank, "range", a.first, b.first))
    for c in found:
        before = text[: c.start]
        for pattern, kind in ((_SINCE, "since"), (_AFTER, "after"), (_UNTIL, "unresolved")):
            hit = pattern.search(before)
            if hit and (kind == "unresolved" or c.kind == "atom"):
                out.append(_Candidate(hit.start(), c.end, rank + 1, kind, c.first))  # type: ignore[arg-type]
    return out


def _select(candidates: list[_Candidate]) -> list[_Candidate]:
    """Longest first, then leftmost, then grammar order; overlapping readings are dropped."""
    chosen: list[_Candidate] = []
    for cand in sorted(candidates, key=lambda c: (c.start - c.end, c.start, c.rank)):
        if all(cand.end <= c.start or cand.start >= c.end for c in chosen):
            chosen.append(cand)
    return sorted(chosen, key=lambda c: c.start)


# ----------------------------------------------------------------------------- public API


def find_periods(question: str, today: date) -> PeriodParse:
    """Every period expression of ``question``, in text order, resolved against ``today``."""
    view = fold_text(question)
    text = view.text
    resolved: list[Resolved] = []
    unresolved: list[tuple[str, tuple[int, int]]] = []
    floor = 0
    for cand in _select(_candidates(text, today)):
        lead = _EXTEND.search(text, floor, cand.start)
        span = view.raw_span(lead.start() if lead else cand.start, cand.end)
        floor = cand.end
        raw = question[span[0] : span[1]]
        outcome = cand.resolve(today)
        if outcome is None:
            unresolved.append((raw, span))
            continue
        (first, after), grain, relative, yearless = outcome
        period = Period(
            start=first.isoformat(),
            end=after.isoformat(),
            last_day=(after - timedelta(days=1)).isoformat(),
            grain=grain,
            text=raw,
            relative=relative,
            span=span,
        )
        resolved.append(Resolved(period=period, yearless=yearless))
    return PeriodParse(resolved=tuple(resolved), unresolved=tuple(unresolved))


#: any date: where a period expression lies does not depend on the day it is resolved on (the
#: grammar's builders use the date only to compute intervals), so spans need no clock
_SPAN_REFERENCE = date(2000, 1, 1)


def period_spans(question: str) -> tuple[tuple[int, int], ...]:
    """Where ``question``'s period expressions lie (resolved or not), in text order: their words
    name a time, never a concept of the data (F1's unanswerable terms skip them)."""
    found = find_periods(question, _SPAN_REFERENCE)
    return tuple(
        sorted([r.period.span for r in found.resolved] + [span for _, span in found.unresolved])
    )


def parse_period(text: str, today: date) -> Period | None:
    """The one period ``text`` names, or None (nothing, several, or an unresolved one)."""
    found = find_periods(text, today)
    if found.unresolved or len(found.resolved) != 1:
        return None
    return found.resolved[0].period
