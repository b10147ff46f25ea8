"""Periods in Italian and English (modules/disambiguation/periods.py).

The golden table pins ~100 phrasings at one date; these tests pin the rules across dates with an
independent oracle (``calendar.monthrange`` and ``date`` arithmetic, not the parser's helpers), the
never-guess cases, and the invariants every parse keeps (Hypothesis).
"""

from __future__ import annotations

import calendar
import itertools
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.disambiguation.periods import (
    Period,
    find_periods,
    fold_text,
    parse_period,
    period_spans,
)

TODAY = date(2026, 5, 20)  # a Wednesday, ISO week 21
MESI = (
    "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre"
)
MONTHS_IT = MESI.split()
MONTHS_EN = [calendar.month_name[i] for i in range(1, 13)]

days = st.dates(min_value=date(1995, 1, 1), max_value=date(2095, 12, 31))
years = st.integers(min_value=1995, max_value=2095)
month_numbers = st.integers(min_value=1, max_value=12)


def one(text: str, today: date = TODAY) -> Period:
    found = parse_period(text, today)
    assert found is not None, text
    return found


def bounds(p: Period) -> tuple[date, date]:
    return date.fromisoformat(p.start), date.fromisoformat(p.end)


def month_bounds(year: int, month: int) -> tuple[date, date]:
    last = calendar.monthrange(year, month)[1]
    return date(year, month, 1), date(year, month, last) + timedelta(days=1)


def previous_month(day: date) -> tuple[int, int]:
    return (day.year, day.month - 1) if day.month > 1 else (day.year - 1, 12)


# ----------------------------------------------------------------------------- absolute atoms


@given(years, month_numbers, st.sampled_from(["it", "en"]))
def test_a_named_month_with_a_year_is_that_calendar_month(year: int, month: int, lang: str) -> None:
    name = MONTHS_IT[month - 1] if lang == "it" else MONTHS_EN[month - 1]
    period = one(f"ricoveri {name} {year}" if lang == "it" else f"admissions in {name} {year}")
    assert bounds(period) == month_bounds(year, month)
    assert (period.grain, period.relative) == ("month", False)


@given(years, st.integers(min_value=1, max_value=4))
def test_every_spelling_of_a_quarter_is_the_same_quarter(year: int, quarter: int) -> None:
    ordinal_it = ["primo", "secondo", "terzo", "quarto"][quarter - 1]
    ordinal_en = ["first", "second", "third", "fourth"][quarter - 1]
    roman = ["I", "II", "III", "IV"][quarter - 1]
    expected = (date(year, 3 * quarter - 2, 1), month_bounds(year, 3 * quarter)[1])
    for text in (
        f"Q{quarter} {year}",
        f"q{quarter}/{year}",
        f"{year}-Q{quarter}",
        f"{quarter}° trimestre {year}",
        f"{ordinal_it} trimestre del {year}",
        f"{roman} trimestre {year}",
        f"the {ordinal_en} quarter of {year}",
    ):
        period = one(text)
        assert bounds(period) == expected, text
        assert period.grain == "quarter"


@given(days)
def test_a_date_in_any_spelling_is_that_day(day: date) -> None:
    month_it, month_en = MONTHS_IT[day.month - 1], MONTHS_EN[day.month - 1]
    expected = (day, day + timedelta(days=1))
    spellings = [
        f"il {day.day} {month_it} {day.year}",
        f"{month_en} {day.day}, {day.year}",
        f"{day.day} {month_en} {day.year}",
        day.isoformat(),
    ]
    if day.day > 12:  # unambiguous numeric dates only
        spellings += [
            f"{day.day:02d}/{day.month:02d}/{day.year}",
            f"{day.month}/{day.day}/{day.year}",
        ]
    for text in spellings:
        period = one(text)
        assert bounds(period) == expected, text
        assert period.grain == "day"


@given(years, st.integers(min_value=1, max_value=52))
def test_an_iso_week_starts_on_its_monday(year: int, week: int) -> None:
    monday = date.fromisocalendar(year, week, 1)
    for text in (f"settimana {week} del {year}", f"week {week} of {year}", f"{year}-W{week:02d}"):
        assert bounds(one(text)) == (monday, monday + timedelta(days=7)), text


