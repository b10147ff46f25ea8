"""Typo tolerance (spec 000 §27.1 "typo e lessico aziendale"): one edit away from a catalog word.

A prompt word that matches nothing in the catalog ("excell", "coldfuson") is compared with the
catalog's own words at one edit (insertion, deletion, substitution or transposition of adjacent
letters) and, when exactly one catalog word is that close, takes its index key.

The lookup is a symmetric-deletion index (the SymSpell idea) stored in the compiled catalog: for
every routing word of five letters or more, the word itself and each of its one-letter deletions
are keys ``~<variant>`` whose postings name the word and its index key. At routing time an
unmatched prompt word looks up ``~<word>`` and ``~<each deletion>``; every hit is checked with a
real edit distance before it counts. The cost is a few binary searches per unmatched long word, and
at most :data:`MAX_WORDS` words are tried per prompt. Standard library only (hot path).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "FUZZY_KINDS",
    "MAX_WORDS",
    "MIN_LENGTH",
    "PREFIX",
    "deletions",
    "fuzzy_index",
    "one_edit_apart",
    "variant_keys",
]

PREFIX = "~"
MIN_LENGTH = 5
MAX_WORDS = 12
# posting kinds whose words a typo may reach: positive evidence, never penalties, locks or
# exclusions (a typo must not outrank the authority order of §7.1)
FUZZY_KINDS = frozenset({"name", "curated", "catalog", "capability", "intent"})


def deletions(word: str) -> set[str]:
    """The word without each one of its letters."""
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def variant_keys(word: str) -> list[str]:
    """The index keys a prompt word looks up: itself and its one-letter deletions."""
    return [PREFIX + variant for variant in sorted({word} | deletions(word))]


def one_edit_apart(a: str, b: str) -> bool:
    """Exactly one insertion, deletion, substitution or adjacent transposition apart."""
    if a == b:
        return False
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if la < lb else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def fuzzy_index(index: Mapping[str, Iterable[list[object]]]) -> dict[str, list[list[str]]]:
    """The ``~variant`` keys of a compiled index: ``[[word, key], ...]`` sorted.

    Words are the labels of one-word postings of :data:`FUZZY_KINDS` (letters only, at least
    :data:`MIN_LENGTH` long); a word is reached from itself and from each of its deletions.
    """
    vocabulary: dict[str, set[str]] = {}
    for key, postings in index.items():
        if " " in key or key.startswith(("@", "ext:", "agent:", PREFIX)):
            continue
        for posting in postings:
            kind, label = str(posting[2]), str(posting[3])
            if kind in FUZZY_KINDS and label.isalpha() and len(label) >= MIN_LENGTH:
                vocabulary.setdefault(label, set()).add(key)
    out: dict[str, set[tuple[str, str]]] = {}
    for word, keys in vocabulary.items():
        for variant in {word} | deletions(word):
            for key in keys:
                out.setdefault(PREFIX + variant, set()).add((word, key))
    return {variant: [list(pair) for pair in sorted(pairs)] for variant, pairs in out.items()}
