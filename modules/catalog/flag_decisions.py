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

The memory is modules/catalog/curation_memory.py's (one per spelling; a new decision replaces
those of the other spellings that no Catalog Column carries now). :class:`FlagDecisions` reads
it for flags:

- :meth:`~FlagDecisions.decided` — the decision a newly observed column gets: its own
  spelling's; else, when other spellings of its identity have one, *on* if any of them is on
  (fail safe), else off; None when no human ever decided (the glossary's default: not
  sensitive).
- :meth:`~FlagDecisions.restore` — :meth:`~FlagDecisions.decided` applied to the columns a
  completed sync added.

Only human decisions are kept: a Sensitive Data Suggestion Run (offline pre-pass or model) only
proposes and is never remembered; a flag line by anyone else is a problem the fold ignores.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import msgspec

from modules.catalog.curation_memory import CurationMemory
from modules.catalog.records import CatalogTable, FlagDecision

__all__ = ["FlagDecisions", "identity", "present_column"]

_Identity = tuple[str, str]


def identity(table: str, column: str) -> _Identity:
    """The column identity a decision is about (case-folded as the catalog matches names)."""
    return table.lower(), column.lower()


def present_column(tables: Mapping[str, CatalogTable], table: str, column: str) -> bool:
    """Whether the catalog carries ``table.column`` (exactly so spelt)."""
    found = tables.get(table)
    return found is not None and found.column(column) is not None


def _spelling(decision: FlagDecision) -> tuple[str, str]:
    return decision.table, decision.column


class FlagDecisions:
    """The humans' last flag decisions, by column identity (one per spelling)."""

    def __init__(self, decisions: tuple[FlagDecision, ...] = ()) -> None:
        self._memory = CurationMemory(decisions, _spelling)

    def remember(self, decision: FlagDecision, tables: Mapping[str, CatalogTable]) -> None:
        """Record ``decision`` (``tables``: the catalog when it was taken)."""
        self._memory.remember(decision, lambda old: present_column(tables, old.table, old.column))

    def decided(self, table: str, column: str) -> bool | None:
        """The flag a newly observed ``table.column`` gets back; None: no human ever decided."""
        found = self._memory.recall((table, column))
        return any(d.sensitive for d in found) if found else None

    def restore(
        self, tables: Mapping[str, CatalogTable], added: Collection[tuple[str, str]]
    ) -> dict[str, CatalogTable]:
        """The tables whose newly observed columns (``added``) get a human's decision back."""
        if not added or not self._memory:
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
        return self._memory.freeze()
