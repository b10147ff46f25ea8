"""A human's Description outlives its table or column. Pure.

A Description is human curation: written by hand (``description_set``) or by a Description
Consolidation (``descriptions_consolidated``, a human choosing a Generated Description). Each is
also remembered for its target's **identity** — ``table``, or ``table.column`` — as the catalog
spells it, matched case-insensitively as the catalog matches names (the mechanism and its
spelling rule: modules/catalog/curation_memory.py; ``CatalogState.description_decisions``). A
table or column that a completed sync observes anew — after it was dropped in the database, its
table dropped or renamed, the column renamed, a Catalog Metadata Cleanup, a sync against another
database — gets the last one back: its ``description``, ``description_seq`` (the entry that
wrote it) and a history of that one step. Without this, an agent that pointed ``workspace.yaml``
at a copy of the database without the table, synced, pointed it back and synced again found the
table back without its Description, with no human step.

- Only the Description is remembered: a Generated Description is a proposal (by a Description
  Generation Run or an agent) and the object observed anew has none.
- A column's type is not part of its identity (as for the Sensitive Data Flag): a column
  observed again with another type gets its Description back; a human who finds it wrong
  writes another.
- Across spellings: a target observed under a spelling no human described, while other
  spellings of its identity have Descriptions, gets the latest of them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

import msgspec

from kernel import catalog_events as cev
from kernel import events as ev
from modules.catalog.curation_memory import CurationMemory
from modules.catalog.flag_decisions import present_column
from modules.catalog.records import (
    CatalogColumn,
    CatalogTable,
    DescriptionChange,
    DescriptionDecision,
)

__all__ = ["DescriptionDecisions"]


def _spelling(decision: DescriptionDecision) -> tuple[str, ...]:
    return (decision.table,) if decision.column is None else (decision.table, decision.column)


def _split(tables: Mapping[str, CatalogTable], target: str) -> tuple[str, str | None]:
    """A ledger target as (table, column); column None: the table (the name ends at the first
    dot, unless a table carries the whole name)."""
    if target in tables:
        return target, None
    table, _, column = target.partition(".")
    return table, column


def _present(tables: Mapping[str, CatalogTable], decision: DescriptionDecision) -> bool:
    if decision.column is None:
        return decision.table in tables
    return present_column(tables, decision.table, decision.column)


class DescriptionDecisions:
    """The humans' last Descriptions, by table and column identity (one per spelling)."""

    def __init__(self, decisions: tuple[DescriptionDecision, ...] = ()) -> None:
        self._memory = CurationMemory(decisions, _spelling)

    def remember(self, event: ev.Event, tables: Mapping[str, CatalogTable]) -> None:
        """Record what a human's ``description_set`` or ``descriptions_consolidated`` wrote
        (``tables``: the catalog after it); a Generated Description is not a decision."""
        kind: Literal["set", "consolidated"]
        if isinstance(event, cev.DescriptionSet):
            targets: tuple[str, ...] = (event.payload.target,)
            kind = "set"
        elif isinstance(event, cev.DescriptionsConsolidated):
            targets = tuple(item.target for item in event.payload.targets)
            kind = "consolidated"
        else:
            return
        for target in targets:
            table_name, column_name = _split(tables, target)
            table = tables[table_name]
            record = table if column_name is None else table.column(column_name)
            assert record is not None  # the fold applied the entry to it
            decision = DescriptionDecision(
                table=table_name,
                column=column_name,
                text=record.description,
                kind=kind,
                seq=event.seq,
                actor=event.actor,
            )
            self._memory.remember(decision, lambda old: _present(tables, old))

    def decided(self, table: str, column: str | None = None) -> DescriptionDecision | None:
        """The Description a newly observed table (``column`` None) or column gets back."""
        found = self._memory.recall((table,) if column is None else (table, column))
        return found[-1] if found else None

    def restored(self, tables: Mapping[str, CatalogTable], target: str, text: str) -> bool:
        """Whether ``target``'s Description is ``text`` as :meth:`restore` puts it back (the
        remembered decision as its one step): a ``description_set`` of that text, which an
        older tht recorded after two syncs erased it, is then a no-op in the fold, not a
        problem. (A first Description written again word for word looks the same; the command
        refuses it, and as a line it changes nothing either way.)"""
        table_name, column_name = _split(tables, target)
        table = tables.get(table_name)
        record = table if table is None or column_name is None else table.column(column_name)
        decision = self.decided(table_name, column_name)
        if record is None or decision is None or record.description != text:
            return False
        return record.description_history == _described(decision)["description_history"]

    def restore(
        self,
        tables: Mapping[str, CatalogTable],
        added_tables: Collection[str],
        added_columns: Collection[tuple[str, str]],
    ) -> dict[str, CatalogTable]:
        """The tables whose newly observed selves (``added_tables``) or columns
        (``added_columns``) get a human's Description back."""
        if not self._memory or not (added_tables or added_columns):
            return {}
        changed: dict[str, CatalogTable] = {}
        for name in sorted(added_tables):
            table = tables.get(name)
            decision = self.decided(name)
            if table is not None and decision is not None and not table.description:
                changed[name] = msgspec.structs.replace(table, **_described(decision))
        for table_name, column_name in sorted(added_columns):
            table = changed.get(table_name) or tables.get(table_name)
            column = table.column(column_name) if table is not None else None
            decision = self.decided(table_name, column_name)
            if table is None or column is None or decision is None or column.description:
                continue
            described: CatalogColumn = msgspec.structs.replace(column, **_described(decision))
            columns = tuple(described if c.name == column_name else c for c in table.columns)
            changed[table_name] = msgspec.structs.replace(table, columns=columns)
        return changed

    def freeze(self) -> tuple[DescriptionDecision, ...]:
        return self._memory.freeze()


def _described(decision: DescriptionDecision) -> dict[str, object]:
    step = DescriptionChange(seq=decision.seq, kind=decision.kind, actor=decision.actor)
    return {
        "description": decision.text,
        "description_seq": decision.seq,
        "description_history": (step,),
    }
