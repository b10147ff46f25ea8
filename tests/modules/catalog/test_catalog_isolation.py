"""Catalog entries belong to the workspace's catalog ledger only: a module can never propose
one into a session, a workflow can never emit one, and one forged into a session ledger is an
integrity problem of that session."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError, PolicyError
from kernel.outcomes import ModuleOutcome
from tests.support.kernel_env import admitted_session, make_kernel


def test_every_catalog_event_type_is_a_workspace_entry() -> None:
    assert {
        "catalog_sync_started",
        "catalog_sync_completed",
        "catalog_sync_failed",
        "relationship_generated",
        "relationship_added",
        "relationship_deleted",
        "relationship_restored",
        "relationships_reconstructed",
        "catalog_cleaned",
        "sensitive_flag_set",
        "sensitive_suggestion_run",
        "description_set",
        "description_generated",
        "descriptions_consolidated",
        "description_generation_started",
        "description_generation_finished",
    } == ev.CATALOG_TYPES
    assert all(ev.EVENT_TYPES[t].owner == "catalog" for t in ev.CATALOG_TYPES)
    assert "catalog" in ev.WORKSPACE_CATEGORIES
    assert not ev.CATALOG_TYPES & (ev.DECISION_TYPES | ev.KERNEL_TYPES | ev.RECEIPT_TYPES)


def test_a_module_cannot_propose_a_catalog_entry_into_a_session(tmp_path: Path) -> None:
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    outcome = ModuleOutcome(
        status="completed",
        events=(
            ev.ProposedEvent(
                type="relationship_restored", payload={"id": "lr_000000000000", "reason": ""}
            ),
        ),
    )
    with pytest.raises(PolicyError, match="catalog event"):
        kernel.apply_outcome(session, "disambiguation", outcome, actor="agent")


def test_a_catalog_entry_forged_into_a_session_ledger_is_an_integrity_problem(
    tmp_path: Path,
) -> None:
    kernel = make_kernel(tmp_path)
    session = admitted_session(kernel)
    ledger = kernel.store.ledger(session)
    draft = ev.EventDraft(
        type="catalog_sync_started",
        actor="module:catalog",
        payload=cev.CatalogSyncStartedPayload(run="r", binding="x", dialect="sqlite"),
    )
    ledger.append([draft], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())
    report = kernel.verify(session)
    assert not report.ok
    assert any("Metadata Catalog" in p.message for p in report.problems)
    with pytest.raises(IntegrityError):
        kernel.load(session)
