"""Memory's identities: what counts as "the same words", the same memory, the same subject."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from modules.memory import (
    memory_id,
    memory_key,
    normalize_text,
    solved_id,
    subject_key,
    subject_target_key,
)

_TEXT = st.text(max_size=40)


def test_case_accents_spacing_and_surrounding_punctuation_do_not_count() -> None:
    assert normalize_text("  Ablazióne\t del   CUORE. ") == "ablazione del cuore"
    assert normalize_text("«ablazione»") == "ablazione"
    assert normalize_text("Straße") == normalize_text("strasse")  # case folding, not lower()
    assert normalize_text("ﬁle") == "file"  # NFKC: the ligature is two letters
    assert normalize_text("abla\u200bzione") == "ablazione"  # a zero-width space is invisible
    assert normalize_text("...!") == ""


def test_inner_punctuation_stays_a_column_is_not_its_letters() -> None:
    assert normalize_text("procedures.flag_ablazione") == "procedures.flag_ablazione"
    assert normalize_text("a.b") != normalize_text("ab")
    assert normalize_text("tipo=A") == "tipo=a"


@given(_TEXT)
def test_normalization_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert once == once.strip() and "  " not in once


@given(_TEXT, _TEXT, _TEXT)
def test_the_memory_key_is_exactly_the_normalized_triple(
    subject: str, target: str, meaning: str
) -> None:
    # the key decodes back to its three parts: no text moved between parts gives the same key
    key = memory_key(subject, target, meaning)
    parts = [normalize_text(subject), normalize_text(target), normalize_text(meaning)]
    assert json.loads(key) == parts
    assert memory_id(subject, target, meaning) == memory_id(*parts)


def test_the_same_clarification_written_differently_is_the_same_memory() -> None:
    a = memory_id("Ablazione", "procedures.flag", "Flag ablazione.")
    b = memory_id("  ablazióne ", "PROCEDURES.FLAG", "flag   ablazione")
    assert a == b and re.fullmatch(r"mem-[0-9a-f]{16}", a)
    assert a != memory_id("ablazione", "procedures.flag", "free text")  # another meaning
    assert a != memory_id("ablazione", "procedures.text", "flag ablazione")  # another target


def test_no_target_and_an_empty_target_are_the_same() -> None:
    assert memory_key("x", None, "m") == memory_key("x", "", "m") == memory_key("x", " ", "m")


def test_subject_target_and_subject_keys_ignore_what_they_do_not_name() -> None:
    assert subject_target_key("Ablazione", "p.flag") == subject_target_key("ablazione", "P.FLAG")
    assert subject_target_key("ablazione", "p.flag") != subject_target_key("ablazione", "p.txt")
    assert subject_key("Ablazióne ") == subject_key("ablazione")


def test_a_solved_question_id_is_one_per_session() -> None:
    assert solved_id("S1") == solved_id("S1")
    assert solved_id("S1") != solved_id("S2")
    assert re.fullmatch(r"sq-[0-9a-f]{16}", solved_id("S1"))
