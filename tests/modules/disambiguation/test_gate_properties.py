"""SecurityGate invariants (Hypothesis) over generated DomainProfiles:

- every spacing / zero-width / fullwidth / accent / case / confusable variant of every name
  (display, alias, restricted keyword) is refused, and each of its letters masked;
- a question whose letters do not contain a name is never refused, and comes back unchanged;
- the masked question names nothing refused (masking is complete);
- the verdict is a pure function of (profile, question).

The look-alikes used here are written out independently of the gate's own table.
"""

from __future__ import annotations

import unicodedata

from hypothesis import assume, given
from hypothesis import strategies as st

from kernel.domain_profile import DomainProfile, Entity, Restricted
from modules.disambiguation import SecurityGate
from modules.disambiguation.text_fold import skeleton

#: Latin letter → characters that look like it (Cyrillic, Greek, Armenian, Latin small caps)
LOOKALIKES: dict[str, str] = {
    "a": "аαɑᴀ", "b": "вβʙ", "c": "сϲᴄ", "d": "ԁᴅ", "e": "еεᴇ", "g": "ɡԍ", "h": "һʜ",
    "i": "іιı", "j": "јϳ", "k": "кκᴋ", "l": "ӏʟ", "m": "мᴍ", "n": "пɴ", "o": "оοօ", "p": "рρ",
    "q": "ԛ", "r": "гʀ", "s": "ѕ", "t": "тτ", "u": "υս", "v": "νѵ", "w": "ԝω", "x": "хχ",
    "y": "уү", "z": "ᴢ",
    "A": "АΑ", "B": "ВΒ", "C": "С", "E": "ЕΕ", "H": "НΗ", "I": "ІΙ", "J": "Ј", "K": "КΚ",
    "M": "МΜ", "N": "Ν", "O": "ОΟ", "P": "РΡ", "S": "Ѕ", "T": "ТΤ", "X": "ХΧ", "Y": "УΥ",
    "Z": "Ζ",
}  # fmt: skip
ACCENTS = ("\u0300", "\u0301", "\u0302", "\u0308", "\u0303", "\u0327")
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u2063")
SEPARATORS = (" ", "  ", ".", ". ", "-", "_", "/", "·", "\u00a0", "\u3000", " - ", "*")
WORDS = (
    "quanti ricoveri per reparto nel 2023 how many admissions per ward last year media "
    "durata degenza average stay procedure ablazione totale costi by month confronto"
).split()

LETTERS = "abcdefghijklmnopqrstuvwxyz"
ACCENTED = "àèéìòùñçäöü"


def _word(alphabet: str) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=2, max_size=7)


def _name(alphabet: str) -> st.SearchStrategy[str]:
    words = st.lists(_word(alphabet), min_size=1, max_size=3)
    styles = st.sampled_from([str, str.title, str.upper, str.capitalize])
    return st.builds(lambda ws, style: style(" ".join(ws)), words, styles)


def profiles(alphabet: str = LETTERS + ACCENTED) -> st.SearchStrategy[DomainProfile]:
    entity = st.builds(
        Entity,
        _name(alphabet),
        st.lists(_name(alphabet), max_size=2).map(tuple),
        st.sampled_from(["competitor", "out_of_scope"]),
    )
    return st.builds(
        DomainProfile,
        external_entities=st.lists(entity, min_size=1, max_size=3).map(tuple),
        restricted=st.builds(
            Restricted, st.lists(_name(alphabet), max_size=2).map(tuple), st.just(())
        ),
    )


def _names(profile: DomainProfile) -> list[str]:
    names = [n for e in profile.external_entities for n in e.names]
    return names + list(profile.restricted.keywords)


