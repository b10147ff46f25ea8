"""Unanswerable terms (F1): content words of the question that map to nothing — no table or
column of the catalog, no glossary term, no value. Distinct from ambiguous, and conservative:
a missed unanswerable term costs a clarification later, a false one stops a good question.

A word is reported only when all of these hold:

- it is not part of a term, a value the index found, or a glossary term;
- it is not part of a period expression ("l'anno scorso", "last quarter": F4 grounds a time on
  a date column);
- it looks like a concept: at least four letters, no digit, not capitalised inside the sentence
  (a proper name is a value, which only the value index can judge), not a stopword, not one of
  the words questions are made of (:data:`QUESTION_WORDS`, aggregate words), a calendar unit,
  a computation (percentage, ratio, difference), a number or ordinal written as a word, or a
  comparison or quantity (:data:`CALENDAR_WORDS`, :data:`COMPUTATION_WORDS`,
  :data:`NUMBER_WORDS`, :data:`COMPARISON_WORDS`), not an English adverb, participle or
  superlative by its ending (``-ly``, ``-ed``, ``-ing``, ``-est``);
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

__all__ = [
    "CALENDAR_WORDS",
    "COMPARISON_WORDS",
    "COMPUTATION_WORDS",
    "NOUN_CUES",
    "NUMBER_WORDS",
    "QUESTION_WORDS",
    "unanswerable_terms",
]

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
#: calendar units: "per mese", "each year", "monthly" ask for a time grain, which a date column
#: answers (F4 links it), never a concept the catalog lacks
CALENDAR_WORDS = frozenset(
    """
    giorno giorni giornata giornate giornaliero giornaliera settimana settimane settimanale
    mese mesi mensile mensili trimestre trimestri trimestrale semestre semestri semestrale
    anno anni annuale annuali annuo annua
    days daily week weeks weekly month months monthly quarter quarters quarterly half halves
    year years yearly annual annually
    """.split()
)
#: what a question asks to compute from the data, not a concept in it (English and Italian)
COMPUTATION_WORDS = frozenset(
    """
    percentage percentages percent ratio ratios proportion proportions fraction difference
    differences increase decrease growth change changes share
    percentuale percentuali rapporto rapporti proporzione proporzioni frazione differenza
    differenze aumento diminuzione crescita variazione variazioni quota
    """.split()
)
#: ordinals, numbers and multiples written as words: a position or a count, never a concept
NUMBER_WORDS = frozenset(
    """
    first second third fourth fifth sixth seventh eighth ninth tenth last
    three four five seven eight nine eleven twelve twenty hundred thousand million
    single double triple quadruple twice thrice
    primo prima primi prime secondo seconda terzo terza quarto quarta quinto quinta ultimo
    ultima ultimi ultime quattro cinque sette otto nove dieci venti cento mille milione
    singolo singola doppio doppia triplo tripla
    """.split()
)
#: comparisons and quantities: how much or which of a concept, never one
COMPARISON_WORDS = frozenset(
    """
    higher lower greater smaller bigger larger less fewer more most least same other others
    common numerous several multiple various full said respective
    maggiore maggiori minore minori superiore inferiore stesso stessa stessi stesse altro
    altra altri altre comune comuni numerosi numerose vari varie molti molte pochi poche
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
_NOT_CONCEPTS = (
    QUESTION_WORDS | NOUN_CUES | CALENDAR_WORDS | COMPUTATION_WORDS | NUMBER_WORDS
) | COMPARISON_WORDS


def _concept_like(tokens: Sequence[Token], i: int) -> bool:
    token = tokens[i]
    word = token.text
    if len(word) < 4 or not word.isalpha() or token.stop:
        return False
    if i > 0 and token.raw[:1].isupper():
        return False
    if word in _NOT_CONCEPTS or word.endswith(_ENDINGS):
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
