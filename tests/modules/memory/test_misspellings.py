"""Misspelled question words (modules/memory/misspellings.py): one edit away from a subject
word's stem, same first letter, long enough to tell apart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kernel.lexicon import stem
from modules.memory.misspellings import MIN_STEM, Misspellings

WORDS = ["sinistro", "straordinari", "absenteeism", "riammissione", "fatturato", "overtime"]


@given(st.sampled_from(WORDS), st.integers(1, 6), st.sampled_from(["swap", "drop", "double"]))
def test_one_typo_in_a_long_word_is_read_as_that_word(word: str, at: int, typo: str) -> None:
    index = Misspellings(WORDS)
    if typo == "swap":
        typed = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    elif typo == "drop":
        typed = word[:at] + word[at + 1 :]
    else:
        typed = word[:at] + word[at] + word[at:]
    found = set().union(
        *(index.corrections(f"{lang}:{stem(lang, typed)}") for lang in ("it", "en"))
    )
    if typed != word and stem("it", typed) != stem("it", word):
        assert f"w:{word}" in found


def test_short_words_other_first_letters_and_known_words_are_left_alone() -> None:
    index = Misspellings(["costi", "sinistro", "destro"])
    assert index.corrections("it:cont") == set()  # shorter than MIN_STEM: no guess
    assert index.corrections("it:linistr") == set()  # another first letter
    assert index.corrections("it:sinistr") == set()  # a subject word itself
    assert index.corrections("fr:sinsitr") == set()  # a language the index does not stem
    assert len("sinistr") >= MIN_STEM
    assert index.corrections("it:sinsitr") == {"it:sinistr", "w:sinistro"}
