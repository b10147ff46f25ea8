"""The fold's rules for Logical Relationships (glossary "Logical Relationship"),
(modules/catalog/fold.py dispatches to them). Pure: each changes only the fold's working copy
(``content.logical``) and the humans' remembered decisions
(:class:`~modules.catalog.relationship_decisions.RelationshipDecisions`); a rule that refuses an
entry raises :class:`RelationshipRejected` (the fold records a problem, changes nothing).

- :func:`relationship_generated` — a Generated Relationship of a sync or reconstruction batch
  (the fold checks the batch and its actor); a human's last decision about it holds: a
  logically deleted one comes back as its exclusion, a sync's line for a permanently deleted
  one is moot, and so is a line for a Manual Relationship a sync put back.
- :func:`relationship_added` — a Manual Relationship, remembered as the human's ``active``
  decision.
- :func:`relationship_deleted` — a Logical Relationship Deletion (the relationship stays as its
  exclusion) or a Permanent one (it leaves the catalog), remembered.
- :func:`relationship_restored` — a Relationship Restore of a logically deleted one,
  remembered as ``active``.

Every line names its endpoints (two different endpoints, Catalog Columns, as many columns on
each side) and the id of those endpoints; a line over one that exists is a duplicate, except
over a Manual Relationship a sync put back. Lines an older tht wrote still verify: a generated
candidate or a human's addition in the place of a Manual Relationship it did not put back, a
Logical or Permanent Deletion a human redid after an older sync brought the relationship back.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kernel import catalog_events as cev
from kernel import events as ev
from modules.catalog.endpoints import relationship_id
from modules.catalog.records import LogicalRelationship
from modules.catalog.relationship_decisions import RelationshipDecisions
from modules.catalog.synchronization import CatalogContent

__all__ = [
    "RelationshipRejected",
    "relationship_added",
    "relationship_deleted",
    "relationship_generated",
    "relationship_restored",
]


class RelationshipRejected(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def relationship_generated(
    content: CatalogContent,
    decisions: RelationshipDecisions,
    event: cev.RelationshipGenerated,
    *,
    reconstruction: bool,
) -> None:
    """``event``'s actor is the batch's; ``reconstruction``: the batch is a Relationship
    Reconstruction, not a sync."""
    p = event.payload
    _endpoints(content, p)
    if p.id in content.logical:
        return  # the Manual Relationship put back holds; the older line is moot
    generated = LogicalRelationship(
        id=p.id,
        origin="generated",
        from_table=p.from_table,
        from_columns=tuple(p.from_columns),
        to_table=p.to_table,
        to_columns=tuple(p.to_columns),
        rule=p.rule,
        seq=event.seq,
    )
    # a human's last deletion of it holds (modules/catalog/relationship_decisions.py)
    record = decisions.generated(
        generated, reconstruction=reconstruction, actor=event.actor, logical=content.logical
    )
    if record is not None:
        content.logical[p.id] = record


def relationship_added(
    content: CatalogContent, decisions: RelationshipDecisions, event: cev.RelationshipAdded
) -> None:
    p = event.payload
    _endpoints(content, p)  # over one a sync put back, the human's line holds as it did then
    content.logical[p.id] = LogicalRelationship(
        id=p.id,
        origin="manual",
        from_table=p.from_table,
        from_columns=tuple(p.from_columns),
        to_table=p.to_table,
        to_columns=tuple(p.to_columns),
        rationale=p.rationale,
        seq=event.seq,
    )
    _decided(content, decisions, content.logical[p.id], "active", "", event)


def relationship_deleted(
    content: CatalogContent, decisions: RelationshipDecisions, event: cev.RelationshipDeleted
) -> None:
    p = event.payload
    found = content.logical.get(p.id)
    if found is None:
        if decisions.permanent(p.id):
            # written by a tht before deletions outlived their endpoints: a sync brought it
            # back and the human deleted it again; the sync's line is moot now, and so is
            # this one (a ledger that was legal then must verify now)
            return
        raise RelationshipRejected("relationship", f"{p.id} is not a Logical Relationship")
    if p.mode == "permanent":
        del content.logical[p.id]
        _decided(content, decisions, found, "permanent", p.reason, event)
        return
    if found.state == "deleted" and not _restored_exclusion(found):
        raise RelationshipRejected("relationship", f"{p.id} is already deleted")
    # a restored exclusion (older tht: it came back active, the human deleted it again):
    # the same exclusion, now dated by this deletion
    content.logical[p.id] = msgspec.structs.replace(
        found, state="deleted", deleted_seq=event.seq, deleted_reason=p.reason
    )
    _decided(content, decisions, found, "deleted", p.reason, event)


def relationship_restored(
    content: CatalogContent, decisions: RelationshipDecisions, event: cev.RelationshipRestored
) -> None:
    found = content.logical.get(event.payload.id)
    if found is None or found.state != "deleted":
        raise RelationshipRejected("relationship", f"{event.payload.id} is not logically deleted")
    content.logical[found.id] = msgspec.structs.replace(
        found, state="active", deleted_seq=None, deleted_reason=""
    )
    _decided(content, decisions, found, "active", event.payload.reason, event)


def _endpoints(content: CatalogContent, p: cev.RelationshipEndpointsPayload) -> None:
    """The id may be a Manual Relationship a sync put back: a tht that did not put it back
    (or not in its endpoints' new case) generated a candidate in its place, or the human
    added it again; that line must verify now."""
    for table, columns in ((p.from_table, p.from_columns), (p.to_table, p.to_columns)):
        found = content.tables.get(table)
        if found is None:
            raise RelationshipRejected("endpoint", f"{table} is not a Catalog Table")
        missing = [c for c in columns if found.column(c) is None]
        if missing or not columns:
            raise RelationshipRejected(
                "endpoint", f"{table} has no column {', '.join(missing) or '()'}"
            )
    if len(p.from_columns) != len(p.to_columns):
        raise RelationshipRejected(
            "endpoint", "the two endpoints have different numbers of columns"
        )
    if p.from_table == p.to_table and p.from_columns == p.to_columns:
        raise RelationshipRejected("endpoint", "a relationship joins two different endpoints")
    rid = relationship_id("logical", p.from_table, p.from_columns, p.to_table, p.to_columns)
    if p.id != rid:
        raise RelationshipRejected("id", f"{p.id} is not the id of its endpoints ({rid})")
    present = content.logical.get(p.id)
    if present is not None and not present.put_back:
        raise RelationshipRejected("duplicate", f"relationship {p.id} already exists")


def _decided(
    content: CatalogContent,
    decisions: RelationshipDecisions,
    relationship: LogicalRelationship,
    state: Literal["deleted", "permanent", "active"],
    reason: str,
    event: ev.Event,
) -> None:
    """A human's decision about ``relationship``, remembered for its identity."""
    decisions.remember(
        relationship,
        state,
        reason=reason,
        seq=event.seq,
        actor=event.actor,
        logical=content.logical,
    )


def _restored_exclusion(relationship: LogicalRelationship) -> bool:
    """Whether a deleted relationship is an exclusion a human's remembered deletion restored:
    the deletion is older than the line that generated it again."""
    deleted = relationship.deleted_seq
    return deleted is not None and deleted < relationship.seq
