"""The Metadata Catalog's entries (ARCHITECTURE §3.5, §3.8; owner ``modules/catalog``).

The Metadata Catalog is a workspace-level ledger (``store.workspace_ledger("catalog")``): the
same envelope, hash chain and store as a session, never valid in one. Its entries record Catalog
Sync Runs, Logical Relationships (generated, manual, deleted, restored, reconstructed), cleanup,
Sensitive Data Flags and Descriptions (written by a human, generated, consolidated).

Endpoints are a table and its ordered columns (``from_columns[i]`` joins ``to_columns[i]``);
relationship ids are derived from the endpoints (``modules/catalog/endpoints.py``).

They are registered with every other type in :mod:`kernel.events`, which re-exports them.
"""

from typing import Literal

import msgspec

from kernel.event_base import Event, Payload

__all__ = [
    "CatalogChangesPayload",
    "CatalogCleaned",
    "CatalogCleanedPayload",
    "CatalogSyncCompleted",
    "CatalogSyncCompletedPayload",
    "CatalogSyncFailed",
    "CatalogSyncFailedPayload",
    "CatalogSyncStarted",
    "CatalogSyncStartedPayload",
    "ConsolidatedTargetPayload",
    "DescriptionGenerated",
    "DescriptionGeneratedPayload",
    "DescriptionGenerationFinished",
    "DescriptionGenerationFinishedPayload",
    "DescriptionGenerationStarted",
    "DescriptionGenerationStartedPayload",
    "DescriptionSet",
    "DescriptionSetPayload",
    "DescriptionsConsolidated",
    "DescriptionsConsolidatedPayload",
    "RelationshipAdded",
    "RelationshipAddedPayload",
    "RelationshipDeleted",
    "RelationshipDeletedPayload",
    "RelationshipEndpointsPayload",
    "RelationshipGenerated",
    "RelationshipGeneratedPayload",
    "RelationshipRestored",
    "RelationshipRestoredPayload",
    "RelationshipsReconstructed",
    "RelationshipsReconstructedPayload",
    "SensitiveFlagSet",
    "SensitiveFlagSetPayload",
    "SensitiveSuggestionRun",
    "SensitiveSuggestionRunPayload",
]


