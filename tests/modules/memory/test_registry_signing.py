"""Signed mode: a reviewer's registry entries carry their signature, checked by the reviewer
registry; once signing began, an unsigned human entry is a forgery. Module entries (a solved
question) are never signed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import generate_signing_key
from kernel.store.memory import MemoryStore
from modules.memory import MemoryRegistry, memory_id, plan_solved
from tests.modules.memory.registry_support import ANA, forgotten, registry_on, saved

FLAG = memory_id("ablazione", "procedures.flag", "flag")


@pytest.fixture
def signed(tmp_path: Path) -> tuple[MemoryStore, MemoryRegistry]:
    key = generate_signing_key(ANA)
    reviewers = ReviewerRegistry(tmp_path / "reviewers")
    reviewers.add_reviewer(key, by=None, clock=FixedClock())
    check = reviewers.state().check_human_event

    def signer_for(actor: str) -> Callable[[ev.Event], str | None]:
        return lambda event: key.sign_event(event) if event.actor == actor else None

    store = MemoryStore()
    registry = registry_on(store, signer_for=signer_for, human_check=check)
    loaded = registry.load_for_write()
    loaded = registry.append(loaded, [saved("ablazione", "flag", "procedures.flag")])
    registry.append(
        loaded, plan_solved(loaded.state, session="S1", seq=9, question="q", sql="SELECT 1")
    )
    return store, registry


def test_a_reviewers_entry_is_signed_and_verifies(
    signed: tuple[MemoryStore, MemoryRegistry],
) -> None:
    _, registry = signed
    first, solved = registry.caps.ledger.read().events
    assert first.actor == ANA and first.sig is not None and first.sig.startswith("ed25519:")
    assert solved.actor == "module:memory" and solved.sig is None  # only human entries
    assert registry.verify().ok
    assert registry.load_for_write().state.memories[FLAG].status == "live"


def test_an_unsigned_human_entry_after_signed_ones_is_refused(
    signed: tuple[MemoryStore, MemoryRegistry],
) -> None:
    _, registry = signed
    ledger = registry.caps.ledger
    ledger.append([forgotten(FLAG)], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())
    report = registry.verify()
    assert [(p.code, p.seq) for p in report.problems] == [("signature", 3)]
    with pytest.raises(IntegrityError) as err:
        registry.load_for_write()
    assert "tht memory verify" in str(err.value)


def test_an_altered_signed_entry_does_not_verify(
    signed: tuple[MemoryStore, MemoryRegistry],
) -> None:
    store, registry = signed
    ledger = store.workspace_ledger("memory")
    ledger.lines[0] = ledger.lines[0].replace(b'"meaning":"flag"', b'"meaning":"flop"')
    codes = {p.code for p in MemoryRegistry(registry.caps).verify().problems}
    assert "signature" in codes


def test_a_signature_without_a_reviewer_registry_cannot_be_trusted(
    signed: tuple[MemoryStore, MemoryRegistry],
) -> None:
    store, _ = signed
    unchecked = registry_on(store)  # no human_check: a signature that cannot be verified
    assert [p.code for p in unchecked.verify().problems] == ["signature"]
    with pytest.raises(IntegrityError):
        unchecked.load_for_write()
