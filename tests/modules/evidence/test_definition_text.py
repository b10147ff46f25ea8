"""``definition_text``: what a glossary passage says its term means (F1's glossary readings)."""

from __future__ import annotations

import pytest

from modules.evidence.recognizers import definition_text


@pytest.mark.parametrize(
    ("term", "text", "expected"),
    [
        ("Revenue", "**Revenue**: the sum of `singer.sales`.", "the sum of singer.sales."),
        ("Ablazione", "Ablazione — procedura di rimozione.", "procedura di rimozione."),
        ("revenue", "**REVENUE**: net sales", "net sales"),  # case folded
        # another lead term, or none: the whole passage, as plain text
        ("Revenue", "**Turnover**: gross sales", "Turnover: gross sales"),
        ("Revenue", "the sum of the sales", "the sum of the sales"),
        ("Revenue", "**Revenue**:", "Revenue:"),  # nothing after it: never an empty meaning
    ],
)
def test_the_leading_term_is_dropped_only_when_it_is_the_unit_s_term(
    term: str, text: str, expected: str
) -> None:
    assert definition_text(term, text) == expected