@given(years, years)
def test_a_year_range_covers_both_years_or_is_unresolved_backwards(first: int, last: int) -> None:
    found = find_periods(f"ricoveri dal {first} al {last}", TODAY)
    if last >= first:
        assert [bounds(p) for p in found.periods] == [(date(first, 1, 1), date(last + 1, 1, 1))]
    else:
        assert found.periods == () and [t for t, _ in found.unresolved] == [
            f"dal {first} al {last}"
        ]


# ----------------------------------------------------------------------------- relative atoms


@given(days, st.integers(min_value=1, max_value=400))
def test_last_n_days_is_n_days_ending_today(today: date, n: int) -> None:
    for text in (f"ultimi {n} giorni", f"the last {n} days", f"past {n} days"):
        start, end = bounds(one(text, today))
        assert end == today + timedelta(days=1) and (end - start).days == n, text


@given(days)
def test_last_month_is_the_previous_complete_calendar_month(today: date) -> None:
    expected = month_bounds(*previous_month(today))
    for text in ("mese scorso", "il mese precedente", "last month", "previous month"):
        period = one(text, today)
        assert bounds(period) == expected and period.relative, text


@given(days)
def test_this_week_is_the_iso_week_of_today(today: date) -> None:
    monday = today - timedelta(days=today.weekday())
    assert bounds(one("questa settimana", today)) == (monday, monday + timedelta(days=7))
    assert bounds(one("last week", today)) == (monday - timedelta(days=7), monday)


@given(days)
def test_year_to_date_runs_from_january_first_through_today(today: date) -> None:
    for text in ("ytd", "year to date", "da inizio anno", "dall'inizio dell'anno"):
        assert bounds(one(text, today)) == (date(today.year, 1, 1), today + timedelta(days=1))


@given(days)
def test_last_quarter_ends_where_this_quarter_starts(today: date) -> None:
    this_start, this_end = bounds(one("questo trimestre", today))
    last_start, last_end = bounds(one("last quarter", today))
    assert last_end == this_start <= today < this_end
    assert this_start.month in (1, 4, 7, 10) and this_start.day == 1
    assert (this_start - last_start).days in range(89, 93)


@given(days, month_numbers)
def test_a_month_without_a_year_is_the_latest_one_begun(today: date, month: int) -> None:
    found = find_periods(f"ricoveri di {MONTHS_IT[month - 1]}", today)
    (resolved,) = found.resolved
    start, _ = bounds(resolved.period)
    assert resolved.yearless and resolved.period.relative
    assert start.month == month and start <= today < date(start.year + 1, start.month, 1)


# ----------------------------------------------------------------------------- never guessed


@pytest.mark.parametrize(
    "text",
    [
        "ricoveri del 03/04/2024",  # 3 April or March 4
        "ricoveri fino al 2023",  # open start
        "admissions before March 2024",
        "ricoveri escluso il 2023",
        "admissions excluding Q3 2024",
        "ricoveri del 30 febbraio 2024",  # no such day
        "admissions in week 53 of 2025",  # 2025 has 52 ISO weeks
        "revenue FY24",
        "fatturato dell'anno fiscale 2023",
        "iscrizioni 2023/24",  # a split (academic) year
        "iscrizioni 2011-12",  # December 2011, or 2011/12
        "admissions in the 2010s",
        "ricoveri dal 2030",  # since a future year
        "tra il 15 e il 3 marzo 2024",  # a backwards day range
    ],
)
def test_a_recognised_period_that_does_not_resolve_is_unresolved_not_guessed(text: str) -> None:
    found = find_periods(text, TODAY)
    assert found.periods == ()
    assert len(found.unresolved) == 1
    raw, (start, end) = found.unresolved[0]
    assert text[start:end] == raw


@pytest.mark.parametrize(
    "text",
    [
        "almeno 2000 ricoveri",
        "top 2000 patients",
        "spesa superiore a 2000 euro",
        "more than 2024 admissions",
        "codice 2023",
        "2023 pazienti",
        "may I see the admissions",
        "admissions in mar",  # an abbreviation needs a year
        "ricoveri per reparto",
        "",
    ],
)
def test_numbers_and_words_that_are_not_periods_yield_nothing(text: str) -> None:
    found = find_periods(text, TODAY)
    assert found.periods == () and found.unresolved == ()


def test_the_question_s_own_numeric_dates_fix_the_order_of_an_ambiguous_one() -> None:
    period = one("dal 01/03/2024 al 31/03/2024")
    assert bounds(period) == (date(2024, 3, 1), date(2024, 4, 1))
    assert find_periods("03/04/2024 o 04/03/2024", TODAY).periods == ()


