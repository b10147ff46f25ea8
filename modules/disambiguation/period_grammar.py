"""The period grammar's atoms (the rules :mod:`modules.disambiguation.periods` combines).

Each rule of :func:`grammar` is a regular expression over the folded question and a builder that
turns one match into an :class:`Atom` (a calendar interval, possibly still missing its year),
:data:`UNRESOLVED` (recognised, but not one interval: "03/04/2024", "FY2023", "2023/24"), or
None (not a period here: a quantity such as "almeno 2000", "may" the verb). The grammar itself is
documented in :mod:`modules.disambiguation.periods`; the order of the table breaks ties between
readings of the same length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache
from typing import Literal

__all__ = ["FINENESS", "UNRESOLVED", "Atom", "Grain", "Interval", "alternation", "grammar"]

Grain = Literal["day", "week", "month", "quarter", "half", "year"]
FINENESS: tuple[Grain, ...] = ("day", "week", "month", "quarter", "half", "year")
Interval = tuple[date, date]

# ----------------------------------------------------------------------------- vocabulary


def alternation(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first."""
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


def _numbered(words: str) -> dict[str, int]:
    return {w: i + 1 for i, w in enumerate(words.split())}


_MONTHS = {
    **_numbered("gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre "
                "novembre dicembre"),
    **_numbered("january february march april may june july august september october november "
                "december"),
}  # fmt: skip
_ABBR = {
    **_numbered("gen feb mar apr mag giu lug ago set ott nov dic"),
    **_numbered("jan feb mar apr may jun jul aug sep oct nov dec"),
    "sept": 9,
}
_NUMBERS = {
    **_numbered("uno due tre quattro cinque sei sette otto nove dieci undici dodici"),
    **_numbered("one two three four five six seven eight nine ten eleven twelve"),
    "un": 1, "una": 1, "quindici": 15, "fifteen": 15, "diciotto": 18, "eighteen": 18,
    "venti": 20, "twenty": 20, "ventiquattro": 24, "trenta": 30, "thirty": 30,
    "sessanta": 60, "sixty": 60, "novanta": 90, "ninety": 90,
}  # fmt: skip
_ORDINALS = {
    "primo": 1, "first": 1, "secondo": 2, "second": 2, "terzo": 3, "third": 3, "quarto": 4,
    "fourth": 4, "i": 1, "ii": 2, "iii": 3, "iv": 4,
}  # fmt: skip

M = rf"(?<!\w)(?P<m>{alternation(_MONTHS)})(?!\w)"
MA = rf"(?<!\w)(?P<m>(?:{alternation(_MONTHS)})(?!\w)|(?:{alternation(_ABBR)})(?!\w)\.?)"
_YEAR = r"(?:19|20)\d\d(?!\d)"
YEAR = r"(?<![\w.,/:-])(?:19|20)(?:\d[1-9]|\d0(?!'?s(?!\w)))(?![.,/:-]?\d)"  # 2020s: a decade
_REL_YEAR = (
    r"anno\s+(?:scorso|passato|precedente|corrente|prossimo|in\s+corso)|(?:scorso|prossimo)\s+"
    r"anno|quest'\s*anno|questo\s+anno|(?:last|previous|prior|this|current|next)\s+year"
)
YREF = rf"(?:(?:anno\s+|year\s+)?{_YEAR}|{_REL_YEAR})"
YSEP = r"(?:\s*[,/-]\s*|\s+(?:del|dello|of|in|di|for)\s+(?:the\s+)?|\s+dell'|\s+)"
OPT_Y = rf"(?:{YSEP}(?P<y>{YREF}))?"
REQ_Y = rf"{YSEP}(?P<y>{YREF})"
_ORD = r"(?:°|o(?!\w)|st(?!\w)|nd(?!\w)|rd(?!\w)|th(?!\w))?"


def _d(name: str) -> str:
    return rf"(?P<{name}>3[01]|[12]\d|0?[1-9])(?!\d){_ORD}"


NUM = rf"(?P<n>\d{{1,3}}|{alternation(_NUMBERS)})(?!\w)"
MONTH_OF = r"(?P<of>(?<!\w)(?:il\s+)?mese\s+di\s+|(?<!\w)(?:the\s+)?month\s+of\s+)?"
_ART = r"(?:(?:il|lo|la|the)\s+)?"

