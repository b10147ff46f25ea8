"""``RuleIntentParser``: the offline, deterministic IntentParser (the default; ADR 0010).

Dimensions and measures are found by the synonyms the DomainProfile lists per language:

- on the folded view of the question (case, accents and apostrophe variants do not matter) and
  word by word, so a synonym never matches inside another word ("ospedale" is not in
  "ospedaliero");
- a word matches its own inflections: a small table of Italian and English plural and gender
  endings ("reparto"/"reparti", "unità operativa"/"unità operative", "ward"/"wards",
  "payer"/"payers"), and the Snowball stem of the synonym's language when what follows the stem
  is only an inflectional ending ("ricovero"/"ricoveri") — never a derivation ("hospitality"
  shares the stem of "hospital" but is another word);
- multi-word synonyms match word by word ("degenze medie" for "degenza media"); the longest
  synonym wins a word ("admission date" over "admission"); two dimensions sharing one synonym
  are both reported (an ambiguity for F1, not a choice made here);
- words inside a period expression belong to the period ("mese" in "questo mese"), and the
  SecurityGate's placeholders (``[competitor]``) are skipped;
- a value is read only when the question states it: a quoted text right after the synonym
  (``ospedale "San Carlo"``) or ``synonym = value`` / ``synonym: value``.

Periods come from :mod:`modules.disambiguation.periods`; the clarify policy from
:func:`modules.disambiguation.intent.assemble_intent`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kernel.clock import Clock
from kernel.domain_profile import Dimension, DomainProfile
from modules.disambiguation.intent import DimensionMention, Intent, assemble_intent, today_of
from modules.disambiguation.periods import Folded, PeriodParse, find_periods, fold_text

__all__ = ["RuleIntentParser", "match_dimensions", "word_forms"]

_SNOWBALL = {
    "it": "italian",
    "en": "english",
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "pt": "portuguese",
    "nl": "dutch",
}
#: what may follow a synonym's Snowball stem in a word that is one of its forms (the exact word
#: and its table forms are matched apart: the bare stem "ospedal" is not a word)
_ENDINGS = {"it": ("a", "e", "i", "o", "he", "hi"), "en": ("s", "es", "e")}
_WORD = re.compile(r"[^\W_]+")
_PLACEHOLDER = re.compile(r"\[[^\[\]]{1,40}\]")
_VALUE = re.compile(
    r"\s*(?:[:=]\s*)?(?:\"([^\"]{1,80})\"|“([^”]{1,80})”|«([^»]{1,80})»|'([^']{1,80})')"
    r"|\s*[:=]\s*([^\s,;:()\[\]\"'“”«»]{1,80})"
)


class RuleIntentParser:
    """The default IntentParser: synonyms, inflections and the period grammar; no model."""

    name = "rules"

    def parse(
        self,
        question: str,
        profile: DomainProfile,
        clock: Clock,
        *,
        out_of_scope_entity: bool = False,
    ) -> Intent:
        today = today_of(clock)
        periods = find_periods(question, today)
        return assemble_intent(
            parser="rules",
            profile=profile,
            today=today,
            mentions=match_dimensions(question, profile, periods),
            periods=periods,
            out_of_scope_entity=out_of_scope_entity,
        )


@lru_cache(maxsize=16)
def _stemmer(lang: str) -> Any:
    name = _SNOWBALL.get(lang)
    if name is None:
        return None
    import snowballstemmer

    return snowballstemmer.stemmer(name)


def word_forms(word: str, lang: str) -> frozenset[str]:
    """``word`` (folded) and its plural / singular / gender forms in ``lang``."""
    forms = {word}
    if lang == "it" and len(word) > 2:
        stem, last = word[:-1], word[-1]
        if word.endswith("io"):
            forms.add(stem)
        if word.endswith(("co", "go")):
            forms |= {stem + "hi", stem + "i"}
        if word.endswith(("ca", "ga")):
            forms.add(stem + "he")
        if word.endswith(("chi", "ghi", "che", "ghe")):
            forms |= {word[:-2] + "o", word[:-2] + "a"}
        forms |= {
            "o": {stem + "i", stem + "a", stem + "e"},
            "a": {stem + "e", stem + "i", stem + "o"},
            "e": {stem + "i"},
            "i": {stem + "o", stem + "e", stem + "a", stem + "io"},
        }.get(last, set())
    elif len(word) > 2:
        forms.add(word + "s")
        if word.endswith(("s", "x", "z", "ch", "sh")):
            forms.add(word + "es")
        if word.endswith("y") and word[-2] not in "aeiou":
            forms.add(word[:-1] + "ies")
        if word.endswith("ies"):
            forms.add(word[:-3] + "y")
        if word.endswith("es"):
            forms.add(word[:-2])
        if word.endswith("s") and not word.endswith("ss"):
            forms.add(word[:-1])
    return frozenset(forms)


@dataclass(frozen=True)
class _Word:
    """One word of a synonym: its forms, and its Snowball stem in the synonym's language."""

    forms: frozenset[str]
    lang: str
    stem: str | None

    def matches(self, token: str) -> bool:
        if token in self.forms:
            return True
        stem, stemmer = self.stem, _stemmer(self.lang)
        if stem is None or stemmer is None or len(stem) < 4 or not token.startswith(stem):
            return False
        ending = token[len(stem) :]
        return ending in _ENDINGS.get(self.lang, ()) and stemmer.stemWord(token) == stem


