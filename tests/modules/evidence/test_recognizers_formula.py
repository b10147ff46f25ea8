"""Formula wording in Italian and English: the expression may hold * / = + - ( ) %."""

from __future__ import annotations

import pytest

from modules.evidence.recognizers import plain_text, recognize

CASES = [
    # (passage, title, expression)
    (
        "Il tasso si calcola come free_meals * 100 / enrollment",
        "Il tasso",
        "free_meals * 100 / enrollment",
    ),
    (
        "Il tasso si calcola come free_meals*100/enrollment*2",
        "Il tasso",
        "free_meals*100/enrollment*2",
    ),
    (
        "Il margine si calcola come: (ricavi - costi) * 100 / ricavi",
        "Il margine",
        "(ricavi - costi) * 100 / ricavi",
    ),
    ("Il totale si calcola come totale = prezzo * quantita", "Il totale", "prezzo * quantita"),
    ("Il resto è calcolato come (giorni + 6) % 7", "Il resto", "(giorni + 6) % 7"),
    (
        "La quota si calcola come quota = (a + b) * 100 / (c - d)",
        "La quota",
        "(a + b) * 100 / (c - d)",
    ),
    ("The total is computed as total = price * qty", "The total", "price * qty"),
    (
        "The rate is computed as rate = free_meals / enrollment",
        "The rate",
        "free_meals / enrollment",
    ),
    (
        "The margin is calculated as (revenue - cost) * 100 / revenue",
        "The margin",
        "(revenue - cost) * 100 / revenue",
    ),
    (
        "Active share is computed as SUM(CASE WHEN status = 1 THEN 1 ELSE 0 END) * 100 / COUNT(*)",
        "Active share",
        "SUM(CASE WHEN status = 1 THEN 1 ELSE 0 END) * 100 / COUNT(*)",
    ),
    ("The weekday is computed as (day_number + 6) % 7", "The weekday", "(day_number + 6) % 7"),
    (
        "Eligible free rate = free_meal_count * 1.0 / enrollment",
        "Eligible free rate",
        "free_meal_count * 1.0 / enrollment",
    ),
]


@pytest.mark.parametrize(("text", "title", "expression"), CASES)
def test_formula_wording_is_recognized_with_its_operators(
    text: str, title: str, expression: str
) -> None:
    found = recognize(text, shape="paragraph")
    assert (found.kind, found.title, found.expression) == ("formula", title, expression)


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("a*b*c si calcola", "a*b*c si calcola"),
        ("free_meals_count / enrollment", "free_meals_count / enrollment"),
        ("**Tasso** e *quota* e _nota_", "Tasso e quota e nota"),
    ],
)
def test_plain_text_keeps_arithmetic_and_identifiers(markdown: str, plain: str) -> None:
    assert plain_text(markdown) == plain
