"""The bilingual Italian ↔ English analytics **lexicon**: terms of both languages filed under
shared concept keys ("fatturato", "ricavi" and "revenue" are the concept ``revenue``).

The data is ``kernel/_data/lexicon.json`` (1,872 concepts written for tht by two authors, each
blind to every eval set; ``kernel/_data/LEXICON.md`` says how and what it holds). It lives in
the kernel so that every module can read it (a module never imports another): Memory's term signal
(``modules/memory/terms.py``) names a memory's subject across languages with it, Evidence
translates a query's concepts for BM25 (``modules/evidence/translation.py``).

A term is looked up by its **words**: the content words of a text (casefolded, the stopwords of
both languages dropped), accents folded for the exact form, Snowball-stemmed
(``py_rust_stemmers``, the BM25 recipe's) for the inflected one. A stem that two concepts share
("fatturato" revenue and "fattura" invoice are both ``fattur``) resolves nothing, so only the
exact forms tell them apart; and a stem meets only an inflection of a term, not a derivation
(:data:`MAX_INFLECTION`: "people manager" is not "people management"). Pure: the lexicon is
data read once per process.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Final

import msgspec
import regex
from py_rust_stemmers import SnowballStemmer

from kernel.vectors.language import detect_language
from kernel.vectors.stopwords import STOPWORDS

__all__ = [
    "LEXICON_LANGUAGES",
    "LEXICON_VERSION",
    "MAX_INFLECTION",
    "MAX_PHRASE",
    "NEGATIONS",
    "Lexicon",
    "concept_terms",
    "content_words",
    "default_lexicon",
    "fold",
    "lexicon_from",
    "lookup",
    "segments",
    "stem",
    "translate",
]

LEXICON_VERSION: Final = 1
#: the longest term, in content words
MAX_PHRASE: Final = 4
#: how many letters an inflected word may add or lose against a term's own word and still meet
#: it through its stem ("deliveries" / "delivery": 2; "management" / "manager": 3, a derivation)
MAX_INFLECTION: Final = 2
#: the languages the lexicon holds terms of (and stems)
LEXICON_LANGUAGES: Final = ("it", "en")
_WORD: Final = regex.compile(r"[\p{Alphabetic}\p{N}]+")
_STEMMERS: Final = {"it": SnowballStemmer("italian"), "en": SnowballStemmer("english")}
#: the words that negate what follows them: stopwords for BM25, but words here — without them
#: "fatture non saldate" would read "fatture saldate" and "no-show" would be any "show"
NEGATIONS: Final = frozenset(
    {"non", "not", "no", "senza", "without", "never", "mai", "nor", "né", "neither"}
)
_STOP: Final = frozenset().union(*(STOPWORDS[lang] for lang in LEXICON_LANGUAGES)) - NEGATIONS


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Lowercase, accents removed (NFKD, combining marks dropped)."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def content_words(text: str) -> list[str]:
    """``text``'s words, casefolded, the stopwords of both languages dropped — except the
    :data:`NEGATIONS`, which a term may hold ("fatture non saldate", "no-show")."""
    return [w for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if w not in _STOP]


@lru_cache(maxsize=65536)
def stem(lang: str, word: str) -> str:
    """``word``'s Snowball stem in ``lang`` (one of :data:`LEXICON_LANGUAGES`)."""
    return str(_STEMMERS[lang].stem_word(word))


class Lexicon(msgspec.Struct, frozen=True, kw_only=True):
    """Terms → concept keys, per language. ``exact`` maps a term's folded words
    (``("it", "giro", "affari")``) to its concept, ``stemmed`` its Snowball stems — a stem two
    concepts share resolves nothing. ``generic`` are the concepts that on their own name
    nothing (rate, number, total…). ``terms``: each concept's terms per language, as written
    and in the file's order (the most common first)."""

    exact: Mapping[tuple[str, ...], str]
    stemmed: Mapping[tuple[str, ...], str]
    longest: int
    generic: frozenset[str]
    identity: str
    terms: Mapping[str, Mapping[str, tuple[str, ...]]] = msgspec.field(default_factory=dict)
    #: a stemmed key → the lengths of the folded words of each of its terms: a word meets a
    #: term through its stem only as an inflection of it (:data:`MAX_INFLECTION`), not as a
    #: derivation; a key absent here is not checked
    stem_lengths: Mapping[tuple[str, ...], tuple[tuple[int, ...], ...]] = msgspec.field(
        default_factory=dict
    )


