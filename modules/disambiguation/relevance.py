"""Scope relevance for Question Admission (issue 14 item 3): does the question speak of this
workspace's data at all? Pure.

The **scope vocabulary** is built from what the workspace says it holds: the catalog's tables and
columns (identifiers split: ``flag_ablazione`` → flag, ablazione; their descriptions), the
Workspace scope's description, the DomainProfile (home entity, dimensions and their synonyms) and
the Evidence glossary's titles. A question is **in scope** when one of its content words shares a
stem (English or Italian Snowball) with that vocabulary; generic words — function words and the
words every schema has (name, number, date, total, list …: :data:`GENERIC_WORDS`) — never count.
When no content word matches, the composition root may ask a semantic rescue (the schema index's
best dense similarity, ``kernel/vectors``); without a vocabulary (nothing synced, no scope
description) relevance is not judged and the question is admitted.

Measured on BIRD mini-dev and an off-topic set written before tuning (``make eval-admission``,
docs/disambiguation.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kernel.vectors.stopwords import STOPWORDS
from modules.disambiguation.ambiguity_terms import Stemmer, default_stem, identifier_words

__all__ = ["GENERIC_WORDS", "Relevance", "ScopeVocabulary", "content_words", "judge_relevance"]

#: words that say nothing of a workspace's subject: generic data words of every schema and
#: question, in English and Italian (function words are the Snowball stop lists, via tokenize)
GENERIC_WORDS = frozenset(
    """
    id ids name names number numbers num count counts total totals sum date dates time times
    year years month months day days week weeks type types kind value values code codes key keys
    average avg mean max maximum min minimum percentage percent ratio rate rates amount amounts
    status state list show give find get tell many much more most less least top bottom first
    last new old per each every all other others please which whose what when where who how why
    between among within without also only ever never one two three four five ten hundred
    information info data detail details item items thing things record records row rows table
    tables column columns field fields entry entries description descriptions note notes text
    nome nomi numero numeri totale totali somma data anno anni mese mesi giorno giorni settimana
    tipo tipi valore valori codice codici media massimo minimo percentuale rapporto tasso importo
    stato elenco elenca mostra mostrami dammi dimmi trova quanti quante quanto quanta quale quali
    chi come dove quando perché tutti tutte ogni altro altri altre solo primo ultimo nuovo
    informazioni dati dettaglio dettagli elemento elementi riga righe tabella tabelle colonna
    colonne campo campi descrizione note testo
    """.split()
)

_MIN_CHARS = 3
_STOP = frozenset().union(*STOPWORDS.values())


@dataclass(frozen=True)
class ScopeVocabulary:
    """Stems of what the workspace holds, each with where it came from (``table:ricoveri``…)."""

    sources: dict[str, str]

    @property
    def empty(self) -> bool:
        return not self.sources

    @classmethod
    def build(
        cls, texts: Iterable[tuple[str, str]], *, stem: Stemmer = default_stem
    ) -> ScopeVocabulary:
        """From ``(source, text)`` pairs: ``("table", "procedure")``, ``("column",
        "procedure.flag_ablazione")``, ``("scope", "hospital admissions")`` …"""
        sources: dict[str, str] = {}
        for source, text in texts:
            for word in content_words(text):
                for s in stem(word):
                    sources.setdefault(s, f"{source}:{word}")
        return cls(sources)


@dataclass(frozen=True)
class Relevance:
    """``in_scope`` None: not judged (no vocabulary). ``matched``: the question's words that
    matched, with where (``ricoveri → table:ricoveri``)."""

    in_scope: bool | None
    matched: tuple[str, ...] = ()
    how: str = "lexical"


def content_words(text: str) -> list[str]:
    """Folded words (identifiers split: ``flag_ablazione``, ``FreeMealCount``), without
    function words, generic words, numbers and words under three letters."""
    return [
        word
        for word in identifier_words(text)
        if len(word) >= _MIN_CHARS
        and not word.isdigit()
        and word not in _STOP
        and word not in GENERIC_WORDS
        and any(c.isalpha() for c in word)
    ]


def judge_relevance(
    question: str, vocabulary: ScopeVocabulary, *, stem: Stemmer = default_stem
) -> Relevance:
    """In scope when a content word of ``question`` shares a stem with the vocabulary."""
    if vocabulary.empty:
        return Relevance(None)
    matched = []
    for word in content_words(question):
        for s in stem(word):
            found = vocabulary.sources.get(s)
            if found is not None:
                matched.append(f"{word} → {found}")
                break
    return Relevance(bool(matched), tuple(dict.fromkeys(matched)))
