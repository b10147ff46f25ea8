"""The **term** signal: does the question name a memory's subject, word for word, in any
inflection, or in the other language?

The embedder's cosines cannot tell a translated term from a same-domain near-miss
(multilingual-e5-small puts "overtime hours" closer to "lavoro agile" than to "straordinari"), so
recall across Italian and English reads words instead. Both sides — the memory's subject and the
question — become a sequence of **positions**, one per content word (stopwords of every
workspace language dropped), each a set of keys:

- ``c:<concept>`` when the word, or a run of up to four words, is a term of the bilingual
  analytics lexicon (:mod:`kernel.lexicon`, ``kernel/_data/lexicon.json``: "fatturato",
  "ricavi" and "revenue" are ``c:revenue``);
- otherwise ``w:<word>`` (case and accents folded) and ``it:<stem>`` / ``en:<stem>`` (Snowball),
  so "consegne" meets "consegna" and a loanword ("turnover", "FTE") meets itself.

A subject is **named** when each of its *required* positions (the non-generic ones: "tasso" and
"rate" say nothing on their own, so a subject of generic words alone is never named) shares a key
with a position of the question, and those question positions lie close together: their span is
at most the number of required positions plus :data:`MAX_GAP` (one modifier may stand between,
"consegne *arrivate* in ritardo"; a phrase scattered across a sentence is not the term). The
order is free ("30-day readmissions" names "riammissione a 30 giorni").

A term of several words stands at each of its words' positions (distances count words), and
also holds ``cc:<concept>``: a subject term whose concept is broader than it ("smart meter" filed
under ``meter``) requires that key, so only another term of several words of the concept meets
it. A question word no lexicon term holds also meets a subject word one typo away
(:mod:`~modules.memory.misspellings`), and a written acronym names a subject that spells it
(:mod:`~modules.memory.acronyms`).

Pure: the lexicon is data read once (:mod:`kernel.lexicon`); stemming is ``py_rust_stemmers``
(the BM25 recipe's).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import product
from typing import TYPE_CHECKING, Final

import msgspec

from kernel.lexicon import (
    LEXICON_LANGUAGES,
    LEXICON_VERSION,
    MAX_PHRASE,
    NEGATIONS,
    Lexicon,
    default_lexicon,
    lexicon_from,
    segments,
)
from kernel.lexicon import content_words as _words
from kernel.lexicon import fold as _fold
from kernel.lexicon import lookup as _lookup
from kernel.lexicon import stem as _stem
from kernel.vectors.language import detect_language
from modules.memory.acronyms import AcronymIndex, acronyms_in, contradicts
from modules.memory.misspellings import Misspellings

if TYPE_CHECKING:
    from modules.memory.records import MemoryState

__all__ = [
    "LEXICON_VERSION",
    "MAX_GAP",
    "MAX_PHRASE",
    "Lexicon",
    "SubjectTerms",
    "TermIndex",
    "default_lexicon",
    "language_of",
    "lexicon_from",
    "live_terms",
    "named",
    "positions",
    "subject_terms",
]

#: how many other content words may stand among a term's words in the question
MAX_GAP: Final = 1

Position = frozenset[str]


@lru_cache(maxsize=65536)
def _word_keys(word: str, languages: tuple[str, ...]) -> frozenset[str]:
    """A word's keys: its folded form and its Snowball stem in each of ``languages``."""
    return frozenset({f"w:{_fold(word)}", *(f"{lang}:{_stem(lang, word)}" for lang in languages)})


def language_of(text: str, hint: str = "") -> tuple[str, ...]:
    """The languages to stem ``text`` with: ``hint`` when it is one the module stems, else the
    language its function words show (:func:`kernel.vectors.language.detect_language`); both
    when they show none (a bare term such as "return rate" gives no clue)."""
    if hint in LEXICON_LANGUAGES:
        return (hint,)
    found = detect_language(text, LEXICON_LANGUAGES)
    return (found,) if found is not None else LEXICON_LANGUAGES


def _single(lexicon: Lexicon, word: str, languages: tuple[str, ...]) -> tuple[Position, bool]:
    """One word's position: its concept (beside its folded form) or its word keys."""
    concept = _lookup(lexicon, (word,), languages)
    if concept is None:
        return _word_keys(word, languages), False
    return frozenset({f"c:{concept}", f"w:{_fold(word)}"}), concept in lexicon.generic


_NEGATION_KEYS: Final = frozenset(f"w:{_fold(word)}" for word in NEGATIONS)