def lexicon_from(data: Mapping[str, object], *, identity: str = "inline") -> Lexicon:
    """A :class:`Lexicon` from the JSON shape of ``_data/lexicon.json`` (``concepts``: ``{key,
    en: [...], it: [...]}``; ``generic``: keys). ``ValueError`` on another shape."""
    concepts = data.get("concepts")
    if not isinstance(concepts, list):
        raise ValueError("lexicon: 'concepts' must be a list")
    exact: dict[tuple[str, ...], str] = {}
    stemmed: dict[tuple[str, ...], str | None] = {}
    lengths: dict[tuple[str, ...], set[tuple[int, ...]]] = {}
    joined: list[tuple[tuple[str, str], str]] = []
    terms: dict[str, dict[str, tuple[str, ...]]] = {}
    longest = 1
    for concept in concepts:
        if not isinstance(concept, Mapping) or not isinstance(concept.get("key"), str):
            raise ValueError("lexicon: every concept needs a string 'key'")
        key = str(concept["key"])
        for lang in LEXICON_LANGUAGES:
            written = concept.get(lang) or ()
            if not isinstance(written, list | tuple):
                raise ValueError(f"lexicon: {key}.{lang} must be a list of terms")
            listed = terms.setdefault(key, {})
            listed[lang] = (*listed.get(lang, ()), *(str(t) for t in written))
            for term in written:
                words = content_words(str(term))[:MAX_PHRASE]
                if not words:
                    continue
                longest = max(longest, len(words))
                exact.setdefault((lang, *(fold(w) for w in words)), key)
                if len(words) == 2:  # "fuori corso" written "fuoricorso", "day hospital" too
                    joined.append(((lang, fold(words[0]) + fold(words[1])), key))
                stems = (lang, *(stem(lang, w) for w in words))
                if stemmed.setdefault(stems, key) != key:
                    stemmed[stems] = None  # two concepts share the stem: it resolves nothing
                lengths.setdefault(stems, set()).add(tuple(len(fold(w)) for w in words))
    for form, key in joined:  # after every term: a written single word comes first
        exact.setdefault(form, key)
    generic = data.get("generic") or []
    if not isinstance(generic, list):
        raise ValueError("lexicon: 'generic' must be a list")
    return Lexicon(
        exact=exact,
        stemmed={k: v for k, v in stemmed.items() if v is not None},
        longest=longest,
        generic=frozenset(str(g) for g in generic),
        identity=identity,
        terms=terms,
        stem_lengths={k: tuple(sorted(v)) for k, v in lengths.items() if stemmed.get(k)},
    )


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    """The lexicon shipped with tht (read once per process); its identity names its version
    and content (``lexicon/v1/<sha256[:16]>``)."""
    raw = resources.files("kernel").joinpath("_data/lexicon.json").read_bytes()
    data = json.loads(raw)
    version = data.get("version")
    if version != LEXICON_VERSION:
        raise ValueError(f"lexicon: version {version!r}, this tht reads {LEXICON_VERSION}")
    return lexicon_from(data, identity=f"lexicon/v{version}/{hashlib.sha256(raw).hexdigest()[:16]}")


def lookup(lexicon: Lexicon, words: Sequence[str], languages: Sequence[str]) -> str | None:
    """The concept of ``words`` as one term: the exact forms first, then the stems; in the
    text's ``languages`` first, then in the others (a loanword: "day surgery" in an Italian
    text, "new hires" in an Italian question)."""
    languages = (*languages, *(lang for lang in LEXICON_LANGUAGES if lang not in languages))
    for lang in languages:
        concept = lexicon.exact.get((lang, *(fold(w) for w in words)))
        if concept is not None:
            return concept
    for lang in languages:
        stems = (lang, *(stem(lang, w) for w in words))
        concept = lexicon.stemmed.get(stems)
        if concept is not None and _inflected(words, lexicon.stem_lengths.get(stems)):
            return concept
    return None


