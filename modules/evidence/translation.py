"""Query translation for BM25: the other language's words of the concepts a query names.

BM25 matches words, so an Italian question ("pazienti anziani ricoverati") shares only names
and numbers with an English unit ("patients", "admission"). With
``evidence.fusion.translate_bm25`` on, the BM25 query is the Evidence query text followed by,
for every concept of the bilingual analytics lexicon (:mod:`kernel.lexicon`) that the text
contains, its terms in each language of the corpus other than the query's — at most
``translate_terms`` of them per concept, the first ones the lexicon lists (the most common),
counting inflections of one word once ("patient", "patients" are one). Only the BM25 query
changes: the dense query, the query's language (which steers the weighted fusion) and the
indexed documents do not.

The corpus's languages are the workspace languages its fragments are written in
(:func:`corpus_languages`, recorded in each generation): an English question over English units
gains nothing, over Italian ones their words. A query with no clear language (a bare term
such as "K-12 free meal") is expanded into each of them; a generic concept (rate, total,
year…) is expanded like any other. Each choice was measured on the dev split of
``make eval-evidence`` (docs/evidence.md). Pure and deterministic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kernel.lexicon import Lexicon
    from modules.evidence.fusion import FusionSettings

__all__ = ["MIN_CORPUS_SHARE", "bm25_query_text", "corpus_languages", "expansion_terms"]


#: a language is the corpus's when at least this share of the fragments whose language shows
#: are written in it (BIRD's 942 English units hold two formulas that read as Italian: "per")
MIN_CORPUS_SHARE: Final = 0.05


def corpus_languages(texts: Iterable[str], languages: Sequence[str]) -> tuple[str, ...]:
    """The workspace ``languages`` (in their order) that the ``texts`` are written in, by their
    function words (:mod:`kernel.vectors.language`): each language of at least
    :data:`MIN_CORPUS_SHARE` of the texts that show one (a formula shows none)."""
    from modules.evidence.fusion import language_of

    wanted = tuple(dict.fromkeys(languages))
    found = Counter(language_of(text, wanted) for text in texts)
    shown = sum(n for lang, n in found.items() if lang is not None)
    return tuple(lang for lang in wanted if found[lang] and found[lang] >= MIN_CORPUS_SHARE * shown)


def expansion_terms(
    text: str,
    languages: Sequence[str],
    *,
    terms_per_concept: int,
    lexicon: Lexicon | None = None,
    corpus: Sequence[str] | None = None,
    skip_generic: bool = False,
) -> list[str]:
    """The terms to add to ``text``'s BM25 query, in order, each once: for every lexicon
    concept in ``text``, its first ``terms_per_concept`` distinct terms (one per stem) in each
    of ``languages`` (the workspace's) other than the text's own (all of them when it shows
    none; the text's language is read among the lexicon's, so an Italian question in an
    English-only workspace is still translated). ``corpus``: the languages the searched
    fragments are written in (:func:`corpus_languages`); only those are targets, unless it is
    None or empty (not known: every workspace language)."""
    from kernel.lexicon import LEXICON_LANGUAGES, concept_terms, content_words, default_lexicon
    from kernel.lexicon import stem as stem_of
    from kernel.vectors.language import detect_language

    if terms_per_concept < 1 or not text.strip():
        return []
    lexicon = lexicon if lexicon is not None else default_lexicon()
    own = detect_language(text, LEXICON_LANGUAGES)
    targets = [lang for lang in dict.fromkeys(languages) if lang in LEXICON_LANGUAGES]
    targets = [lang for lang in targets if lang != own and (not corpus or lang in corpus)]
    out: dict[str, None] = {}
    for target in targets:
        for concept, terms in concept_terms(text, target, lexicon=lexicon, language=own or ""):
            if skip_generic and concept in lexicon.generic:
                continue
            seen: set[tuple[str, ...]] = set()
            for term in terms:
                stems = tuple(stem_of(target, w) for w in content_words(term))
                if not stems or stems in seen:
                    continue
                seen.add(stems)
                out.setdefault(term, None)
                if len(seen) == terms_per_concept:
                    break
    return list(out)


def bm25_query_text(
    text: str,
    fusion: FusionSettings,
    *,
    corpus: Sequence[str] | None = None,
    lexicon: Lexicon | None = None,
    aligned: Sequence[str] = (),
) -> str:
    """The text BM25 encodes for the Evidence query ``text``: ``text`` itself, followed (on a
    line of its own) by :func:`expansion_terms` when ``fusion.translate_bm25`` is on, then (on
    another) the corpus words ``aligned`` to its other words
    (:mod:`modules.evidence.vocabulary`)."""
    out = text
    if fusion.translate_bm25:
        extra = expansion_terms(
            text,
            fusion.languages,
            terms_per_concept=fusion.translate_terms,
            lexicon=lexicon,
            corpus=corpus,
        )
        out = f"{text}\n{' '.join(extra)}" if extra else text
    return f"{out}\n{' '.join(aligned)}" if aligned else out