def test_several_periods_are_all_reported_and_none_is_the_period() -> None:
    found = find_periods("ricoveri nel 2023 rispetto al 2022", TODAY)
    assert [p.text for p in found.periods] == ["nel 2023", "al 2022"]
    assert parse_period("ricoveri nel 2023 rispetto al 2022", TODAY) is None


def test_the_longest_reading_wins_over_the_atoms_inside_it() -> None:
    found = find_periods("ricoveri da novembre 2023 a febbraio 2024", TODAY)
    assert [(p.text, p.start, p.end) for p in found.periods] == [
        ("da novembre 2023 a febbraio 2024", "2023-11-01", "2024-03-01")
    ]


def test_a_yearless_range_takes_the_year_of_its_dated_end() -> None:
    assert bounds(one("dal 15 dicembre al 15 gennaio 2024")) == (
        date(2023, 12, 15),
        date(2024, 1, 16),
    )
    assert bounds(one("tra gennaio e marzo 2024")) == (date(2024, 1, 1), date(2024, 4, 1))


def test_text_and_span_point_at_the_raw_question_whatever_its_accents_and_apostrophes() -> None:
    question = "Ricoveri NELL’ULTIMO TRIMESTRE per unità"
    (period,) = find_periods(question, TODAY).periods
    assert period.text == "NELL’ULTIMO TRIMESTRE"
    assert question[period.span[0] : period.span[1]] == period.text


def test_folding_keeps_a_map_back_to_every_raw_character() -> None:
    view = fold_text("Unità ﬁscale’s Ⅻ")
    assert view.text == "unita fiscale's xii"
    assert len(view.origin) == len(view.text)
    assert view.raw_span(0, 5) == (0, 5) and view.raw_span(6, 13) == (6, 12)


# ----------------------------------------------------------------------------- invariants

_FILLER = st.sampled_from(
    (
        "ricoveri admissions per by hospital ospedale nel in del of dal al from to tra between e "
        "and ultimi last 3 12 30 2023 2024 marzo March Q3 trimestre quarter settimana week mese "
        "month anno year scorso this questo giorni days , - / fino until 15 01/02/2024 2024-03-15 "
        "ytd oggi"
    ).split()
)


@given(st.lists(_FILLER, max_size=12).map(" ".join), days)
def test_every_parse_is_well_formed_and_deterministic(question: str, today: date) -> None:
    found = find_periods(question, today)
    assert find_periods(question, today) == found
    resolved, unresolved = [p.span for p in found.periods], [s for _, s in found.unresolved]
    assert resolved == sorted(resolved) and unresolved == sorted(unresolved)
    spans = sorted(resolved + unresolved)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # never overlap
    for p in found.periods:
        start, end = bounds(p)
        assert start < end and p.last_day == (end - timedelta(days=1)).isoformat()
        assert question[p.span[0] : p.span[1]] == p.text and p.text.strip() == p.text
        assert p.grain in ("day", "week", "month", "quarter", "half", "year")


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80), days)
def test_arbitrary_text_never_breaks_the_parser(question: str, today: date) -> None:
    found = find_periods(question, today)
    for p in found.periods:
        assert question[p.span[0] : p.span[1]] == p.text


SPAN_PHRASES = (
    "Quanti ricoveri l'anno scorso?",
    "ricoveri il mese scorso per ospedale",
    "admissions in the last quarter by hospital",
    "ricoveri nel primo trimestre del 2024",
    "ricoveri dal 3 marzo al 10 aprile",
    "admissions in March",
    "ricoveri degli ultimi 30 giorni",
    "admissions since 2021 and before June 2023",
    "ricoveri fino al 2023",
    "admissions in week 52 of 2020",
    "ricoveri a febbraio e nella settimana scorsa",
)


@given(st.sampled_from(SPAN_PHRASES), days)
def test_where_a_period_lies_does_not_depend_on_today(question: str, today: date) -> None:
    """``period_spans`` reads the spans on a fixed day: they must be the spans of any day."""
    found = find_periods(question, today)
    spans = sorted([r.period.span for r in found.resolved] + [s for _, s in found.unresolved])
    assert period_spans(question) == tuple(spans)
    assert spans  # every phrase holds a period
