"""The Metadata Catalog's folded records (glossary "Catalogo dei metadati"): plain, frozen data.

- :class:`CatalogTable` / :class:`CatalogColumn` — the persisted representation of a Physical
  Table / Column: observed facts governed by synchronization, plus Catalog Metadata
  (``description``, ``generated``, ``sensitive``) that a resync keeps for the same names.
  The Description is set by a human (``description_set``) or by a Description Consolidation
  (``descriptions_consolidated``); ``generated`` is the latest Generated Description, a
  proposal that never changes the Description by itself (:class:`GeneratedDescription`), and
  ``description_history`` lists every step (:class:`DescriptionChange`); all of it goes with
  the column when the column leaves the catalog, and a human's Description comes back with its
  identity (:class:`DescriptionDecision`). The Sensitive Data Flag is set by a human
  only (``sensitive_flag_set``); a resync keeps it for the same name.
- :class:`FlagDecision` — a human's last Sensitive Data Flag decision about a column identity
  (``CatalogState.flag_decisions``): it outlives the column, so a column that leaves the
  catalog and is observed again gets it back (modules/catalog/flag_decisions.py).
- :class:`DescriptionDecision` / :class:`RelationshipDecision` — likewise a human's last
  Description of a table or column identity, and last Deletion / Restore of a Logical
  Relationship identity (modules/catalog/curation_memory.py).
- :class:`CatalogRelationship` — a declared foreign key as observed.
- :class:`LogicalRelationship` — Generated or Manual; ``active`` or ``deleted`` (a Logical
  Relationship Deletion: the record stays, as an exclusion). A Permanent Relationship Deletion
  removes the record.
- :class:`CatalogSyncRun` — a Catalog Sync Run: scope, status, what it recorded.
- :class:`SensitiveSuggestionRun` — a Sensitive Data Suggestion Run: scope, mode and aggregate
  counts only (its proposals are shown, never kept).
- :class:`DescriptionGenerationRun` — a Description Generation Run: status and aggregate counts.
- :class:`CatalogState` — the whole fold; ``problems`` are ledger entries the fold refused.

The per-table and per-relationship records are many (20,000 columns for a 1,000-table database)
and hold only strings, numbers and tuples of records, never a cycle: ``gc=False`` keeps the
cyclic garbage collector from walking them on every allocation burst.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "CatalogColumn",
    "CatalogProblem",
    "CatalogRelationship",
    "CatalogState",
    "CatalogSyncRun",
    "CatalogTable",
    "DescriptionChange",
    "DescriptionDecision",
    "DescriptionGenerationRun",
    "FlagDecision",
    "GeneratedDescription",
    "LogicalRelationship",
    "RelationshipDecision",
    "SensitiveSuggestionRun",
]


class GeneratedDescription(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The latest Generated Description of a table or column (``description_generated``)."""

    text: str
    language: str
    source: str  # ``model:<profile>`` | ``agent``
    run: str | None = None
    non_generatable: bool = False
    reason: str = ""
    seq: int  # where it was recorded
    actor: str


