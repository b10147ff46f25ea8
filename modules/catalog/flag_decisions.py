"""A human's Sensitive Data Flag decision outlives its column. Pure.

A decision (``sensitive_flag_set``, on or off) is about a column **identity**: ``table.column``
as the catalog spells it, matched case-insensitively as the catalog matches names. The fold keeps
the last one per spelling (:class:`~modules.catalog.records.FlagDecision`,
``CatalogState.flag_decisions``), and a column a completed sync observes anew — after it was
dropped in the database, its table dropped or renamed, the column renamed, a Catalog Metadata
Cleanup, or a sync against another database — gets it back. Without this, two syncs erased a
human's flag without any human step: an agent pointed ``workspace.yaml`` at a copy of the
database without the column, synced, pointed it back and synced again, and the column came back
unflagged (its values then shown by ``sql run``, ``catalog sample`` and the value index).

:class:`FlagDecisions` is the fold's working copy (as ``CatalogContent`` is for the tables):

- :meth:`~FlagDecisions.remember` — a new decision replaces the one recorded for its spelling,
  and those of the other spellings of its identity that no Catalog Column carries now (the same
  column, renamed in case); a column present under another spelling (two columns that differ
  only in case: PostgreSQL's quoted identifiers) keeps its own.
- :meth:`~FlagDecisions.decided` — the decision a newly observed column gets: its own
  spelling's; else, when other spellings of its identity have one, *on* if any of them is on
  (fail safe), else off; None when no human ever decided (the glossary's default: not
  sensitive).
- :meth:`~FlagDecisions.restore` — :meth:`~FlagDecisions.decided` applied to the columns a
  completed sync added.

Only human decisions are kept: a Sensitive Data Suggestion Run (offline pre-pass or model) only
proposes and is never remembered; a flag line by anyone else is a problem the fold ignores. The
index by identity is built on first use, so a fold that meets neither a flag nor a newly
observed column costs nothing here; the frozen tuple is ordered by seq (canonical: folding a
ledger whole or in two parts gives the same state).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import msgspec

from modules.catalog.records import CatalogTable, FlagDecision

__all__ = ["FlagDecisions", "identity"]

_Identity = tuple[str, str]


def identity(table: str, column: str) -> _Identity:
    """The column identity a decision is about (case-folded as the catalog matches names)."""
    return table.lower(), column.lower()


def _present(tables: Mapping[str, CatalogTable], table: str, column: str) -> bool:
    found = tables.get(table)
    return found is not None and found.column(column) is not None


class FlagDecisions:
    """The humans' last flag decisions, by column identity (one per spelling)."""

    def __init__(self, decisions: tuple[FlagDecision, ...] = ()) -> None:
        self._frozen = decisions
        self._index: dict[_Identity, list[FlagDecision]] | None = None

    def _by_identity(self) -> dict[_Identity, list[FlagDecision]]:
        if self._index is None:
            self._index = {}
            for decision in self._frozen:
                key = identity(decision.table, decision.column)
                self._index.setdefault(key, []).append(decision)
        return self._index

    def remember(self, decision: FlagDecision, tables: Mapping[str, CatalogTable]) -> None:
        """Record ``decision`` (``tables``: the catalog when it was taken)."""
        index = self._by_identity()
        key = identity(decision.table, decision.column)
        spelled = (decision.table, decision.column)
        kept = [
            old
            for old in index.get(key, [])
            if (old.table, old.column) != spelled and _present(tables, old.table, old.column)
        ]
        index[key] = [*kept, decision]

    def decided(self, table: str, column: str) -> bool | None:
        """The flag a newly observed ``table.column`` gets back; None: no human ever decided."""
        found = self._by_identity().get(identity(table, column), [])
        if not found:
            return None
        for decision in found:
            if (decision.table, decision.column) == (table, column):
                return decision.sensitive
        return any(d.sensitive for d in found)

    def restore(
        self, tables: Mapping[str, CatalogTable], added: Collection[tuple[str, str]]
    ) -> dict[str, CatalogTable]:
        """The tables whose newly observed columns (``added``) get a human's decision back."""
        if not added or not (self._frozen or self._index):
            return {}
        changed: dict[str, CatalogTable] = {}
        for table_name, column_name in sorted(added):
            flag = self.decided(table_name, column_name)
            table = changed.get(table_name) or tables.get(table_name)
            if flag is None or table is None:
                continue
            column = table.column(column_name)
            if column is None or column.sensitive == flag:
                continue
            flagged = msgspec.structs.replace(column, sensitive=flag)
            columns = tuple(flagged if c.name == column_name else c for c in table.columns)
            changed[table_name] = msgspec.structs.replace(table, columns=columns)
        return changed

    def freeze(self) -> tuple[FlagDecision, ...]:
        """For :class:`~modules.catalog.records.CatalogState`: every decision, oldest first."""
        if self._index is None:
            return self._frozen
        return tuple(sorted((d for ds in self._index.values() for d in ds), key=lambda d: d.seq))
