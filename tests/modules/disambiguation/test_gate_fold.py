"""The folded view the SecurityGate matches on, and its map back to the raw text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.disambiguation.text_fold import fold, fold_char, is_joining, skeleton


@pytest.mark.parametrize(
    ("raw", "folded"),
    [
        ("ACME", "acme"),
        ("Ａｃｍｅ", "acme"),  # fullwidth
        ("𝐀𝐜𝐦𝐞", "acme"),  # mathematical bold
        ("Ⓐcme", "acme"),  # circled
        ("Àcmé", "acme"),  # precomposed accents
        ("A\u0300cme\u0301", "acme"),  # combining accents
        ("Асме", "acme"),  # Cyrillic А с м е
        ("ΑϲΜΕ", "acme"),  # Greek Α ϲ Μ Ε
        ("ΗΟΤΕL", "hotel"),  # Greek capital eta looks like H
        ("A\u200bc\u200cm\u200de\u2060\ufeff", "acme"),  # zero-width and BOM
        ("Ac\u00adme", "acme"),  # soft hyphen
        ("\u202eAcme\u202c", "acme"),  # bidi controls
        ("A\ufe0fcme", "acme"),  # variation selector
        ("Ac\U000e0041me", "acme"),  # tag character
        ("Straße", "strasse"),
        ("ﬁne", "fine"),
        ("a\u00a0b\tc\u2003d", "a b c d"),  # every whitespace is one space
        ("A.C-M_E", "a.c-m_e"),  # punctuation stays
        ("R1vale 0K", "r1vale 0k"),  # digits are not letters
    ],
)
def test_folding(raw: str, folded: str) -> None:
    assert fold(raw).text == folded


def test_every_folded_character_knows_its_raw_span() -> None:
    raw = "Ｒi\u200bvalé e Straße"
    view = fold(raw)
    assert view.text == "rivale e strasse"
    i = view.text.index("rivale")
    start, end = view.raw_span(i, i + len("rivale"))
    assert raw[start:end] == "Ｒi\u200bvalé"  # the zero-width space and the accent inside
    j = view.text.index("strasse")
    assert raw[slice(*view.raw_span(j, j + 7))] == "Straße"
    # "ß" folds to two characters, both from the same raw character
    assert view.raw_span(j + 4, j + 5) == view.raw_span(j + 5, j + 6)


def test_a_removed_character_belongs_to_the_span_before_it() -> None:
    view = fold("ab\u200b c")
    assert view.text == "ab c"
    assert view.raw_span(0, 2) == (0, 3)


def test_skeleton_keeps_only_letters_and_digits() -> None:
    assert skeleton("A. C. M. E. S.p.A.") == "acmespa"
    assert skeleton("M. Rossi") == "mrossi"
    assert skeleton("...") == ""


def test_word_boundaries() -> None:
    assert is_joining("a", "b") and is_joining("1", "2")
    assert not is_joining("a", "1") and not is_joining("a", " ") and not is_joining("a", ".")
    assert not is_joining("竞", "a") and not is_joining("竞", "争")


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(TEXT)
def test_fold_is_the_concatenation_of_its_characters_folds(raw: str) -> None:
    view = fold(raw)
    assert view.text == "".join(fold_char(c) for c in raw)
    assert len(view.text) == len(view.starts) == len(view.ends)
    assert list(view.starts) == sorted(view.starts)
    assert all(0 <= s < e <= len(raw) for s, e in zip(view.starts, view.ends, strict=True))


@given(TEXT)
def test_fold_is_idempotent(raw: str) -> None:
    once = fold(raw).text
    assert fold(once).text == once
    assert skeleton(once) == skeleton(raw)


@given(TEXT)
def test_fold_is_case_insensitive_for_latin_text(raw: str) -> None:
    ascii_only = "".join(c for c in raw if c.isascii())
    assert fold(ascii_only.upper()).text == fold(ascii_only.lower()).text
