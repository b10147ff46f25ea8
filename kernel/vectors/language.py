"""Which workspace language a short text is written in, from its function words.

The same rule as the router's detector (``modules/routing/text.py``: words that are function
words in one language only, accented vowels counting for Italian), over the Snowball stop lists
the BM25 recipe already uses (:mod:`kernel.vectors.stopwords`), so that every module can use it
through the kernel (a module never imports another). A text with no deciding evidence — a
formula, a list of identifiers, as many English as Italian cues — has no language (``None``):
callers treat it as "same language", never as a mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

import regex

from kernel.vectors.stopwords import STOPWORDS

__all__ = ["detect_language"]

_WORDS: Final = regex.compile(r"[\p{Alphabetic}]+")
_ACCENTS: Final = {"it": frozenset("àèéìòù")}


@lru_cache(maxsize=8)
def _only(languages: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Each language's function words that are not function words of another one."""
    return {
        lang: STOPWORDS[lang].difference(*(STOPWORDS[o] for o in languages if o != lang))
        for lang in languages
    }


def detect_language(text: str, languages: Sequence[str] = ("it", "en")) -> str | None:
    """The language among ``languages`` with strictly the most cues in ``text``, else None.

    Cues: a word (lowercased) that is a function word of that language only, and (Italian) an
    accented vowel. Languages without a stop list are ignored. Pure and deterministic.
    """
    known = tuple(dict.fromkeys(lang for lang in languages if lang in STOPWORDS))
    if not known:
        return None
    only = _only(known)
    counts = dict.fromkeys(known, 0)
    for word in _WORDS.findall(text.lower()):
        for lang in known:
            if word in only[lang]:
                counts[lang] += 1
    for lang in known:
        accents = _ACCENTS.get(lang)
        if accents:
            counts[lang] += sum(1 for ch in text if ch in accents)
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]