def _inflected(words: Sequence[str], lengths: Sequence[Sequence[int]] | None) -> bool:
    """Whether ``words`` differ from a term with the same stems only as an inflection does:
    each word's length within :data:`MAX_INFLECTION` of that term's ("late deliveries" meets
    "late delivery"; "people manager" is not "people management", nor "management" a
    "manager", though Snowball cuts both to "manag")."""
    if lengths is None:
        return True
    return any(
        all(abs(len(fold(w)) - n) <= MAX_INFLECTION for w, n in zip(words, term, strict=True))
        for term in lengths
    )


def segments(
    words: Sequence[str], lexicon: Lexicon, languages: Sequence[str]
) -> list[tuple[str | None, list[str]]]:
    """Content ``words`` cut into lexicon terms, longest first from the left: ``(concept,
    words)``, ``concept`` None for a word in no term of two or more words (a single word may
    still be a term: :func:`lookup` it)."""
    out: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(words):
        found = _term_at(lexicon, words, i, languages)
        if found is not None:
            out.append((found[0], list(words[i : i + found[1]])))
            i += found[1]
        else:
            out.append((None, [words[i]]))
            i += 1
    return out


def _term_at(
    lexicon: Lexicon, words: Sequence[str], i: int, languages: Sequence[str]
) -> tuple[str, int] | None:
    """The longest term starting at ``words[i]``, as ``(concept, words it covers)``: its words
    as written, or with the first two joined, since hyphens and spaces come and go in compounds
    ("post-operative complications" is "postoperative complications", "day-hospital" is "day
    hospital"); a term of two words also in the other order ("customers we lose" is "lose
    customers", "ritardo di consegna" is "consegna in ritardo")."""
    for size in range(min(lexicon.longest + 1, len(words) - i), 1, -1):
        span = words[i : i + size]
        if size <= lexicon.longest:
            concept = lookup(lexicon, span, languages)
            if concept is not None:
                return concept, size
        concept = lookup(lexicon, [span[0] + span[1], *span[2:]], languages)
        if concept is not None:
            return concept, size
        if size == 2:
            concept = lookup(lexicon, [span[1], span[0]], languages)
            if concept is not None:
                return concept, size
    return None


def _languages(text: str, language: str) -> tuple[str, ...]:
    if language in _STEMMERS:
        return (language,)
    found = detect_language(text, LEXICON_LANGUAGES)
    return (found,) if found is not None else LEXICON_LANGUAGES


def concept_terms(
    text: str, target: str, *, lexicon: Lexicon | None = None, language: str = ""
) -> list[tuple[str, tuple[str, ...]]]:
    """The lexicon concepts ``text`` contains, in the order they appear and each once, with
    their terms in ``target`` (the file's order, the most common first). ``language``: the
    text's, when known (else read from its function words; both languages when they show
    none). Generic concepts are included: :attr:`Lexicon.generic` tells them apart."""
    lexicon = lexicon if lexicon is not None else default_lexicon()
    languages = _languages(text, language)
    out: dict[str, tuple[str, ...]] = {}
    for concept, words in segments(content_words(text), lexicon, languages):
        if concept is None:
            concept = lookup(lexicon, words, languages)
        if concept is not None and concept not in out:
            out[concept] = lexicon.terms.get(concept, {}).get(target, ())
    return list(out.items())


def translate(
    term: str, from_lang: str, to_lang: str, *, lexicon: Lexicon | None = None
) -> tuple[str, ...]:
    """``term`` (one term, ``from_lang``) as the terms of its concept in ``to_lang``; () when
    it is no term of the lexicon."""
    lexicon = lexicon if lexicon is not None else default_lexicon()
    words = content_words(term)[:MAX_PHRASE]
    concept = lookup(lexicon, words, (from_lang,)) if words else None
    if concept is None:
        return ()
    return lexicon.terms.get(concept, {}).get(to_lang, ())