def _letter_variant(draw: st.DrawFn, letter: str) -> str:
    base = unicodedata.normalize("NFD", letter)[0]  # the letter without its accent
    choice = draw(st.sampled_from(["same", "case", "fullwidth", "bold", "accent", "look", "bare"]))
    if choice == "case":
        return letter.swapcase()
    if choice == "fullwidth" and base.isascii():
        return chr(ord(base) - 0x21 + 0xFF01)
    if choice == "bold" and base.isascii():
        offset = 0x1D400 if base.isupper() else 0x1D41A
        return chr(offset + ord(base.lower()) - ord("a"))
    if choice == "accent":
        return base + draw(st.sampled_from(ACCENTS))
    if choice == "look" and LOOKALIKES.get(base):
        return draw(st.sampled_from(LOOKALIKES[base]))
    if choice == "bare":
        return base
    return letter


@st.composite
def variants(draw: st.DrawFn, name: str) -> str:
    """``name`` with each letter possibly disguised and anything between its letters."""
    letters = [c for c in name if c.isalnum()]
    out = []
    for index, letter in enumerate(letters):
        out.append(_letter_variant(draw, letter))
        if index < len(letters) - 1:
            gap = draw(st.sampled_from(["", "", "sep", "invisible", "both"]))
            if gap in ("sep", "both"):
                out.append(draw(st.sampled_from(SEPARATORS)))
            if gap in ("invisible", "both"):
                out.append(draw(st.sampled_from(INVISIBLE)))
    return "".join(out)


@st.composite
def disguised_questions(
    draw: st.DrawFn, alphabet: str = LETTERS + ACCENTED
) -> tuple[DomainProfile, str, tuple[int, int]]:
    profile = draw(profiles(alphabet))
    name = draw(st.sampled_from(_names(profile)))
    variant = draw(variants(name))
    before = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=4)))
    after = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=4)))
    left = before + draw(st.sampled_from([" ", ", ", " (", " «"])) if before else ""
    right = draw(st.sampled_from([" ", "? ", ") ", "» "])) + after if after else "?"
    return profile, left + variant + right, (len(left), len(left) + len(variant))


@given(disguised_questions())
def test_every_variant_of_every_name_is_refused_and_masked(
    case: tuple[DomainProfile, str, tuple[int, int]],
) -> None:
    profile, question, (start, end) = case
    verdict = SecurityGate(profile).check(question)
    assert verdict.verdict == "refuse", question
    covered = {i for e in verdict.entities for i in range(*e.span)}
    letters = {i for i in range(start, end) if question[i].isalnum()}
    assert letters <= covered, question
    assert question[start:end] not in verdict.masked
    for entity in verdict.entities:
        a, b = entity.masked_span
        assert verdict.masked[a:b] == f"[{entity.kind}]"


@given(profiles(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), st.data())
def test_a_question_without_a_name_is_never_refused(
    profile: DomainProfile, words: list[str], data: st.DataObject
) -> None:
    noise = data.draw(st.text(alphabet=LETTERS + " .,'?-" + "àéπжΩ", max_size=20))
    question = " ".join(words) + " " + noise
    letters = skeleton(question)
    names = [skeleton(n) for n in _names(profile)]
    assume(all(n not in letters for n in names))
    verdict = SecurityGate(profile).check(question)
    assert verdict.verdict == "allow"
    assert verdict.masked == question and verdict.entities == ()


# letters that occur in no placeholder ("[competitor]", "[out_of_scope]", "[restricted]"), so a
# placeholder can never spell a generated name
_CLEAN = "bghjklnvwxyz"


@given(disguised_questions(alphabet=_CLEAN))
def test_the_masked_question_names_nothing_refused(
    case: tuple[DomainProfile, str, tuple[int, int]],
) -> None:
    profile, question, _ = case
    gate = SecurityGate(profile)
    masked = gate.check(question).masked
    again = gate.check(masked)
    assert again.verdict == "allow", masked
    assert again.masked == masked


@given(disguised_questions(), st.text(max_size=30))
def test_the_verdict_is_a_pure_function_of_profile_and_question(
    case: tuple[DomainProfile, str, tuple[int, int]], other: str
) -> None:
    profile, question, _ = case
    gate = SecurityGate(profile)
    first = gate.check(question)
    gate.check(other)  # nothing carries over from one question to the next
    assert gate.check(question) == first == SecurityGate(profile).check(question)
