"""Term matching for F1's ambiguity detection: which words of the question name which tables and
columns of the catalog. Pure and deterministic.

- **Folding**: Unicode NFKD, combining marks (accents) removed, case folded; a question is cut
  into word tokens (letters and digits), each remembering its raw span and whether punctuation
  ends the clause after it (a term never spans a comma).
- **Identifiers** are split into words at ``_``, ``-``, spaces, camelCase and digit boundaries
  (``unitPrice`` → ``unit price``, ``tot_ricoveri`` → ``tot ricoveri``).
- **Stems**: every word gets one stem per language (Snowball English and Italian by default, so
  singular and plural meet: ``ospedali``/``ospedale``, ``categories``/``category``). A phrase's
  keys are, per language, its words' stems joined, and the stem of its words written together
  (so ``unit price`` meets ``unitprice`` and ``unit_price``).
- **Forms** of a column: its full name and, when its first words name its table (``ward_beds`` in
  ``wards``), the rest (``beds``). A table's form is its name.

A phrase (one to four tokens within a clause, not starting or ending with a stopword) matches an
element at **tier 0** when its keys meet one of the element's forms, at **tier 1** when it is a
contiguous part of a longer identifier (``admission date`` in ``first_admission_date``;
``type`` at the end of ``unittype``; one typo in a word of six letters or more).
:func:`match_terms` takes the longest phrases first, tier 0 before tier 1 at each length
(a phrase of several words naming only tables waits for the phrases naming columns), and gives
every token to at most one term.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from kernel.schema_view import SchemaView
from kernel.vectors.stopwords import STOPWORDS

__all__ = [
    "MAX_PHRASE",
    "Element",
    "Lexicon",
    "Stemmer",
    "Term",
    "Token",
    "default_stem",
    "fold_text",
    "identifier_words",
    "match_terms",
    "tokenize",
]

#: a word → its stems, one per language in a fixed order
Stemmer = Callable[[str], list[str]]

#: the longest phrase a term may be, in tokens
MAX_PHRASE = 4
_STOP = frozenset().union(*STOPWORDS.values())
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CLAUSE_END = re.compile(r"[,;:.!?()\[\]{}\"“”«»]")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)
#: a tier-1 match inside a compound identifier leaves at most this many letters after it
_INFLECTION = 4
#: words this long or longer may match a name with one typo
_TYPO_MIN = 6


def fold_text(text: str) -> str:
    """Case and accents folded (``Città`` → ``citta``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@dataclass(frozen=True)
class Token:
    text: str  # folded
    raw: str
    start: int
    end: int
    #: punctuation between this token and the next one: a term never crosses it
    clause_end: bool

    @property
    def stop(self) -> bool:
        return self.text in _STOP


def tokenize(question: str) -> list[Token]:
    """The question's word tokens, folded, with their raw spans."""
    tokens: list[Token] = []
    matches = list(_TOKEN.finditer(question))
    for i, m in enumerate(matches):
        after = question[m.end() : matches[i + 1].start()] if i + 1 < len(matches) else "."
        tokens.append(
            Token(
                text=fold_text(m.group()),
                raw=m.group(),
                start=m.start(),
                end=m.end(),
                clause_end=bool(_CLAUSE_END.search(after)),
            )
        )
    return tokens


@lru_cache(maxsize=1 << 14)
def identifier_words(name: str) -> tuple[str, ...]:
    """``unitPrice`` / ``unit_price`` / ``Unit Price`` → ``("unit", "price")``."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    words: list[str] = []
    for part in re.split(r"[\W_]+", plain, flags=re.UNICODE):
        words.extend(fold_text(w) for w in _CAMEL.findall(part))
    return tuple(w for w in words if w)


_STEMMERS: list[object] = []


@lru_cache(maxsize=1 << 15)
def _snowball(word: str) -> tuple[str, ...]:
    if not _STEMMERS:
        import snowballstemmer

        _STEMMERS.extend(snowballstemmer.stemmer(lang) for lang in ("english", "italian"))
    if len(word) <= 2 or word.isdigit():
        return (word,) * len(_STEMMERS)
    return tuple(s.stemWord(word) for s in _STEMMERS)  # type: ignore[attr-defined]


def default_stem(word: str) -> list[str]:
    """The English and the Italian Snowball stems of a folded word."""
    return list(_snowball(word))


@dataclass(frozen=True)
class Element:
    """A table (``column`` is None) or a column of the catalog."""

    table: str
    column: str | None = None

    @property
    def target(self) -> str:
        return self.table if self.column is None else f"{self.table}.{self.column}"


@dataclass(frozen=True)
class Term:
    """A phrase of the question and the elements it names (at its best tier)."""

    text: str  # the raw words, as written
    folded: str
    start: int
    end: int
    tier: int
    elements: tuple[Element, ...]
    tokens: tuple[int, ...]  # token indexes

    @property
    def columns(self) -> tuple[Element, ...]:
        return tuple(e for e in self.elements if e.column is not None)

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(e.table for e in self.elements if e.column is None)


class Lexicon:
    """The catalog's tables and columns indexed by the keys of their forms."""

    def __init__(self, view: SchemaView, stem: Stemmer) -> None:
        self.stem = stem
        self._exact: dict[str, set[Element]] = {}
        self._parts: dict[str, set[Element]] = {}
        self._compounds: list[tuple[str, Element]] = []
        self._words: set[str] = set()
        for table in view.tables():
            t_words = identifier_words(table.name)
            self._add_exact(t_words, Element(table.name))
            for column in table.columns:
                element = Element(table.name, column.name)
                words = identifier_words(column.name)
                self._add_exact(words, element)
                reduced = self._reduced(words, t_words)
                if reduced:
                    self._add_exact(reduced, element)
                self._add_parts(words, element)
            self._add_parts(t_words, Element(table.name))

    def keys(self, words: Sequence[str]) -> frozenset[str]:
        """Per language: the words' stems joined, and the stem of the words written together."""
        stems = [self.stem(w) for w in words]
        width = max((len(s) for s in stems), default=0)
        together = self.stem("".join(words)) if len(words) > 1 else []
        keys = set()
        for lang in range(width):
            keys.add("".join(s[min(lang, len(s) - 1)] for s in stems))
            if together:
                keys.add(together[min(lang, len(together) - 1)])
        return frozenset(keys)

    def _reduced(self, words: tuple[str, ...], table_words: tuple[str, ...]) -> tuple[str, ...]:
        """The column's words after those that name its table: the table's first words
        (``ward_beds`` in ``wards``, ``item_label`` in ``items_item_label``), or one of its words
        (``order_date`` in ``sales_orders``)."""
        for k in range(min(len(table_words), len(words) - 1), 0, -1):
            if self.keys(words[:k]) & self.keys(table_words[:k]):
                return words[k:]
        if len(words) > 1 and any(self.keys(words[:1]) & self.keys([w]) for w in table_words):
            return words[1:]
        return ()

    def _add_exact(self, words: Sequence[str], element: Element) -> None:
        self._words.update(w for w in words if not w.isdigit())
        for key in self.keys(words):
            self._exact.setdefault(key, set()).add(element)

    def _add_parts(self, words: tuple[str, ...], element: Element) -> None:
        n = len(words)
        if n == 1 and len(words[0]) >= 6:
            self._compounds.append((words[0], element))
        for size in range(1, n):
            for i in range(n - size + 1):
                part = words[i : i + size]
                if all(w in _STOP or w.isdigit() for w in part):
                    continue
                for key in self.keys(part):
                    self._parts.setdefault(key, set()).add(element)

    def lookup(self, words: Sequence[str], tier: int) -> set[Element]:
        """The elements ``words`` name at ``tier`` (tier 1 tries one typo last)."""
        found = self._indexed(words, tier)
        if tier == 1 and not found and len(words) == 1:
            for near in self._near(words[0]):
                found |= self._indexed([near], 0) | self._indexed([near], 1)
        return found

    def _indexed(self, words: Sequence[str], tier: int) -> set[Element]:
        index = self._exact if tier == 0 else self._parts
        found: set[Element] = set()
        for key in self.keys(words):
            found |= index.get(key, set())
        if tier == 1:
            found |= self._in_compounds(words)
        return found

    def _near(self, word: str) -> list[str]:
        """Names' words one typo away from ``word`` (both at least :data:`_TYPO_MIN` letters:
        a letter missing, added, changed, or two swapped)."""
        if len(word) < _TYPO_MIN or not word.isalpha():
            return []
        return sorted(w for w in self._words if len(w) >= _TYPO_MIN and _one_edit(word, w))

    def _in_compounds(self, words: Sequence[str]) -> set[Element]:
        joined = "".join(words)
        if len(joined) < 4:
            return set()
        probes = {joined, *(s for s in self.stem(joined) if len(s) >= 4)}
        found = set()
        for compound, element in self._compounds:
            if compound == joined:
                continue
            for probe in probes:
                at = compound.find(probe)
                if at == 0 or (at > 0 and len(compound) - at - len(probe) <= _INFLECTION):
                    found.add(element)
                    break
        return found

    def loosely_named(self, word: str) -> bool:
        """Whether a folded word names anything even loosely: a term of any tier, or a stem
        (four letters or more) that starts a name's word or that a name's word starts."""
        if self.lookup([word], 0) or self.lookup([word], 1):
            return True
        probes = {word, *(s for s in self.stem(word) if len(s) >= 4)}
        return any(
            name.startswith(probe) or (len(name) >= 4 and probe.startswith(name))
            for name in self._words
            for probe in probes
        )


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one edit (Damerau: a swap counts as one)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) < len(b):
        return a[i:] == b[i + 1 :]
    if a[i + 1 :] == b[i + 1 :]:
        return True
    return i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]


