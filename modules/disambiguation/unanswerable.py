"""Unanswerable terms (F1): content words of the question that map to nothing — no table or
column of the catalog, no glossary term, no value. Distinct from ambiguous, and conservative:
a missed unanswerable term costs a clarification later, a false one stops a good question.

A word is reported only when all of these hold:

- it is not part of a term, a value the index found, or a glossary term;
- it looks like a concept: at least four letters, no digit, not capitalised inside the sentence
  (a proper name is a value, which only the value index can judge), not a stopword, not one of
  the words questions are made of (:data:`QUESTION_WORDS`, aggregate words), not an English
  adverb, participle or superlative by its ending (``-ly``, ``-ed``, ``-ing``, ``-est``);
- it stands where a noun stands: right after a determiner, a preposition or an aggregate word
  (*the, each, of, per, average, number, il, del, ogni, media, …*);
- no catalog name even starts with its stem, nor its stem with a name's word (≥ 4 letters):
  a loose mention is a mention.
"""

from __future__ import annotations

from collections.abc import Sequence

from modules.disambiguation.ambiguity_records import UnanswerableTerm
from modules.disambiguation.ambiguity_rules import AGGREGATE_CUES
from modules.disambiguation.ambiguity_terms import Lexicon, Token

__all__ = ["NOUN_CUES", "QUESTION_WORDS", "unanswerable_terms"]

#: words questions are made of, never a concept of the data (English and Italian): verbs of
#: asking, result and ordering words, the vocabulary of text patterns ("the letter w")
QUESTION_WORDS = frozenset(
    """
    list find give return tell display provide compute calculate sort order rank group
    different distinct unique many much please information info details data record records
    entries entry values value results result ones time times kind kinds type types sorts
    whole overall respectively descending ascending order ordered alphabetical
    mostra mostrami elenca elenco trova dammi restituisci calcola conta ordina raggruppa
    diversi diverse distinti distinte ciascuno ciascuna informazioni dati righe valori
    risultati lista tipo tipi volte
    letter letters character characters word words string substring text
    lettera lettere carattere caratteri parola parole testo
    """.split()
)
#: the words after which a noun stands
NOUN_CUES = frozenset(
    """
    the a an each every all any their its his her our your which what whose of per by for
    with from many
    il lo la i gli le l un una uno ogni ciascun tutti tutte di del dello della dei degli delle
    dell per quale quali quanti quante
    """.split()
) | frozenset(AGGREGATE_CUES)
_ENDINGS = ("ly", "ed", "ing", "est")


def _concept_like(tokens: Sequence[Token], i: int) -> bool:
    token = tokens[i]
    word = token.text
    if len(word) < 4 or not word.isalpha() or token.stop:
        return False
    if i > 0 and token.raw[:1].isupper():
        return False
    if word in QUESTION_WORDS or word in NOUN_CUES or word.endswith(_ENDINGS):
        return False
    return i > 0 and tokens[i - 1].text in NOUN_CUES and not tokens[i - 1].clause_end


def unanswerable_terms(
    tokens: Sequence[Token], covered: set[int], lexicon: Lexicon
) -> list[UnanswerableTerm]:
    """The concept-like words no catalog name, glossary term or value accounts for."""
    found: list[UnanswerableTerm] = []
    for i, token in enumerate(tokens):
        if i in covered or not _concept_like(tokens, i):
            continue
        if lexicon.loosely_named(token.text):
            continue
        found.append(
            UnanswerableTerm(
                term=token.raw,
                span=(token.start, token.end),
                reason=f"{token.raw!r} names no table or column of the catalog, no glossary "
                "term and no known value",
            )
        )
    return found
