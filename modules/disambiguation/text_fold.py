"""The folded view of a question: the text the SecurityGate matches on, mapped back to the raw text.

Folding, one raw character at a time (so every folded character knows the raw span it came
from, and the gate can mask the raw question):

- invisible and format characters (zero-width spaces and joiners, word joiner, BOM, soft
  hyphen, bidi controls, tag characters, Hangul fillers, variation selectors) are removed;
- Unicode compatibility decomposition (NFKD: fullwidth ``Ａ``, ligature ``ﬁ``, mathematical
  ``𝐀``, circled ``Ⓐ`` become plain letters), then every combining mark removed (accents:
  ``é`` → ``e``, also ``e`` + U+0301);
- Cyrillic, Greek and other look-alikes of Latin letters folded to the Latin letter
  (:data:`CONFUSABLES`, a small explicit table: deterministic, reviewed, no dependency);
- case folded (``casefold``: ``ß`` → ``ss``); every kind of whitespace becomes one space.

Punctuation stays (restricted patterns may use it); the gate treats every character that is not
a letter or a digit as a separator, and lets separators appear between the letters of an alias
("A c m e", "A.C.M.E", "A-c-m-e" all read "acme"). Digits are not folded to letters (``0`` is
not ``o``): a name spelled with digits is another name. Pure functions, cached per character.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["CONFUSABLES", "FoldedText", "fold", "fold_char", "is_joining", "skeleton"]

#: look-alikes of Latin letters → the Latin letter, applied to lower-case letters (after
#: ``casefold``); :data:`_UPPER_CONFUSABLES` first takes the capitals whose shape differs from
#: their small letter's (Greek ``Η`` looks like H, ``η`` like n)
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "г": "r", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x",
    "ъ": "b", "ь": "b", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ү": "y", "һ": "h", "ӏ": "l",
    "ѵ": "v", "ԍ": "g", "ҁ": "c",
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "ζ": "z", "η": "n", "ι": "i", "κ": "k", "μ": "u",
    "ν": "v", "ο": "o", "ρ": "p", "σ": "o", "ς": "c", "τ": "t", "υ": "u", "χ": "x", "ω": "w",
    "ϲ": "c", "ϳ": "j", "ϵ": "e",
    # Armenian
    "օ": "o", "ս": "u", "ց": "g", "հ": "h", "ո": "n", "ք": "p",
    # Latin letters that do not decompose to a plain one (small capitals, dotless, barred)
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ɩ": "i", "ɪ": "i", "ʟ": "l", "ᴀ": "a", "ʙ": "b",
    "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ɢ": "g", "ʜ": "h", "ᴊ": "j", "ᴋ": "k", "ᴍ": "m", "ɴ": "n",
    "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
    "ø": "o", "đ": "d", "ł": "l", "ħ": "h", "ŧ": "t", "ƀ": "b", "ɨ": "i", "ʉ": "u",
}  # fmt: skip
_UPPER_CONFUSABLES: dict[str, str] = {"Η": "h", "Μ": "m", "Ν": "n", "Υ": "y"}

#: removed wherever they are: invisible characters whose Unicode category is not Cf/M*
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")
#: removed categories: format (Cf: zero-width, bidi, soft hyphen, tags), marks (accents,
#: variation selectors), controls other than whitespace, private use, surrogates, unassigned
_DROPPED = frozenset({"Cf", "Mn", "Mc", "Me", "Cc", "Co", "Cs", "Cn"})

#: scripts written without spaces between words: a name in them needs no word boundary
_UNSPACED = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),  # CJK
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3FFFF),
)


@dataclass(frozen=True)
class FoldedText:
    """``text`` is the folded view; ``starts[i]``/``ends[i]`` the raw span ``text[i]`` came from
    (a raw character folded to several, ``ß`` → ``ss``, gives each of them its span; a removed
    character belongs to the span of the folded character before it)."""

    raw: str
    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span of the folded characters ``text[start:end]`` (``end > start``)."""
        return self.starts[start], self.ends[end - 1]


def _drop(ch: str) -> bool:
    return ch in _INVISIBLE or (unicodedata.category(ch) in _DROPPED and not ch.isspace())


def _plain(text: str, *, upper_table: bool) -> str:
    out = []
    for ch in unicodedata.normalize("NFKD", text):
        if _drop(ch):
            continue
        if upper_table and ch in _UPPER_CONFUSABLES:
            out.append(_UPPER_CONFUSABLES[ch])
            continue
        if ch in CONFUSABLES:  # before the case fold, which may change it (``ς`` → ``σ``)
            out.append(CONFUSABLES[ch])
            continue
        for low in ch.casefold():
            out.append(CONFUSABLES.get(low, low))
    return "".join(out)


@lru_cache(maxsize=8192)
def fold_char(ch: str) -> str:
    """What one raw character folds to ('' for an invisible one, ' ' for any whitespace)."""
    if ch.isspace():
        return " "
    if _drop(ch):
        return ""
    folded = _plain(ch, upper_table=True)
    # a case fold may produce what decomposes again (``İ`` → ``i̇``): fold until it is stable
    for _ in range(3):
        again = _plain(folded, upper_table=False)
        if again == folded:
            break
        folded = again
    return "".join(" " if c.isspace() else c for c in folded)


def fold(raw: str) -> FoldedText:
    """The folded view of ``raw`` with the raw span of every folded character."""
    text: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for index, ch in enumerate(raw):
        folded = fold_char(ch)
        if not folded:
            if ends:
                ends[-1] = index + 1  # a removed character joins the span before it
            continue
        for out in folded:
            text.append(out)
            starts.append(index)
            ends.append(index + 1)
    return FoldedText(raw, "".join(text), tuple(starts), tuple(ends))


def skeleton(raw: str) -> str:
    """The letters and digits of the folded text, separators removed: what a name is."""
    return "".join(c for c in fold(raw).text if c.isalnum())


def _unspaced(ch: str) -> bool:
    code = ord(ch)
    return any(low <= code <= high for low, high in _UNSPACED)


def is_joining(left: str, right: str) -> bool:
    """Whether two adjacent folded characters belong to one word (no boundary between them):
    two letters of a script written with spaces, or two digits. A letter beside a digit, or a
    character of a script written without spaces, is a boundary."""
    if left.isdigit() and right.isdigit():
        return True
    return left.isalpha() and right.isalpha() and not (_unspaced(left) or _unspaced(right))
