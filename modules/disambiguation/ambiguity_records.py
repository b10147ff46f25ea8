"""The records of F1's ambiguity detection: what :func:`~modules.disambiguation.ambiguity.
detect_ambiguities` reports and what F1's policy turns into reviews.

- :class:`Ambiguity`: a term of the question (its words, its span) that maps to more than one
  reading; its **target group** (the catalog elements the readings point at) and its informed
  **options**: one per reading, each carrying the event it records when chosen
  (``concept_clarified`` with ``target`` and ``alternatives``, or ``value_grounded`` with
  ``value`` and ``column``), and always a last "leave open" option recording ``ambiguity_open``;
- :class:`UnanswerableTerm`: a content term that maps to nothing in the catalog, the glossary or
  the values (distinct from ambiguous);
- :class:`GlossaryEntry`: what one Evidence unit says a term means (the glossary input);
- :class:`ValueLookup`: where a value occurs (``value → ["table.column", ...]``; the value index
  of catalog sync implements it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import msgspec

from kernel import events as ev

__all__ = [
    "KIND_ORDER",
    "OPEN_OPTION",
    "Ambiguity",
    "AmbiguityKind",
    "AmbiguityOption",
    "AmbiguityReport",
    "FoundValue",
    "GlossaryEntry",
    "ReadingKind",
    "UnanswerableTerm",
    "ValueLookup",
]

#: - ``glossary_conflict``: two glossary units define the term differently
#: - ``precomputed_aggregate``: a measure to aggregate and a precomputed aggregate of it (AmbiQT P)
#: - ``value_columns``: a value that occurs in several columns (or a value and a column)
#: - ``joinable_attribute``: an attribute that lives in two joinable tables (AmbiQT J)
AmbiguityKind = Literal[
    "glossary_conflict", "precomputed_aggregate", "value_columns", "joinable_attribute"
]
#: the report's order, most decision-relevant first: conflicting definitions change what is
#: counted; a precomputed aggregate may differ from the one computed now; a value's column
#: changes the filter; a copy of an attribute in a joined table usually holds the same data
KIND_ORDER: tuple[AmbiguityKind, ...] = (
    "glossary_conflict",
    "precomputed_aggregate",
    "value_columns",
    "joinable_attribute",
)
ReadingKind = Literal["column", "table", "value", "definition", "open"]
#: the id of the "leave open" option of every ambiguity
OPEN_OPTION = "open"


class AmbiguityOption(msgspec.Struct, frozen=True, kw_only=True):
    """One reading of the term, or the explicit "leave open"; ``event`` is what choosing it
    records (its ``subject`` is the term)."""

    id: str
    label: str
    reading: ReadingKind
    target: str | None
    event: ev.ProposedEvent

    def review_option(self) -> ev.ReviewOptionPayload:
        return ev.ReviewOptionPayload(id=self.id, label=self.label, events=(self.event,))


class Ambiguity(msgspec.Struct, frozen=True, kw_only=True):
    term: str
    #: the term's code point span in the question, end exclusive
    span: tuple[int, int]
    #: why it is ambiguous, the first one deciding its place in the report
    kinds: tuple[AmbiguityKind, ...]
    #: the catalog elements the readings point at (``table.column`` or ``table``)
    target_group: tuple[str, ...]
    #: what the reviewer is asked
    prompt: str
    options: tuple[AmbiguityOption, ...]

    @property
    def kind(self) -> AmbiguityKind:
        return self.kinds[0]

    @property
    def readings(self) -> tuple[AmbiguityOption, ...]:
        """The options but "leave open"."""
        return tuple(o for o in self.options if o.reading != "open")


class UnanswerableTerm(msgspec.Struct, frozen=True, kw_only=True):
    term: str
    span: tuple[int, int]
    reason: str


class FoundValue(msgspec.Struct, frozen=True, kw_only=True):
    """A span of the question the value index found, and every ``table.column`` holding it."""

    text: str
    span: tuple[int, int]
    columns: tuple[str, ...]


class AmbiguityReport(msgspec.Struct, frozen=True, kw_only=True):
    question: str
    #: most decision-relevant first (:data:`KIND_ORDER`, then question order): F1 shows the
    #: first one not yet decided
    ambiguities: tuple[Ambiguity, ...] = ()
    unanswerable: tuple[UnanswerableTerm, ...] = ()
    #: the values the question names (F1's intent questions: a value names its dimension)
    values: tuple[FoundValue, ...] = ()


class GlossaryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """What one glossary unit says ``term`` means (``target``: the catalog element, if any)."""

    term: str
    definition: str
    unit: str
    target: str | None = None


class ValueLookup(Protocol):
    """Where a value occurs: the ``table.column`` names of every column holding it (exact or
    normalized match, the index decides), an empty sequence when none does."""

    def __call__(self, value: str, /) -> Sequence[str]: ...