class DescriptionChange(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One step of a target's description history."""

    seq: int
    kind: Literal["set", "generated", "consolidated"]
    actor: str


class CatalogColumn(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    name: str
    position: int
    type: str
    nullable: bool = True
    pk: bool = False
    pk_position: int = 0
    comment: str = ""  # observed in the database; never a Description
    description: str = ""  # Catalog Metadata (curated)
    sensitive: bool = False  # the Sensitive Data Flag: false by default, also for new columns
    generated: GeneratedDescription | None = None  # the latest Generated Description
    description_seq: int = 0  # where the Description was last set or consolidated
    description_history: tuple[DescriptionChange, ...] = ()


class CatalogTable(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    name: str
    kind: Literal["table", "view"] = "table"
    columns: tuple[CatalogColumn, ...] = ()
    comment: str = ""
    description: str = ""
    generated: GeneratedDescription | None = None
    description_seq: int = 0
    description_history: tuple[DescriptionChange, ...] = ()
    #: Catalog Freshness: the structure version this table was last synced at
    synced_version: str = ""

    def column(self, name: str) -> CatalogColumn | None:
        for column in self.columns:
            if column.name == name:
                return column
        return None

    @property
    def primary_key(self) -> tuple[str, ...]:
        keyed = sorted((c for c in self.columns if c.pk), key=lambda c: (c.pk_position, c.position))
        return tuple(c.name for c in keyed)


class CatalogRelationship(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    id: str
    constraint: str
    from_table: str
    from_columns: tuple[str, ...]
    to_table: str
    to_columns: tuple[str, ...]


class LogicalRelationship(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    id: str
    origin: Literal["generated", "manual"]
    state: Literal["active", "deleted"] = "active"
    from_table: str
    from_columns: tuple[str, ...]
    to_table: str
    to_columns: tuple[str, ...]
    rule: str = ""  # a generated one's inference rule
    rationale: str = ""  # a manual one's rationale
    seq: int = 0  # where it was generated or added
    deleted_seq: int | None = None
    deleted_reason: str = ""
    #: a Manual Relationship a sync put back (the human's, remembered: relationship_decisions.py)
    put_back: bool = False


class CatalogSyncRun(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    status: Literal["active", "completed", "failed"]
    scope: tuple[str, ...] | None = None
    binding: str = ""
    dialect: str = ""
    started_seq: int
    started_ts: str
    ended_seq: int | None = None
    ended_ts: str | None = None
    snapshot: str | None = None
    version: str | None = None
    unchanged: bool = False
    tables: int = 0
    columns: int = 0
    relationships: int = 0
    generated: int = 0
    capabilities: dict[str, str] = msgspec.field(default_factory=dict)
    failure: str = ""  # the failure code: interrupted | unavailable | error
    reason: str = ""


class SensitiveSuggestionRun(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    mode: str  # "offline": the deterministic pre-pass; "model": the configured model too
    scope: tuple[str, ...] | None = None
    considered: int = 0
    proposed: int = 0
    profile: str = ""  # "model" only: the provider profile
    batches: int = 0  # "model" only: batches planned, of which failed (or not asked)
    failed_batches: int = 0
    seq: int = 0
    ts: str = ""


class DescriptionGenerationRun(msgspec.Struct, frozen=True, kw_only=True):
    """A Description Generation Run: what it asked for, its status and counts (never a prompt
    or a response); ``generated`` / ``non_generatable`` count its ``description_generated``
    entries as they arrive, so an interrupted run still shows what it saved."""

    id: str
    status: Literal["active", "completed", "interrupted", "failed"]
    profile: str
    model: str = ""
    scope: tuple[str, ...] | None = None
    missing_only: bool = False
    language: str = ""
    requested: int = 0
    generated: int = 0
    non_generatable: int = 0
    failed: int = 0
    skipped: int = 0
    reason: str = ""
    started_seq: int
    started_ts: str
    ended_seq: int | None = None
    ended_ts: str | None = None


class FlagDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A human's last effective ``sensitive_flag_set`` on ``table.column`` (as spelled then)."""

    table: str
    column: str
    sensitive: bool
    seq: int  # the ``sensitive_flag_set`` that recorded it
    actor: str


class DescriptionDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A human's last Description of ``table`` (``column`` None) or ``table.column`` (as
    spelled then): by hand (``set``) or by a Description Consolidation (``consolidated``)."""

    table: str
    column: str | None = None
    text: str
    kind: Literal["set", "consolidated"]
    seq: int  # the entry that recorded it
    actor: str


class RelationshipDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A human's last decision about the Logical Relationship ``id`` (its endpoints as spelled
    then): ``deleted`` (a Logical Relationship Deletion: ``reason`` is its reason),
    ``permanent`` (a Permanent Relationship Deletion, or a cleanup of an endpoint of a deleted
    one), ``active`` (a Restore, a manual addition, a reconstruction that recreated it)."""

    id: str
    from_table: str
    from_columns: tuple[str, ...]
    to_table: str
    to_columns: tuple[str, ...]
    state: Literal["deleted", "permanent", "active"]
    reason: str = ""
    seq: int  # the entry that recorded it
    actor: str
    # a Manual Relationship's (restored when a sync observes its endpoint anew) and its rationale
    origin: Literal["generated", "manual"] = "generated"
    rationale: str = ""


class CatalogProblem(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    code: str
    message: str


class CatalogState(msgspec.Struct, frozen=True, kw_only=True):
    last_seq: int = 0
    last_ts: str | None = None
    #: the binding's dialect at the last run (``sqlite`` | ``postgresql``); "" before any run
    dialect: str = ""
    tables: dict[str, CatalogTable] = msgspec.field(default_factory=dict)
    physical: dict[str, CatalogRelationship] = msgspec.field(default_factory=dict)
    logical: dict[str, LogicalRelationship] = msgspec.field(default_factory=dict)
    runs: dict[str, CatalogSyncRun] = msgspec.field(default_factory=dict)
    #: Sensitive Data Suggestion Runs, by id (aggregate counts only)
    suggestion_runs: dict[str, SensitiveSuggestionRun] = msgspec.field(default_factory=dict)
    #: Description Generation Runs, by id; ``active_generation``: the one recorded active
    generation_runs: dict[str, DescriptionGenerationRun] = msgspec.field(default_factory=dict)
    active_generation: str | None = None
    active_run: str | None = None
    last_completed: str | None = None
    #: ``(snapshot, version)`` of the last Synchronize All when nothing changed the tables or
    #: the Catalog Relationships since: applying that snapshot again changes nothing (the
    #: unchanged resync's fast path); None after a scoped run or a cleanup
    follows: tuple[str, str] | None = None
    #: the seq of the first signed human entry: from there on every human entry must be signed
    signed_from: int | None = None
    #: the humans' Sensitive Data Flag decisions, one per column spelling, oldest first: they
    #: outlive their columns (a column observed again gets its decision back)
    flag_decisions: tuple[FlagDecision, ...] = ()
    #: likewise the humans' Descriptions (by table or column spelling) and relationship
    #: deletions and restores (by endpoints' spelling): an object observed again gets them back
    description_decisions: tuple[DescriptionDecision, ...] = ()
    relationship_decisions: tuple[RelationshipDecision, ...] = ()
    problems: tuple[CatalogProblem, ...] = ()
    # the batch still open after the last event (None at a batch boundary, always the case
    # after a committed append): its kind, actor and the generated lines it still announces
    batch: str | None = None
    batch_actor: str = ""
    batch_expected: int = 0

    @property
    def synced(self) -> bool:
        """Whether any Catalog Sync Run ever completed."""
        return self.last_completed is not None

    def table(self, name: str) -> CatalogTable | None:
        """The table named ``name`` (exact, else the one case-insensitive match)."""
        found = self.tables.get(name)
        if found is not None:
            return found
        folded = [t for t in self.tables.values() if t.name.lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None