_QUANTITY_BEFORE = re.compile(
    r"(?:(?<!\w)(?:top|primi|prime|first|almeno|least|most|than|piu\s+di|meno\s+di|oltre|over|"
    r"under|sotto|sopra|above|below|circa|about|around|quasi|almost|n|nr|no|numero|number|"
    r"codice|code|cod|id|matricola|(?:superiore|inferiore|pari|uguale)\s+a|(?:maggiore|minore)"
    r"\s+di|equal\s+to|up\s+to|exceeding|exceeds?)\.?|[#€$<>=~])\s*$"
)
_QUANTITY_AFTER = re.compile(
    r"\s*(?:[%€$]|(?:euro|eur|usd|percent|per\s+cento|k|mila|pazienti|paziente|patients?|"
    r"persone|people|righe|rows?|records?|volte|times|casi|cases|unita|units?|pezzi|items?|ml|"
    r"mg|kg|km|ore|hours?|minuti|minutes?)(?!\w))"
)
_MAY_CUE = re.compile(
    r"(?<!\w)(?:in|of|during|since|from|until|to|through|between|and|for|by|before|after|"
    r"early|late|mid)\s+(?:the\s+)?$"
)
# ----------------------------------------------------------------------------- calendar


def _add_months(day: date, months: int) -> date:
    year, month = divmod(day.year * 12 + day.month - 1 + months, 12)
    for d in (day.day, 30, 29, 28):
        try:
            return date(year, month + 1, d)
        except ValueError:
            continue
    raise ValueError(day)  # pragma: no cover - day 28 exists in every month


def _months(year: int, first: int, count: int) -> Interval:
    start = date(year, first, 1)
    return start, _add_months(start, count)


def _week(year: int, week: int) -> Interval:
    start = date.fromisocalendar(year, week, 1)
    return start, start + timedelta(days=7)


def _days(year: int, month: int, first: int, last: int) -> Interval:
    return date(year, month, first), date(year, month, last) + timedelta(days=1)


_UNIT_MONTHS = {"month": 1, "quarter": 3, "half": 6, "year": 12}
_UNIT_PREFIXES: tuple[tuple[str, Grain], ...] = (
    ("giorn", "day"), ("day", "day"), ("settiman", "week"), ("week", "week"), ("mes", "month"),
    ("month", "month"), ("trimestr", "quarter"), ("quarter", "quarter"), ("semest", "half"),
    ("half", "half"), ("ann", "year"), ("year", "year"),
)  # fmt: skip


def _unit(word: str) -> Grain:
    return next(unit for prefix, unit in _UNIT_PREFIXES if word.startswith(prefix))