def _negated(items: Sequence[tuple[Position, bool]]) -> list[tuple[Position, bool]]:
    """A bare negation word ("non", "not", "senza"…, in no lexicon term) is no position of its
    own: the position after it becomes its negation, every key prefixed ``not:``, so "clienti
    non attivi" never meets "cliente attivo", and "pazienti non presentati" meets "paziente
    non presentato"."""
    out: list[tuple[Position, bool]] = []
    negate = False
    for keys, generic in items:
        if keys & _NEGATION_KEYS and not any(key.startswith("c:") for key in keys):
            negate = True
            continue
        if negate:
            keys = frozenset(f"not:{key}" for key in keys)
            negate = False
        out.append((keys, generic))
    return out


def _segments(text: str, lexicon: Lexicon, language: str) -> list[tuple[str | None, list[str]]]:
    """``text``'s content words cut into lexicon terms, longest first from the left:
    ``(concept, words)``, ``concept`` None for a word in no term of two or more words."""
    return segments(_words(text), lexicon, language_of(text, language))


def positions(text: str, lexicon: Lexicon, *, language: str = "") -> list[tuple[Position, bool]]:
    """``text``'s content positions, each its key set and whether it is generic. A word is its
    concept beside its folded form (a loanword the lexicon files under different concepts in
    the two languages, "turnover", still meets itself), or its word keys; a term of several
    words holds its concept and each word's keys ("late deliveries" names "delivery" too), at
    each of its words' positions, so that distances count words however the lexicon cuts them.
    ``language``: the text's, when known (see :func:`language_of`)."""
    languages = language_of(text, language)
    out: list[tuple[Position, bool]] = []
    for concept, words in _segments(text, lexicon, language):
        singles = [_single(lexicon, w, languages) for w in words]
        if concept is None:
            out.append(singles[0])
            continue
        keys = frozenset({f"c:{concept}", f"cc:{concept}"}.union(*(p for p, _ in singles)))
        # one position per word: distances count words, however the lexicon cuts them ("merce
        # al magazzino" is one term, still two words between "consegnato" and "ritardo")
        out.extend([(keys, concept in lexicon.generic)] * len(words))
    return _negated(out)


class SubjectTerms(msgspec.Struct, frozen=True, kw_only=True):
    """A subject's ways of being named: each a tuple of required positions (see the module
    docstring); the subject is named when one of them is met."""

    alternatives: tuple[tuple[Position, ...], ...]

    @property
    def required(self) -> tuple[Position, ...]:
        """The first way (its lexicon terms whole); () when the subject cannot be named."""
        return self.alternatives[0] if self.alternatives else ()


def subject_terms(subject: str, lexicon: Lexicon, *, language: str = "") -> SubjectTerms:
    """A subject's required positions: its lexicon terms whole, the generic ones left out; and,
    when it holds a term of several words, those words one by one ("consegna in ritardo" is
    also "consegne arrivate in ritardo"), the generic ones left out unless that would leave a
    single word to stand for the term ("day surgery" is not any surgery).

    A term whose concept also holds a shorter part of it is broader than the subject ("smart
    meter" filed under ``meter``, "gender pay gap" beside "pay gap"): through that concept the
    subject is met only by a term of several words of it ("divario retributivo di genere"), so
    any meter does not name "smart meter"."""
    languages = language_of(subject, language)
    segments = _segments(subject, lexicon, language)
    whole = _negated(
        [
            (
                frozenset({_concept_key(lexicon, concept, words, languages)}),
                concept in lexicon.generic,
            )
            if concept is not None
            else _single(lexicon, words[0], languages)
            for concept, words in segments
        ]
    )
    ways: list[tuple[Position, ...]] = []
    first = tuple(p for p, generic in whole if not generic)
    if first:
        ways.append(first)
    if any(concept is not None for concept, _ in segments):
        words = [w for _, ws in segments for w in ws]
        singles = _negated([_single(lexicon, w, languages) for w in words])
        split = tuple(p for p, generic in singles if not generic)
        if len(split) <= 1 and len(words) >= 2:
            split = tuple(p for p, _ in singles)
        if split and split not in ways:
            ways.append(split)
    return SubjectTerms(alternatives=tuple(ways))


def _concept_key(
    lexicon: Lexicon, concept: str, words: Sequence[str], languages: tuple[str, ...]
) -> str:
    """A subject term's concept key: ``c:`` (any term of the concept meets it), or ``cc:`` (a
    term of several words only) when the concept is broader than the term."""
    if len(words) > 1 and _holds_a_part(lexicon, concept, words, languages):
        return f"cc:{concept}"
    return f"c:{concept}"


def _holds_a_part(
    lexicon: Lexicon, concept: str, words: Sequence[str], languages: tuple[str, ...]
) -> bool:
    """Whether a shorter run of a term's ``words`` is a term of the same ``concept`` while a
    word outside that run says more than a generic one ("smart" in "smart meter"; not "tasso"
    in "tasso di churn")."""
    for size in range(1, len(words)):
        for start in range(len(words) - size + 1):
            if _lookup(lexicon, words[start : start + size], languages) != concept:
                continue
            rest = [*words[:start], *words[start + size :]]
            if any(not _single(lexicon, w, languages)[1] for w in rest):
                return True
    return False


