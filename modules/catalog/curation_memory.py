"""A human's curation decision outlives what it is about: the one mechanism. Pure.

A Catalog Table, Column or Logical Relationship leaves the catalog when a completed sync no
longer observes it (dropped in the database, its table dropped or renamed, a sync against
another database) or by a Catalog Metadata Cleanup, and a later sync that observes it again
makes it anew. Whatever a human decided about it would go with it — and anyone may run a sync:
an agent that points ``workspace.yaml`` at a copy of the database without the object, syncs,
points it back and syncs again would undo the decision without any human step (the "two-sync
trick"). So the fold also remembers each human decision for the object's **identity** and gives
it back to an object it observes anew. Three kinds use this memory:

- Sensitive Data Flags, by column (modules/catalog/flag_decisions.py);
- Descriptions, by table and by column (modules/catalog/description_decisions.py);
- Logical and Permanent Relationship Deletions, Restores and Manual Relationships, by
  relationship (modules/catalog/relationship_decisions.py).

A decision's **spelling** is the names it is about as the catalog spelt them then
(``("people", "email")``); its **identity** is the spelling case-folded, as the catalog matches
names. :class:`CurationMemory` keeps the last decision per spelling:

- :meth:`~CurationMemory.remember` — a new decision replaces the one recorded for its spelling,
  and those of the other spellings of its identity that the catalog no longer carries (the same
  object, renamed in case); an object present under another spelling (two columns that differ
  only in case: PostgreSQL's quoted identifiers) keeps its own.
- :meth:`~CurationMemory.recall` — what an object observed under a spelling gets: its own
  spelling's decision; else those of the other spellings of its identity (each kind says how
  it reads several); none when no human ever decided.

Only human entries reach it (the fold checks the actor first); nothing is written to the ledger
for it. The index by identity is built on first use, so a fold that meets neither a decision nor
a newly observed object costs nothing here; the frozen tuple is ordered by ``(seq, spelling)``,
a total order, so folding a ledger whole or in two parts gives the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

__all__ = ["CurationMemory", "Decided", "Spelling", "identity"]

Spelling = tuple[str, ...]


class Decided(Protocol):
    """What a remembered decision has: the seq of the entry that recorded it."""

    @property
    def seq(self) -> int: ...


D = TypeVar("D", bound=Decided)


def identity(spelling: Spelling) -> Spelling:
    """The identity a spelling names (case-folded as the catalog matches names)."""
    return tuple(name.lower() for name in spelling)


class CurationMemory(Generic[D]):
    """The humans' last decisions of one kind, by identity (one per spelling)."""

    def __init__(self, decisions: tuple[D, ...], spelling: Callable[[D], Spelling]) -> None:
        self._frozen = decisions
        self._spelling = spelling
        self._index: dict[Spelling, list[D]] | None = None

    def __bool__(self) -> bool:
        return bool(self._frozen) if self._index is None else bool(self._index)

    def _by_identity(self) -> dict[Spelling, list[D]]:
        if self._index is None:
            self._index = {}
            for decision in self._frozen:
                key = identity(self._spelling(decision))
                self._index.setdefault(key, []).append(decision)
        return self._index

    def remember(self, decision: D, present: Callable[[D], bool]) -> None:
        """Record ``decision``; ``present(old)``: whether the catalog carries ``old``'s
        spelling now (then ``old`` stays, for that object)."""
        index = self._by_identity()
        spelled = self._spelling(decision)
        key = identity(spelled)
        kept = [
            old for old in index.get(key, []) if self._spelling(old) != spelled and present(old)
        ]
        index[key] = [*kept, decision]

    def recall(self, spelling: Spelling) -> list[D]:
        """``[own]`` when ``spelling`` has a decision; else the decisions of the other
        spellings of its identity, oldest first; ``[]`` when no human decided."""
        if not self:
            return []
        found = self._by_identity().get(identity(spelling), [])
        own = [d for d in found if self._spelling(d) == spelling]
        return own or sorted(found, key=self._order)

    def __iter__(self) -> Iterator[D]:
        return iter(self.freeze())

    def _order(self, decision: D) -> tuple[int, Spelling]:
        return decision.seq, self._spelling(decision)

    def freeze(self) -> tuple[D, ...]:
        """For :class:`~modules.catalog.records.CatalogState`: every decision, oldest first."""
        if self._index is None:
            return self._frozen
        return tuple(sorted((d for ds in self._index.values() for d in ds), key=self._order))