@dataclass(frozen=True)
class _Synonym:
    dimension: Dimension
    words: tuple[_Word, ...]


def _synonyms(profile: DomainProfile) -> tuple[_Synonym, ...]:
    out: list[_Synonym] = []
    for dimension in profile.dimensions:
        for lang, names in sorted(dimension.synonyms.items()):
            stemmer = _stemmer(lang)
            for name in names:
                words = _WORD.findall(fold_text(name).text)
                if not words:
                    continue
                out.append(
                    _Synonym(
                        dimension,
                        tuple(
                            _Word(
                                word_forms(w, lang),
                                lang,
                                None if stemmer is None or w.isdigit() else stemmer.stemWord(w),
                            )
                            for w in words
                        ),
                    )
                )
    return tuple(sorted(out, key=lambda s: -len(s.words)))


def _tokens(view: Folded, skip: list[tuple[int, int]]) -> list[tuple[str, tuple[int, int]]]:
    out: list[tuple[str, tuple[int, int]]] = []
    hidden = [view.raw_span(m.start(), m.end()) for m in _PLACEHOLDER.finditer(view.text)]
    for m in _WORD.finditer(view.text):
        span = view.raw_span(m.start(), m.end())
        if not any(s < span[1] and span[0] < e for s, e in [*skip, *hidden]):
            out.append((m.group(), span))
    return out


def _hits(
    tokens: list[tuple[str, tuple[int, int]]], synonyms: tuple[_Synonym, ...]
) -> Iterator[tuple[int, int, Dimension]]:
    for i in range(len(tokens)):
        for syn in synonyms:
            size = len(syn.words)
            if i + size <= len(tokens) and all(
                w.matches(tokens[i + k][0]) for k, w in enumerate(syn.words)
            ):
                yield i, size, syn.dimension


def match_dimensions(
    question: str, profile: DomainProfile, periods: PeriodParse | None = None
) -> list[DimensionMention]:
    """Every dimension and measure of ``profile`` the question names, in text order."""
    synonyms = _synonyms(profile)
    if not synonyms:
        return []
    skip = [] if periods is None else [p.span for p in periods.periods]
    skip += [] if periods is None else [span for _, span in periods.unresolved]
    tokens = _tokens(fold_text(question), skip)
    accepted: list[tuple[int, int, Dimension]] = []
    for i, size, dim in sorted(_hits(tokens, synonyms), key=lambda h: (-h[1], h[0])):
        clash = [(j, n) for j, n, _ in accepted if i < j + n and j < i + size]
        if all((j, n) == (i, size) for j, n in clash) and (i, size, dim) not in accepted:
            accepted.append((i, size, dim))
    mentions: list[DimensionMention] = []
    for i, size, dim in sorted(accepted, key=lambda h: (h[0], h[2].name)):
        span = (tokens[i][1][0], tokens[i + size - 1][1][1])
        found = _VALUE.match(question, span[1])
        value = next((g for g in found.groups() if g), None) if found else None
        mentions.append(
            DimensionMention(
                name=dim.name,
                kind=dim.kind,
                matched=question[span[0] : span[1]],
                span=span,
                value=value.strip() if value else None,
            )
        )
    return mentions
