"""The glossary's curation operations as pure planners: the state in, the events to record out
(or the error that refuses them, with nothing recorded). All human-only.

- :func:`plan_add` — a Manual Relationship between two Catalog Columns (or keys).
- :func:`plan_delete` — Logical Relationship Deletion (the record stays as an exclusion that
  keeps a generated relationship from being recreated while both columns exist) or, with
  ``permanent``, Permanent Relationship Deletion (the record goes; a later reconstruction may
  recreate it).
- :func:`plan_restore` — Relationship Restore of a logically deleted one.
- :func:`plan_reconstruct` — Relationship Reconstruction: adds the missing generated
  relationships; keeps manual ones and those already present; never revives a logically
  deleted one (its id is present, or a human's last decision about it is that deletion:
  modules/catalog/relationship_decisions.py); recreates a permanently deleted one.
- :func:`plan_cleanup` — Catalog Metadata Cleanup of selected tables, columns and Catalog
  Relationships; every relationship with a removed endpoint goes with it, exclusions included.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.errors import NotFoundError, PolicyError, UsageError
from modules.catalog.endpoints import format_endpoint, pair_key, parse_endpoint, relationship_id
from modules.catalog.records import CatalogRelationship, CatalogState, LogicalRelationship
from modules.catalog.relationship_decisions import RelationshipDecisions
from modules.catalog.sync_plan import generated_drafts
from modules.catalog.synchronization import CatalogContent

__all__ = [
    "plan_add",
    "plan_cleanup",
    "plan_delete",
    "plan_reconstruct",
    "plan_restore",
    "resolve_column",
    "resolve_endpoint",
]


def _never_synced(state: CatalogState) -> None:
    if not state.tables and not state.synced:
        raise NotFoundError("the catalog is empty: run `tht catalog sync` first")


def _reason(reason: str | None, what: str) -> str:
    if reason is None or not reason.strip():
        raise UsageError(f"{what} needs a reason: pass --reason TEXT")
    return reason.strip()


def resolve_column(state: CatalogState, table: str, column: str) -> tuple[str, str]:
    """Catalog names for ``table.column`` (exact, else the one case-insensitive match)."""
    found = state.table(table)
    if found is None:
        raise NotFoundError(f"{table} is not a Catalog Table")
    col = found.column(column)
    if col is None:
        folded = [c for c in found.columns if c.name.lower() == column.lower()]
        if len(folded) != 1:
            raise NotFoundError(f"{found.name} has no column {column}")
        col = folded[0]
    return found.name, col.name


def resolve_endpoint(state: CatalogState, text: str) -> tuple[str, tuple[str, ...]]:
    table, columns = parse_endpoint(text)
    resolved = [resolve_column(state, table, c) for c in columns]
    return resolved[0][0], tuple(c for _, c in resolved)


def plan_add(
    state: CatalogState, from_text: str, to_text: str, *, rationale: str, actor: str
) -> ev.EventDraft:
    _never_synced(state)
    from_table, from_columns = resolve_endpoint(state, from_text)
    to_table, to_columns = resolve_endpoint(state, to_text)
    if len(from_columns) != len(to_columns):
        raise UsageError(f"{from_text} and {to_text} have different numbers of columns")
    if (from_table, from_columns) == (to_table, to_columns):
        raise UsageError("a relationship joins two different endpoints")
    rid = relationship_id("logical", from_table, from_columns, to_table, to_columns)
    shown = f"{format_endpoint(from_table, from_columns)} → {format_endpoint(to_table, to_columns)}"
    existing = state.logical.get(rid)
    if existing is not None:
        if existing.state == "deleted":
            raise PolicyError(
                f"{shown} is relationship {rid}, logically deleted; "
                f"`tht catalog relationship restore {rid}` reactivates it"
            )
        raise PolicyError(f"{shown} already exists: relationship {rid} ({existing.origin})")
    key = pair_key(from_table, from_columns, to_table, to_columns)
    others: list[CatalogRelationship | LogicalRelationship] = [
        *state.physical.values(),
        *state.logical.values(),
    ]
    for other in others:
        if pair_key(other.from_table, other.from_columns, other.to_table, other.to_columns) == key:
            kind = "declared by the database as" if other.id.startswith("fk_") else "already"
            raise PolicyError(f"{shown} is {kind} relationship {other.id}")
    return ev.EventDraft(
        type="relationship_added",
        actor=actor,
        subject=rid,
        payload=cev.RelationshipAddedPayload(
            id=rid,
            from_table=from_table,
            from_columns=from_columns,
            to_table=to_table,
            to_columns=to_columns,
            rationale=rationale.strip(),
        ),
    )


def _logical(state: CatalogState, rid: str) -> None:
    if rid in state.physical:
        raise PolicyError(
            f"{rid} is a Catalog Relationship (a declared foreign key): it is not deleted but "
            f"removed from the catalog with `tht catalog cleanup --relationship {rid}`"
        )
    if rid not in state.logical:
        raise NotFoundError(
            f"{rid} is not a relationship of the catalog (see `tht catalog relationships "
            "--include-deleted`)"
        )


def plan_delete(
    state: CatalogState, rid: str, *, permanent: bool, reason: str | None, actor: str
) -> ev.EventDraft:
    why = _reason(reason, "a deletion")
    _logical(state, rid)
    if not permanent and state.logical[rid].state == "deleted":
        raise PolicyError(f"{rid} is already logically deleted (--permanent removes it)")
    return ev.EventDraft(
        type="relationship_deleted",
        actor=actor,
        subject=rid,
        payload=cev.RelationshipDeletedPayload(
            id=rid, mode="permanent" if permanent else "logical", reason=why
        ),
    )


def plan_restore(state: CatalogState, rid: str, *, reason: str, actor: str) -> ev.EventDraft:
    _logical(state, rid)
    if state.logical[rid].state != "deleted":
        raise PolicyError(f"{rid} is active: only a logically deleted relationship is restored")
    return ev.EventDraft(
        type="relationship_restored",
        actor=actor,
        subject=rid,
        payload=cev.RelationshipRestoredPayload(id=rid, reason=reason.strip()),
    )


def plan_reconstruct(state: CatalogState, *, reason: str, actor: str) -> list[ev.EventDraft]:
    _never_synced(state)
    content = CatalogContent(
        tables=state.tables, physical=state.physical, logical=state.logical
    )  # read only here
    present = {
        pair_key(r.from_table, r.from_columns, r.to_table, r.to_columns)
        for r in state.logical.values()
    }
    decisions = RelationshipDecisions(state.relationship_decisions)
    generated = [
        d
        for d in generated_drafts(content, None, actor)
        if isinstance(d.payload, cev.RelationshipGeneratedPayload)
        and pair_key(
            d.payload.from_table, d.payload.from_columns, d.payload.to_table, d.payload.to_columns
        )
        not in present
        and decisions.state_of(
            d.payload.from_table, d.payload.from_columns, d.payload.to_table, d.payload.to_columns
        )
        != "deleted"
    ]
    marker = ev.EventDraft(
        type="relationships_reconstructed",
        actor=actor,
        payload=cev.RelationshipsReconstructedPayload(
            generated=len(generated), reason=reason.strip()
        ),
    )
    return [marker, *generated]


def plan_cleanup(
    state: CatalogState,
    *,
    tables: Sequence[str] = (),
    columns: Sequence[str] = (),
    relationships: Sequence[str] = (),
    reason: str | None,
    actor: str,
) -> ev.EventDraft:
    why = _reason(reason, "a cleanup")
    if not (tables or columns or relationships):
        raise UsageError("select what to clean up: --table T, --column T.C or --relationship ID")
    _never_synced(state)
    names: list[str] = []
    for table in tables:
        found = state.table(table)
        if found is None:
            raise NotFoundError(f"{table} is not a Catalog Table")
        names.append(found.name)
    refs: list[str] = []
    for ref in columns:
        table, dot, column = ref.partition(".")
        if not dot or not column:
            raise UsageError(f"--column {ref!r}: expected table.column")
        t, c = resolve_column(state, table, column)
        if t not in names:
            refs.append(f"{t}.{c}")
    for rid in relationships:
        if rid in state.logical:
            raise PolicyError(
                f"{rid} is a Logical Relationship: `tht catalog relationship delete {rid} "
                "--permanent` removes it"
            )
        if rid not in state.physical:
            raise NotFoundError(f"{rid} is not a Catalog Relationship")
    return ev.EventDraft(
        type="catalog_cleaned",
        actor=actor,
        payload=cev.CatalogCleanedPayload(
            tables=tuple(dict.fromkeys(names)),
            columns=tuple(dict.fromkeys(refs)),
            relationships=tuple(dict.fromkeys(relationships)),
            reason=why,
        ),
    )