def _met(required: Sequence[Position], question: Sequence[tuple[Position, bool]]) -> bool:
    where = [[i for i, (keys, _) in enumerate(question) if keys & need] for need in required]
    if not required or any(not places for places in where):
        return False
    limit = len(required) + MAX_GAP
    return any(
        len(set(choice)) == len(choice) and max(choice) - min(choice) + 1 <= limit
        for choice in product(*where)
    )


def named(terms: SubjectTerms, question: Sequence[tuple[Position, bool]]) -> bool:
    """Whether the question's positions name the subject: for one of its ways, every required
    position met, the meeting positions within a span of ``len(required) + MAX_GAP``."""
    return any(_met(way, question) for way in terms.alternatives)


class TermIndex:
    """The subjects of many memories, inverted by key: :meth:`named_in` checks only the
    memories that share a key with the question."""

    def __init__(
        self,
        subjects: Iterable[tuple[str, str, str]],
        lexicon: Lexicon,
        *,
        texts: Iterable[tuple[str, str]] = (),
    ) -> None:
        """``subjects``: ``(id, subject, language)`` triples (language "" when unknown);
        ``texts``: ``(id, text)`` of other items whose written acronyms count
        (:meth:`contradicted_in`: solved questions)."""
        self._terms: dict[str, SubjectTerms] = {}
        self._by_key: dict[str, list[str]] = {}
        subjects = list(subjects)
        self._acronyms = AcronymIndex((item, subject) for item, subject, _ in subjects)
        # only the items that write an acronym: the others are never contradicted
        written = ((i, acronyms_in(t)) for i, t in [*((i, s) for i, s, _ in subjects), *texts])
        self._written = {item: tuple(found) for item, found in written if found}
        self._misspellings = Misspellings(
            _fold(word) for _, subject, _ in subjects for word in _words(subject)
        )
        for item, subject, language in subjects:
            terms = subject_terms(subject, lexicon, language=language)
            if not terms.alternatives:
                continue
            self._terms[item] = terms
            # each way's first position: a question that names the subject meets one of them
            keys = {key for way in terms.alternatives for key in way[0]}
            for key in sorted(keys):
                self._by_key.setdefault(key, []).append(item)
        self._lexicon = lexicon

    def named_in(self, text: str) -> set[str]:
        """The ids whose subject ``text`` names: in its words (any inflection, either language,
        one typo allowed) or by acronym (:mod:`~modules.memory.acronyms`: "AOV" names "average
        order value")."""
        question = self._corrected(positions(text, self._lexicon))
        keys = set().union(*(p for p, _ in question)) if question else set()
        candidates = {item for key in keys for item in self._by_key.get(key, ())}
        found = {item for item in candidates if named(self._terms[item], question)}
        return found | self._acronyms.named_in(text)

    def contradicted_in(self, text: str) -> set[str]:
        """The ids whose subject (or text) writes an acronym, none of which ``text`` writes
        while it writes one of its own (:func:`~modules.memory.acronyms.contradicts`)."""
        asked = acronyms_in(text)
        if not asked:
            return set()
        return {item for item, written in self._written.items() if contradicts(asked, written)}

    def _corrected(self, question: list[tuple[Position, bool]]) -> list[tuple[Position, bool]]:
        """A word no lexicon term holds also meets the subject words it is one typo away from
        (:mod:`~modules.memory.misspellings`: "sinsitri" meets "sinistro")."""
        out = []
        for keys, generic in question:
            if not any(key.startswith("c:") for key in keys):
                extra = set().union(*(self._misspellings.corrections(k) for k in keys))
                keys = keys | extra if extra else keys
            out.append((keys, generic))
        return out


_LAST: list[tuple[MemoryState, str, TermIndex]] = []


def live_terms(state: MemoryState, lexicon: Lexicon | None = None) -> TermIndex:
    """The :class:`TermIndex` of the registry's live memories (the shipped lexicon unless one is
    given). The last one built is kept for the process with the (immutable) state it was built
    from, so a long-lived process (``tht serve``, a benchmark) builds it once per registry
    state, and a state never borrows another's (the kept reference keeps its identity unique)."""
    lexicon = lexicon if lexicon is not None else default_lexicon()
    if _LAST and _LAST[0][0] is state and _LAST[0][1] == lexicon.identity:
        return _LAST[0][2]
    index = TermIndex(
        ((m.memory_id, m.subject, m.language) for m in state.live()),
        lexicon,
        texts=((s.solved_id, f"{s.question}\n{s.rewritten}") for s in state.solved.values()),
    )
    _LAST[:] = [(state, lexicon.identity, index)]
    return index