def _windows(tokens: Sequence[Token], taken: set[int], size: int) -> Iterable[tuple[int, ...]]:
    for i in range(len(tokens) - size + 1):
        span = tuple(range(i, i + size))
        if any(j in taken for j in span):
            continue
        if any(tokens[j].clause_end for j in span[:-1]):
            continue
        if tokens[span[0]].stop or tokens[span[-1]].stop:
            continue
        yield span


def match_terms(
    tokens: Sequence[Token],
    lexicon: Lexicon,
    question: str,
    *,
    not_alone: frozenset[str] = frozenset(),
) -> list[Term]:
    """The question's terms, in question order: longest phrases first, tier 0 before tier 1 at
    each length, except that a phrase of several words naming only tables waits until every
    phrase naming a column is found (*hospital region* is the hospital's region before it is a
    table ``hospital_region``). Every token belongs to at most one term. A word of
    ``not_alone`` (aggregate words) is a tier-1 term only inside a longer phrase: ``total``
    alone is not a part of ``cost_total``."""
    taken: set[int] = set()
    terms: list[Term] = []
    for deferred in (False, True):
        for size in range(MAX_PHRASE, 0 if not deferred else 1, -1):
            for tier in (0, 1):
                for span in _windows(tokens, taken, size):
                    if any(j in taken for j in span):
                        continue
                    words = [tokens[j].text for j in span]
                    if tier == 1 and size == 1 and (len(words[0]) < 3 or words[0] in not_alone):
                        continue
                    found = lexicon.lookup(words, tier)
                    if not found:
                        continue
                    tables_only = size > 1 and all(e.column is None for e in found)
                    if tables_only != deferred:
                        continue
                    taken.update(span)
                    terms.append(_term(question, tokens, span, words, tier, found))
    terms.sort(key=lambda t: t.start)
    return terms


def _term(
    question: str,
    tokens: Sequence[Token],
    span: tuple[int, ...],
    words: list[str],
    tier: int,
    found: set[Element],
) -> Term:
    start, end = tokens[span[0]].start, tokens[span[-1]].end
    return Term(
        text=question[start:end],
        folded=" ".join(words),
        start=start,
        end=end,
        tier=tier,
        elements=tuple(sorted(found, key=lambda e: e.target)),
        tokens=span,
    )