class CatalogChangesPayload(Payload, frozen=True, kw_only=True):
    """What a completed Catalog Sync Run changed, by table name (informational: the fold
    derives the catalog from the snapshot itself)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()


class CatalogSyncStartedPayload(Payload, frozen=True, kw_only=True):
    run: str
    #: the tables asked for; None is Synchronize All
    scope: tuple[str, ...] | None = None
    binding: str  # the Database Binding's redacted display (never a secret)
    dialect: str


class CatalogSyncCompletedPayload(Payload, frozen=True, kw_only=True):
    run: str
    #: SHA-256 of the content-addressed Introspection the catalog now follows
    snapshot: str
    #: the binding's structure version the observation was made at (Catalog Freshness)
    version: str
    tables: int
    columns: int
    relationships: int
    capabilities: dict[str, str] = msgspec.field(default_factory=dict)
    changes: CatalogChangesPayload = msgspec.field(default_factory=CatalogChangesPayload)
    #: the structure had not changed: introspection was skipped, ``snapshot`` is an earlier one
    unchanged: bool = False


class CatalogSyncFailedPayload(Payload, frozen=True, kw_only=True):
    run: str
    #: ``interrupted`` (found active by a later run, its process gone), ``unavailable``, ``error``
    code: str
    reason: str


class RelationshipEndpointsPayload(Payload, frozen=True, kw_only=True):
    id: str
    from_table: str
    from_columns: tuple[str, ...]
    to_table: str
    to_columns: tuple[str, ...]


class RelationshipGeneratedPayload(RelationshipEndpointsPayload, frozen=True, kw_only=True):
    #: the deterministic rule that inferred it (names, primary keys, type compatibility)
    rule: str


class RelationshipAddedPayload(RelationshipEndpointsPayload, frozen=True, kw_only=True):
    rationale: str = ""


class RelationshipDeletedPayload(Payload, frozen=True, kw_only=True):
    id: str
    mode: Literal["logical", "permanent"]
    reason: str


class RelationshipRestoredPayload(Payload, frozen=True, kw_only=True):
    id: str
    reason: str = ""


class RelationshipsReconstructedPayload(Payload, frozen=True, kw_only=True):
    """Relationship Reconstruction: the ``generated`` relationship_generated lines that follow
    in the same batch are what it added."""

    generated: int
    reason: str = ""


class CatalogCleanedPayload(Payload, frozen=True, kw_only=True):
    """Catalog Metadata Cleanup of the selected tables, columns (``table.column``) and Catalog
    Relationships (ids)."""

    tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    relationships: tuple[str, ...] = ()
    reason: str


class SensitiveFlagSetPayload(Payload, frozen=True, kw_only=True):
    """A human set (``sensitive`` true) or cleared the Sensitive Data Flag of one Catalog
    Column; a flag lives on the column and goes with it (docs/catalog.md)."""

    table: str
    column: str
    sensitive: bool
    reason: str


class SensitiveSuggestionRunPayload(Payload, frozen=True, kw_only=True):
    """A Sensitive Data Suggestion Run, sanitized: its scope and aggregate counts only — never
    a per-column proposal, a value, a prompt or a response."""

    run: str
    #: ``offline``: the deterministic pre-pass (names and types, no model); ``model``: the
    #: configured model too, over bounded batches of structural metadata, merged with it
    mode: Literal["offline", "model"]
    #: the tables asked for; None is the whole catalog
    scope: tuple[str, ...] | None = None
    considered: int
    #: columns proposed (the merged proposal when ``model``)
    proposed: int
    #: ``model`` only: the provider profile and model, and aggregate counts — the offline
    #: pre-pass's and the model's proposals, the batches asked, failed (timeout, 5xx, invalid
    #: JSON, …) and not asked (the run stopped), the invalid items, the last failure's kind
    profile: str | msgspec.UnsetType = msgspec.UNSET
    model: str | msgspec.UnsetType = msgspec.UNSET
    offline_proposed: int | msgspec.UnsetType = msgspec.UNSET
    model_proposed: int | msgspec.UnsetType = msgspec.UNSET
    batches: int | msgspec.UnsetType = msgspec.UNSET
    failed_batches: int | msgspec.UnsetType = msgspec.UNSET
    skipped_batches: int | msgspec.UnsetType = msgspec.UNSET
    invalid_items: int | msgspec.UnsetType = msgspec.UNSET
    failure: str | msgspec.UnsetType = msgspec.UNSET


class DescriptionSetPayload(Payload, frozen=True, kw_only=True):
    """A human wrote or edited the Description of a Catalog Table (``target``: its name) or
    Catalog Column (``table.column``) by hand; never the comment observed in the database."""

    target: str
    text: str
    reason: str


class DescriptionGeneratedPayload(Payload, frozen=True, kw_only=True):
    """A Generated Description: a reviewable proposal for a table or column, never the
    Description itself (a Description Consolidation or a human's edit makes one)."""

    target: str
    text: str
    #: the language the text is written in (the workspace's)
    language: str
    #: ``model:<profile>`` (a Description Generation Run, by ``module:catalog``) or ``agent``
    source: str
    #: the Description Generation Run that produced it; None for an agent's proposal
    run: str | None = None
    #: the model said it cannot describe the target (a valid outcome; ``text`` is the standard
    #: sentence in the workspace's language, ``reason`` why)
    non_generatable: bool = False
    reason: str = ""


class ConsolidatedTargetPayload(Payload, frozen=True, kw_only=True):
    target: str
    #: the seq of the ``description_generated`` whose text becomes the Description
    generated_seq: int


class DescriptionsConsolidatedPayload(Payload, frozen=True, kw_only=True):
    """A Description Consolidation: the chosen Generated Descriptions become the Descriptions
    of their targets (the Generated Descriptions stay)."""

    targets: tuple[ConsolidatedTargetPayload, ...]
    reason: str


class DescriptionGenerationStartedPayload(Payload, frozen=True, kw_only=True):
    """A Description Generation Run started (docs/catalog.md): what it asks for, through which
    provider profile — never a prompt, a value or a response."""

    run: str
    #: the provider profile id (its results' ``source`` is ``model:<profile>``) and its model
    profile: str
    model: str
    #: the tables asked for; None is the whole catalog
    scope: tuple[str, ...] | None = None
    #: only targets without a Generated Description or Description (the manual recovery)
    missing_only: bool = False
    #: the targets (tables and columns) in the scope
    requested: int
    #: the workspace's language the descriptions are asked in
    language: str


class DescriptionGenerationFinishedPayload(Payload, frozen=True, kw_only=True):
    """A Description Generation Run ended, sanitized: its status and aggregate counts only
    (``generated + non_generatable + failed + skipped == requested``)."""

    run: str
    status: Literal["completed", "interrupted", "failed"]
    requested: int
    generated: int
    non_generatable: int
    failed: int
    skipped: int
    #: a closed code when not completed (a provider error kind, ``interrupted``, ``unlocked``)
    reason: str = ""


class CatalogSyncStarted(Event, tag="catalog_sync_started", frozen=True, kw_only=True):
    payload: CatalogSyncStartedPayload


class CatalogSyncCompleted(Event, tag="catalog_sync_completed", frozen=True, kw_only=True):
    payload: CatalogSyncCompletedPayload


class CatalogSyncFailed(Event, tag="catalog_sync_failed", frozen=True, kw_only=True):
    payload: CatalogSyncFailedPayload


class RelationshipGenerated(Event, tag="relationship_generated", frozen=True, kw_only=True):
    payload: RelationshipGeneratedPayload


class RelationshipAdded(Event, tag="relationship_added", frozen=True, kw_only=True):
    payload: RelationshipAddedPayload


class RelationshipDeleted(Event, tag="relationship_deleted", frozen=True, kw_only=True):
    payload: RelationshipDeletedPayload


class RelationshipRestored(Event, tag="relationship_restored", frozen=True, kw_only=True):
    payload: RelationshipRestoredPayload


class RelationshipsReconstructed(
    Event, tag="relationships_reconstructed", frozen=True, kw_only=True
):
    payload: RelationshipsReconstructedPayload


class CatalogCleaned(Event, tag="catalog_cleaned", frozen=True, kw_only=True):
    payload: CatalogCleanedPayload


class SensitiveFlagSet(Event, tag="sensitive_flag_set", frozen=True, kw_only=True):
    payload: SensitiveFlagSetPayload


class SensitiveSuggestionRun(Event, tag="sensitive_suggestion_run", frozen=True, kw_only=True):
    payload: SensitiveSuggestionRunPayload


class DescriptionSet(Event, tag="description_set", frozen=True, kw_only=True):
    payload: DescriptionSetPayload


class DescriptionGenerated(Event, tag="description_generated", frozen=True, kw_only=True):
    payload: DescriptionGeneratedPayload


class DescriptionsConsolidated(Event, tag="descriptions_consolidated", frozen=True, kw_only=True):
    payload: DescriptionsConsolidatedPayload


class DescriptionGenerationStarted(
    Event, tag="description_generation_started", frozen=True, kw_only=True
):
    payload: DescriptionGenerationStartedPayload


class DescriptionGenerationFinished(
    Event, tag="description_generation_finished", frozen=True, kw_only=True
):
    payload: DescriptionGenerationFinishedPayload