def _calendar_unit(unit: Grain, today: date, offset: int) -> Interval:
    """The calendar ``unit`` containing today, moved by ``offset`` units."""
    if unit in ("day", "week"):
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return monday, monday + timedelta(days=7)
    size = _UNIT_MONTHS[unit]
    start = _add_months(date(today.year, (today.month - 1) // size * size + 1, 1), size * offset)
    return start, _add_months(start, size)


def _rolling(unit: Grain, count: int, today: date) -> Interval:
    after = today + timedelta(days=1)
    if unit in ("day", "week"):
        return after - timedelta(days=count * (7 if unit == "week" else 1)), after
    return _add_months(today, -count * _UNIT_MONTHS[unit]) + timedelta(days=1), after


def _year_ref(text: str, today: date) -> tuple[int, bool]:
    """A year reference: the year, and whether it was relative to today."""
    found = re.search(r"(?:19|20)\d\d", text)
    if found:
        return int(found.group()), False
    if re.search(r"scors|passat|precedente|last|previous|prior", text):
        return today.year - 1, True
    return (today.year + 1 if re.search(r"prossim|next", text) else today.year), True


# ----------------------------------------------------------------------------- atoms


@dataclass(frozen=True)
class Atom:
    grain: Grain
    at: Callable[[int], Interval]  # the interval in a given year (ValueError: no such date)
    year: int | None  # the year the text gives; None when yearless or fixed
    relative: bool
    fixed: bool = False  # does not depend on a year (windows relative to today)

    @property
    def yearless(self) -> bool:
        return self.year is None and not self.fixed

    def interval(self, today: date, year: int | None = None) -> Interval | None:
        """In its own year, else ``year``, else the latest one begun by today."""
        given = 0 if self.fixed else self.year if self.year is not None else year
        if given is not None:
            try:
                return self.at(given)
            except ValueError:
                return None
        for back in range(5):  # 29 February may be four years back
            try:
                found = self.at(today.year - back)
            except ValueError:
                continue
            if found[0] <= today:
                return found
        return None

    def anchor(self, today: date) -> int | None:
        """The year a yearless neighbour in a range takes from this atom."""
        found = self.interval(today)
        return None if found is None else found[0].year


UNRESOLVED: Literal["unresolved"] = "unresolved"
Built = Atom | Literal["unresolved"] | None
Builder = Callable[["re.Match[str]", str, date], Built]


def _given(m: re.Match[str], name: str) -> str | None:
    return m.groupdict().get(name) or None


def _atom(grain: Grain, at: Callable[[int], Interval], m: re.Match[str], today: date) -> Atom:
    ref = _given(m, "y")
    year, relative = _year_ref(ref, today) if ref else (None, False)
    return Atom(grain, at, year, relative)


def _fixed(grain: Grain, interval: Interval) -> Atom:
    return Atom(grain, lambda _year: interval, None, True, fixed=True)


def _month_of(m: re.Match[str], text: str) -> int | None:
    """The month named, or None when it is not one here: an abbreviation without a year, or
    "may" with neither a year nor a preposition before it (the verb)."""
    word = m["m"].rstrip(".")
    if word not in _MONTHS:
        return _ABBR[word] if _given(m, "y") else None
    if word == "may" and not _given(m, "y") and not _given(m, "of"):
        return 5 if _MAY_CUE.search(text[: m.start()]) else None
    return _MONTHS[word]


def _b_year(m: re.Match[str], text: str, today: date) -> Built:
    if not _given(m, "pre") and (
        _QUANTITY_BEFORE.search(text[: m.start()]) or _QUANTITY_AFTER.match(text, m.end())
    ):
        return None
    return Atom("year", lambda y: _months(y, 1, 12), int(m["y"]), False)


def _b_year_range(m: re.Match[str], text: str, today: date) -> Built:
    first, last = int(m["y1"]), int(m["y2"])
    if last < first:
        return UNRESOLVED
    return Atom("year", lambda _y: (date(first, 1, 1), date(last + 1, 1, 1)), first, False)


def _b_month(m: re.Match[str], text: str, today: date) -> Built:
    month = _month_of(m, text)
    return None if month is None else _atom("month", lambda y: _months(y, month, 1), m, today)


def _b_date(m: re.Match[str], text: str, today: date) -> Built:
    month, day = _month_of(m, text), int(m["d"])
    return None if month is None else _atom("day", lambda y: _days(y, month, day, day), m, today)


def _b_day_range(m: re.Match[str], text: str, today: date) -> Built:
    month, first, last = _month_of(m, text), int(m["d1"]), int(m["d2"])
    if month is None:
        return None
    if last < first:
        return UNRESOLVED
    return _atom("day", lambda y: _days(y, month, first, last), m, today)


def _b_iso_date(m: re.Match[str], text: str, today: date) -> Built:
    month, day = int(m["mo"]), int(m["d"])
    return Atom("day", lambda y: _days(y, month, day, day), int(m["y"]), False)


_NUMERIC_DATE = re.compile(
    r"(?<![\w/.-])(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?P<y>(?:19|20)\d\d)(?![\d/.-]?\d)"
)


def _numeric_order(text: str) -> str | None:
    """The question's own order of numeric dates, when one of them shows it and none
    contradicts it: ``"dm"`` (31/03/2024) or ``"md"`` (03/31/2024)."""
    orders = set()
    for m in _NUMERIC_DATE.finditer(text):
        a, b = int(m["a"]), int(m["b"])
        if a > 12 >= b:
            orders.add("dm")
        elif b > 12 >= a:
            orders.add("md")
    return orders.pop() if len(orders) == 1 else None


def _b_numeric_date(m: re.Match[str], text: str, today: date) -> Built:
    a, b = int(m["a"]), int(m["b"])
    order = "dm" if a == b else _numeric_order(text)
    if order is None:
        return UNRESOLVED  # 03/04/2024: 3 April or March 4, never guessed
    day, month = (a, b) if order == "dm" else (b, a)
    return Atom("day", lambda y: _days(y, month, day, day), int(m["y"]), False)


def _b_month_number(m: re.Match[str], text: str, today: date) -> Built:
    year, month = int(m["y"]), int(m["mo"])
    if m.start("y") < m.start("mo") and month == (year + 1) % 100:
        return UNRESOLVED  # 2011-12: December 2011, or the split year 2011/12
    return Atom("month", lambda y: _months(y, month, 1), year, False)


def _b_split_year(m: re.Match[str], text: str, today: date) -> Built:
    year, tail, slash = int(m["y"]), m["tail"], "/" in m["sep"]
    if not slash and (len(tail) == 4 or int(tail) != (year + 1) % 100):
        return None  # 2023-2024 is a range, 2023-05 a month
    return UNRESOLVED


def _ordinal(raw: str) -> int:
    return int(raw[0]) if raw[0].isdigit() else _ORDINALS[raw]


def _b_quarter(m: re.Match[str], text: str, today: date) -> Built:
    number = _ordinal(m["q"])
    return _atom("quarter", lambda y: _months(y, 3 * number - 2, 3), m, today)


def _b_half(m: re.Match[str], text: str, today: date) -> Built:
    number = _ordinal(m["h"])
    return _atom("half", lambda y: _months(y, 6 * number - 5, 6), m, today)


def _b_week(m: re.Match[str], text: str, today: date) -> Built:
    week = int(m["w"])
    return _atom("week", lambda y: _week(y, week), m, today)


def _b_edge_of_year(m: re.Match[str], text: str, today: date) -> Built:
    unit, last = _unit(m["u"]), m["o"].startswith(("ultim", "last", "final"))
    if unit == "week":
        return _atom("week", lambda y: _week(y, _weeks_in(y) if last else 1), m, today)
    size = _UNIT_MONTHS[unit]
    return _atom(unit, lambda y: _months(y, 13 - size if last else 1, size), m, today)


def _weeks_in(year: int) -> int:
    return date(year, 12, 28).isocalendar()[1]


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _b_n_of_year(m: re.Match[str], text: str, today: date) -> Built:
    unit = _unit(m["u"])
    months = _count(m["n"]) * _UNIT_MONTHS[unit]
    if not 0 < months <= 12:
        return UNRESOLVED
    first = 13 - months if m["w"].startswith(("ultim", "last")) else 1
    return _atom(unit, lambda y: _months(y, first, months), m, today)


def _b_calendar(m: re.Match[str], text: str, today: date) -> Built:
    word, unit = m["w"], _unit(m["u"])
    offset = (
        -1
        if re.match(r"ultim|scors|precedente|passat|last|previous|prior", word)
        else 1
        if re.match(r"prossim|successiv|next|coming", word)
        else 0
    )
    return _fixed(unit, _calendar_unit(unit, today, offset))


def _b_rolling(m: re.Match[str], text: str, today: date) -> Built:
    count = _count(m["n"]) if _given(m, "n") else 1
    if count < 1:
        return UNRESOLVED
    unit = _unit(m["u"])
    return _fixed(unit, _rolling(unit, count, today))


def _b_last_named_month(m: re.Match[str], text: str, today: date) -> Built:
    month = _MONTHS[m["m"] or m["m2"]]
    year = today.year if month < today.month else today.year - 1
    return _fixed("month", _months(year, month, 1))


def _b_named(m: re.Match[str], text: str, today: date) -> Built:
    word = m[0]
    for pattern, back in (("altro|before", 2), ("ieri|yesterday", 1), ("oggi|today", 0)):
        if re.search(pattern, word):
            return _fixed("day", (today - timedelta(days=back), today - timedelta(days=back - 1)))
    unit: Grain = (
        "year"
        if re.search(r"anno|year|ytd", word)
        else "quarter"
        if re.search(r"trimestre|quarter|qtd", word)
        else "month"
    )
    return _fixed("day", (_calendar_unit(unit, today, 0)[0], today + timedelta(days=1)))


def _b_unresolved(m: re.Match[str], text: str, today: date) -> Built:
    return UNRESOLVED


_SPLIT = r"(?:\s*[/-]\s*(?:(?:19|20)\d\d|\d\d))?(?!\d)"
_NO_DIGIT_BEFORE = r"(?<![\w/.-])"
# fmt: off  (one grammar rule a line or two: a table reads better than formatted tuples)
_RULES: tuple[tuple[str, Builder], ...] = (
    (r"(?<!\w)fy\s*'?(?:(?:19|20)\d\d|\d\d)(?!\d)", _b_unresolved),
    (r"(?<!\w)(?:(?:19|20)\d0'?s|anni\s+(?:'\d0|(?:19|20)\d0))(?!\w)", _b_unresolved),  # decades
    (
        r"(?<!\w)(?:(?:fiscal|financial|academic|school)\s+year|anno\s+(?:fiscale|accademico|"
        rf"scolastico)|esercizio(?:\s+finanziario)?)\s+(?:19|20)\d\d{_SPLIT}",
        _b_unresolved,
    ),
    (
        r"(?<![\w.,/:-])(?P<y>(?:19|20)\d\d)(?P<sep>\s*/\s*|-)(?P<tail>(?:19|20)\d\d|\d\d)"
        r"(?![.,/:-]?\d)",
        _b_split_year,
    ),
    (
        r"(?<![\w.,/:-])(?P<y1>(?:19|20)\d\d)\s*-\s*(?P<y2>(?:19|20)\d\d)(?![.,/:-]?\d)",
        _b_year_range,
    ),
    (
        rf"{_NO_DIGIT_BEFORE}(?P<y>(?:19|20)\d\d)[-/.](?P<mo>1[0-2]|0?[1-9])[-/.]"
        r"(?P<d>3[01]|[12]\d|0?[1-9])(?![\d/.-]?\d)",
        _b_iso_date,
    ),
    (_NUMERIC_DATE.pattern, _b_numeric_date),
    (
        rf"{_NO_DIGIT_BEFORE}(?P<y>(?:19|20)\d\d)[-/](?P<mo>1[0-2]|0[1-9])(?![\d/.-]?\d)",
        _b_month_number,
    ),
    (
        rf"{_NO_DIGIT_BEFORE}(?P<mo>1[0-2]|0?[1-9])[/-](?P<y>(?:19|20)\d\d)(?![\d/.-]?\d)",
        _b_month_number,
    ),
    (
        r"(?:(?<!\w)(?:tra|fra)\s+(?:il\s+)?|(?<!\w)dal\s+|(?<!\w)(?:from|between)\s+(?:the\s+)?)"
        rf"{_d('d1')}\s*(?:-|\s(?:al|e\s+il|e|to|and|until|through|till)\s+(?:the\s+)?)\s*"
        rf"{_d('d2')}\s*(?:di\s+|of\s+)?{MA}{OPT_Y}",
        _b_day_range,
    ),
    (rf"{_NO_DIGIT_BEFORE}{_d('d1')}\s*-\s*{_d('d2')}\s+(?:di\s+|of\s+)?{MA}{OPT_Y}", _b_day_range),
    (
        rf"(?:(?<!\w)(?:between|from)\s+)?{MA}\s+{_d('d1')}\s*(?:-|\s(?:and|to|through|until|till)"
        rf"\s+)\s*{_d('d2')}{OPT_Y}",
        _b_day_range,
    ),
    (rf"{_NO_DIGIT_BEFORE}{_d('d')}\s*(?:di\s+|of\s+)?{MA}{OPT_Y}", _b_date),
    (rf"{MA}\s+{_d('d')}(?:\s*,?\s*(?P<y>{_YEAR}))?", _b_date),
    (rf"{MONTH_OF}{MA}{REQ_Y}", _b_month),
    (
        rf"(?<!\w)(?:(?:lo\s+)?scors[oa]|last|previous|past)\s+{M}|(?<!\w)(?P<m2>"
        rf"{alternation(_MONTHS)})\s+scors[oa](?!\w)",
        _b_last_named_month,
    ),
    (rf"{MONTH_OF}{M}", _b_month),
    (rf"(?<!\w)q(?P<q>[1-4])(?!\w){OPT_Y}", _b_quarter),
    (r"(?<![\w-])(?P<y>(?:19|20)\d\d)\s*[-/]?\s*q(?P<q>[1-4])(?!\w)", _b_quarter),
    (
        rf"(?<!\w)(?P<q>[1-4]\s*(?:°|o|\^|st|nd|rd|th)?|{alternation(_ORDINALS)})\s*(?:trimestre|"
        rf"quarter|qtr)(?!\w){OPT_Y}",
        _b_quarter,
    ),
    (rf"(?<!\w)h(?P<h>[12])(?!\w){OPT_Y}", _b_half),
    (
        r"(?<!\w)(?P<h>[12]\s*(?:°|o|st|nd)?|primo|secondo|first|second|ii|i)\s*(?:semestre|"
        rf"half(?:[\s-]+year)?|semester)(?:\s+of)?(?!\w){OPT_Y}",
        _b_half,
    ),
    (
        r"(?<!\w)(?:settimana|week|wk|sett\.?)\s*(?:n\.?\s*|no\.?\s*|numero\s+|number\s+|#\s*)?"
        rf"(?P<w>5[0-3]|[1-4]\d|0?[1-9])(?!\d){OPT_Y}",
        _b_week,
    ),
    (r"(?<![\w-])(?P<y>(?:19|20)\d\d)-?w(?P<w>5[0-3]|[1-4]\d|0?[1-9])(?!\w)", _b_week),
    (rf"(?<!\w)w(?P<w>5[0-3]|[1-4]\d|0?[1-9]){REQ_Y}", _b_week),
    (
        r"(?<!\w)(?P<o>ultim[oa]|prim[oa]|last|first|final)\s+(?P<u>trimestre|quarter|semestre|"
        rf"half|mese|month|settimana|week){REQ_Y}",
        _b_edge_of_year,
    ),
    (
        rf"(?<!\w)(?P<w>prim[ie]|ultim[ie]|first|last)\s+{NUM}\s+(?P<u>mesi|trimestri|months|"
        rf"quarters){REQ_Y}",
        _b_n_of_year,
    ),
    (
        rf"(?<!\w)(?P<w>prim[ie]|first)\s+{NUM}\s+(?P<u>mesi|trimestri|months|quarters)(?!\w)",
        _b_n_of_year,
    ),
    (rf"(?P<pre>(?:(?<!\w)l'|(?<!\w)the\s+)?(?<!\w)(?:anno|year)\s+)?(?P<y>{YEAR})", _b_year),
    (
        r"(?<!\w)(?P<w>ultim[oa]|scors[oa]|precedente|passat[oa]|quest[oa]|quest'|corrente|"
        r"attuale|prossim[oa])\s*(?P<u>settimana|mese|trimestre|semestre|anno)(?!\w)",
        _b_calendar,
    ),
    (
        r"(?<!\w)(?P<u>settimana|mese|trimestre|semestre|anno)\s+(?P<w>scors[oa]|precedente|"
        r"passat[oa]|corrente|attuale|prossim[oa]|successiv[oa]|in\s+corso)(?!\w)",
        _b_calendar,
    ),
    (
        r"(?<!\w)(?P<w>last|previous|prior|this|current|next|coming)\s+(?P<u>week|month|quarter|"
        r"half|semester|year)(?!\w)",
        _b_calendar,
    ),
    (
        rf"(?<!\w)(?:ultim[ie]|scors[ie]|passat[ie]|last|past|previous|prior)\s+{NUM}\s+"
        r"(?P<u>giorn[io]|settiman[ae]|mes[ei]|trimestr[ei]|semestr[ei]|ann[io]|days?|weeks?|"
        r"months?|quarters?|years?)(?!\w)",
        _b_rolling,
    ),
    (r"(?<!\w)past\s+(?P<u>day|week|month|quarter|year)(?!\w)", _b_rolling),
    (
        r"(?<!\w)(?:(?:l')?altro\s*ieri|day\s+before\s+yesterday|oggi|today|ieri|yesterday|ytd|"
        r"mtd|qtd|(?:year|month|quarter)[\s-]+to[\s-]+date|(?:da|dall')\s*(?:l')?inizio\s+"
        r"(?:dell'\s*|del(?:l')?\s*|d'\s*)?(?:anno|mese|trimestre))(?!\w)",
        _b_named,
    ),
)
# fmt: on


@cache
def grammar() -> tuple[tuple[re.Pattern[str], Builder], ...]:
    """The compiled rules, in tie-breaking order (compiled on first use: importing the module
    costs nothing on the commands that never parse a period)."""
    return tuple((re.compile(pattern), build) for pattern, build in _RULES)
