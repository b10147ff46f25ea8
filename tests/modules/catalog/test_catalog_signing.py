"""Signed mode: curation entries carry the reviewer's signature, checked by the reviewer
registry; once signing began, an unsigned human entry is a forgery."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import generate_signing_key
from kernel.store.memory import MemoryStore
from modules.catalog import Catalog, plan_delete, run_sync
from modules.catalog.endpoints import relationship_id
from tests.modules.catalog.fakes import catalog_on, shop

ANN = "human:ann"
CUSTOMER = relationship_id("logical", "orders", ("customer_id",), "customers", ("id",))


@pytest.fixture
def signed(tmp_path: Path) -> tuple[MemoryStore, Catalog]:
    key = generate_signing_key(ANN)
    registry = ReviewerRegistry(tmp_path / "reviewers")
    registry.add_reviewer(key, by=None, clock=FixedClock())
    check = registry.state().check_human_event

    def signer_for(actor: str) -> object:
        return lambda event: key.sign_event(event) if event.actor == actor else None

    store = MemoryStore()
    catalog = catalog_on(store, db=shop(), signer_for=signer_for, human_check=check)
    run_sync(catalog)
    loaded = catalog.load_for_write()
    catalog.append(
        loaded, [plan_delete(loaded.state, CUSTOMER, permanent=False, reason="x", actor=ANN)]
    )
    return store, catalog


def test_a_curation_entry_is_signed_and_verifies(signed: tuple[MemoryStore, Catalog]) -> None:
    _, catalog = signed
    last = catalog.caps.ledger.read().events[-1]
    assert last.actor == ANN and last.sig is not None and last.sig.startswith("ed25519:")
    assert catalog.verify().ok
    sync_events = [e for e in catalog.caps.ledger.read().events if e.actor == "module:catalog"]
    assert all(e.sig is None for e in sync_events)  # only human entries are signed


def test_an_unsigned_human_entry_after_signed_ones_is_refused(
    signed: tuple[MemoryStore, Catalog],
) -> None:
    _, catalog = signed
    ledger = catalog.caps.ledger
    forged = ev.EventDraft(
        type="relationship_restored",
        actor=ANN,
        payload=cev.RelationshipRestoredPayload(id=CUSTOMER),
    )
    ledger.append([forged], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())
    report = catalog.verify()
    assert [p.code for p in report.problems] == ["signature"]
    with pytest.raises(IntegrityError):
        catalog.load_for_write()


def test_an_altered_signed_entry_does_not_verify(signed: tuple[MemoryStore, Catalog]) -> None:
    store, catalog = signed
    ledger = store.workspace_ledger("catalog")
    ledger.lines[-1] = ledger.lines[-1].replace(b'"reason":"x"', b'"reason":"y"')
    ledger.anchor = (len(ledger.lines), ledger.anchor[1] if ledger.anchor else "")
    codes = {p.code for p in Catalog(catalog.caps).verify().problems}
    assert "signature" in codes
