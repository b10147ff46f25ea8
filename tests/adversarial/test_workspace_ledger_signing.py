"""Signed mode in the workspace-level ledgers (the Metadata Catalog, the Memory registry) is the
reviewer registry's word, not the files' (found by an adversarial walkthrough).

The older rule refused an unsigned human entry only after the ledger's first signed one. In a
signed workspace whose catalog had no human entry yet, an agent moved ``reviewers/`` aside (tht
then believed the workspace unsigned), ran human-only catalog commands ``--as human:<id>``,
moved the registry back: ``tht catalog verify`` was ok, the forged curation effective, and the
reviewer's next signed entry covered it for good. The registry's first entry now records where
signed mode began in each ledger (its last line then); a human entry after it must be signed,
and the unsigned history before it stands only while that line is still the one signing began
on. A registry written before that record keeps the older rule (the control tests).

First the rule on the module objects (the in-memory store; lines appended straight to the
ledger, chained and anchored — what an agent that writes the files does), then the attack
through the real CLI.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.ledger_verify import Problem, line_hash
from kernel.reviewer_events import LedgerStart, ReviewerAdded
from kernel.reviewer_registry import ReviewerRegistry
from kernel.reviewers import HumanEventCheck
from kernel.signature_rules import HumanCheck, ledger_start
from kernel.signing import SigningKey
from kernel.store.base import WorkspaceLedgerName
from kernel.store.fs import FileSystemStore
from kernel.store.memory import MemoryLedger, MemoryStore
from kernel.trust import Trust
from modules.catalog import Catalog, plan_delete, plan_restore, run_sync
from modules.catalog.endpoints import relationship_id
from modules.catalog.repair import repair_catalog
from modules.memory import MemoryRegistry, memory_id
from tests.modules.catalog.conftest import SHOP, alter
from tests.modules.catalog.fakes import FakeDatabase, catalog_on, shop
from tests.modules.memory.registry_support import forgotten, registry_on, saved
from tests.support.roles import agent, reviewer
from tht.ptyrun import TerminalRun
from tht.workspace_signing import human_check

ANN = "human:ann"
KEY = SigningKey(ANN, Ed25519PrivateKey.from_private_bytes(bytes([1]) * 32))
CUSTOMER = relationship_id("logical", "orders", ("customer_id",), "customers", ("id",))
FLAG = memory_id("ablazione", "procedures.flag", "flag")
REPO = Path(__file__).resolve().parents[2]
ANN_PW = "ann's long signing passphrase"


def _starts(store: MemoryStore) -> dict[str, LedgerStart]:
    """What ``tht reviewer add`` records for its first reviewer: each ledger's last human
    entry."""
    starts = {}
    for name in ("catalog", "memory"):
        read = store.workspace_ledger(name).read()
        starts[name] = ledger_start(read.events, read.head)
    return starts


def _registry_check(tmp_path: Path, store: MemoryStore, *, recorded: bool) -> HumanEventCheck:
    """ann adds herself now; ``recorded``: as this tht does (else as tht did before)."""
    registry = ReviewerRegistry(tmp_path / "reviewers")
    starts = _starts(store) if recorded else None
    registry.add_reviewer(KEY, by=None, clock=FixedClock(), signed_from=starts)
    return registry.state().check_human_event


def _signer(actor: str) -> Callable[[ev.Event], str | None]:
    return lambda event: KEY.sign_event(event) if event.actor == actor else None


def _forge(ledger: MemoryLedger, drafts: list[ev.EventDraft]) -> int:
    """Append ``drafts`` unsigned, chained and anchored (an agent's own lines); their last
    seq."""
    result = ledger.append(drafts, expected_last_seq=ledger.tail().last_seq, clock=FixedClock())
    return result.events[-1].seq


def _head(store: MemoryStore, name: WorkspaceLedgerName) -> str:
    return store.workspace_ledger(name).tail().head


def _rollback(ledger: MemoryLedger, seq: int) -> None:
    """Cut the ledger back to line ``seq`` and move the anchor to match."""
    del ledger.lines[seq:]
    ledger.anchor = (seq, line_hash(ledger.lines[-1]))


def _signature_problems(problems: Sequence[Problem]) -> list[tuple[str, int | None]]:
    return [(p.code, p.seq) for p in problems if p.code == "signature"]


# --------------------------------------------------------------------------- the catalog


def _synced(store: MemoryStore, db: FakeDatabase | None = None) -> Catalog:
    catalog = catalog_on(store, db=db or shop())
    run_sync(catalog)
    return catalog


def _checked(catalog: Catalog, check: HumanCheck) -> Catalog:
    return Catalog(dataclasses.replace(catalog.caps, human_check=check, signer_for=_signer))


def _delete(catalog: Catalog) -> list[ev.EventDraft]:
    state = catalog.load_for_write().state
    return [plan_delete(state, CUSTOMER, permanent=False, reason="forged", actor=ANN)]


def test_an_unsigned_human_entry_after_signing_began_is_refused_with_none_signed_before(
    tmp_path: Path,
) -> None:
    """The attack: no human entry in the catalog yet, an unsigned "human" deletion after the
    registry's root — whether tht wrote it with the registry moved aside or the agent did."""
    store = MemoryStore()
    catalog = _synced(store)
    check = _registry_check(tmp_path, store, recorded=True)
    assert check.signed_from("catalog") == LedgerStart(seq=0, head=_head(store, "catalog"))
    catalog = _checked(catalog, check)
    ledger = store.workspace_ledger("catalog")
    forged = _forge(ledger, _delete(catalog))
    report = catalog.verify()
    assert not report.ok
    assert _signature_problems(report.problems) == [("signature", forged)]
    message = next(p.message for p in report.problems if p.code == "signature")
    assert message == (
        "unsigned human decision: every human entry of the catalog ledger must be signed"
    )
    with pytest.raises(IntegrityError, match="tht catalog verify"):
        catalog.load_for_write()  # so no reviewer's signed entry can ever cover it


def test_control_a_registry_without_the_record_keeps_the_older_rule(tmp_path: Path) -> None:
    """A registry started before tht recorded where signing began: the same forged entry
    passes (documented in docs/security.md) until the ledger's first signed human entry."""
    store = MemoryStore()
    catalog = _checked(_synced(store), _registry_check(tmp_path, store, recorded=False))
    _forge(store.workspace_ledger("catalog"), _delete(catalog))
    assert catalog.verify().ok


def _curated(store: MemoryStore) -> tuple[Catalog, FakeDatabase, int]:
    """Synced, a human deletion from before signing began (unsigned then), synced again after
    the database changed; the deletion's seq."""
    db = shop()
    catalog = _synced(store, db)
    genuine = _forge(store.workspace_ledger("catalog"), _delete(catalog))
    db.add("suppliers", "id:INTEGER:pk", "name:TEXT")
    run_sync(catalog)
    assert store.workspace_ledger("catalog").tail().last_seq > genuine
    return catalog, db, genuine


def test_unsigned_human_entries_from_before_signing_began_stay_valid(tmp_path: Path) -> None:
    store = MemoryStore()
    catalog, _, genuine = _curated(store)
    check = _registry_check(tmp_path, store, recorded=True)
    start = check.signed_from("catalog")
    assert start is not None and start.seq == genuine
    catalog = _checked(catalog, check)
    assert catalog.verify().ok
    loaded = catalog.load_for_write()  # a reviewer's tht may sign after them
    assert loaded.state.logical[CUSTOMER].state == "deleted"
    restore = plan_restore(loaded.state, CUSTOMER, reason="a real join", actor=ANN)
    after = catalog.append(loaded, [restore])
    events = store.workspace_ledger("catalog").read().events
    assert events[-1].sig is not None and events[genuine - 1].sig is None
    assert catalog.verify().ok and after.state.logical[CUSTOMER].state == "active"
    _forge(store.workspace_ledger("catalog"), _delete(Catalog(catalog.caps)))
    assert not catalog.verify().ok  # and after a signed one, the older rule as before


def test_after_the_last_human_entry_before_signing_the_room_is_signed_only(
    tmp_path: Path,
) -> None:
    """The sync lines after the recorded human entry are no room for an unsigned one: the agent
    rolls back to just after that entry and writes its deletion there."""
    store = MemoryStore()
    unchecked, _, genuine = _curated(store)
    catalog = _checked(unchecked, _registry_check(tmp_path, store, recorded=True))
    ledger = store.workspace_ledger("catalog")
    state = catalog.load_for_write().state
    restore = plan_restore(state, CUSTOMER, reason="forged", actor=ANN)
    _rollback(ledger, genuine)
    forged = _forge(ledger, [restore])
    assert _signature_problems(catalog.verify().problems) == [("signature", forged)]


def test_a_rollback_below_where_signing_began_cannot_rewrite_the_history_before_it(
    tmp_path: Path,
) -> None:
    """The agent cuts the catalog back below the recorded human entry and writes its own
    "human" entry at the same seq: before the start, but not the line the root witnessed."""
    store = MemoryStore()
    unchecked, _, genuine = _curated(store)
    catalog = _checked(unchecked, _registry_check(tmp_path, store, recorded=True))
    ledger = store.workspace_ledger("catalog")
    _rollback(ledger, genuine - 1)
    state = Catalog(unchecked.caps).load_for_write().state
    drafts = [plan_delete(state, CUSTOMER, permanent=True, reason="forged", actor=ANN)]
    forged = _forge(ledger, drafts)
    assert forged == genuine
    report = catalog.verify()
    assert _signature_problems(report.problems) == [("signature", forged)]
    assert "rolled back or rewritten" in report.problems[-1].message
    with pytest.raises(IntegrityError):
        catalog.load_for_write()
    run_sync(unchecked)  # lines past it again: the next one's prev is not the recorded head
    assert ledger.tail().last_seq > genuine
    assert _signature_problems(catalog.verify().problems) == [("signature", forged)]


def test_control_a_rollback_alone_is_no_signature_problem(tmp_path: Path) -> None:
    """A prefix of a ledger is a valid ledger (docs/security.md): cut back below the recorded
    entry, with no human entry left, nothing is signed or unsigned to report."""
    store = MemoryStore()
    catalog, _, genuine = _curated(store)
    catalog = _checked(catalog, _registry_check(tmp_path, store, recorded=True))
    _rollback(store.workspace_ledger("catalog"), genuine - 1)
    assert catalog.verify().ok


def test_the_history_before_the_start_stands_after_a_repair_cut_after_it(
    tmp_path: Path,
) -> None:
    """A line after the recorded human entry is damaged; the human repair cuts there and
    appends its signed ``ledger_repaired``: the entry from before signing began still
    verifies (its line is the recorded one), an unsigned "human" entry after the repair not."""
    store = MemoryStore()
    catalog, _, genuine = _curated(store)
    catalog = _checked(catalog, _registry_check(tmp_path, store, recorded=True))
    ledger = store.workspace_ledger("catalog")
    damaged = ev.decode_event(ledger.lines[genuine])
    ledger.lines[genuine] = ledger.lines[genuine].replace(damaged.prev.encode(), b"0" * 64)
    assert not catalog.verify().ok
    _, repaired = repair_catalog(catalog, actor=ANN, reason="a damaged line")
    events = ledger.read().events
    assert [ev.info_of(e).type for e in events[genuine - 1 :]] == [
        "relationship_deleted",
        "ledger_repaired",
    ]
    assert events[-1].sig is not None and events[genuine - 1].sig is None
    assert catalog.verify().ok
    restore = plan_restore(repaired.state, CUSTOMER, reason="forged", actor=ANN)
    forged = _forge(ledger, [restore])
    assert _signature_problems(catalog.verify().problems) == [("signature", forged)]


# --------------------------------------------------------------------------- the memory registry


def _memory(store: MemoryStore, check: HumanCheck) -> MemoryRegistry:
    return registry_on(store, human_check=check, signer_for=_signer)


def test_an_unsigned_memory_decision_after_signing_began_is_refused(tmp_path: Path) -> None:
    """memory_saved and memory_forgotten by a "human", written while the registry was aside."""
    store = MemoryStore()
    unsigned = registry_on(store)
    unsigned.append(
        unsigned.load_for_write(), [saved("ablazione", "flag", "procedures.flag", reviewer=ANN)]
    )
    registry = _memory(store, _registry_check(tmp_path, store, recorded=True))
    assert registry.verify().ok  # the entry from before signing began
    ledger = store.workspace_ledger("memory")
    forged = [
        _forge(ledger, [forgotten(FLAG, actor=ANN)]),
        _forge(ledger, [saved("ablazione", "flop", "procedures.flop", reviewer=ANN)]),
    ]
    report = registry.verify()
    assert _signature_problems(report.problems) == [("signature", seq) for seq in forged]
    with pytest.raises(IntegrityError, match="tht memory verify"):
        registry.load_for_write()


def test_a_memory_registry_created_after_signing_began_takes_only_signed_decisions(
    tmp_path: Path,
) -> None:
    """No memory ledger when the reviewer was added: its very first human entry must be
    signed; a signed one verifies."""
    forged, genuine = MemoryStore(), MemoryStore()
    check = _registry_check(tmp_path, forged, recorded=True)
    assert check.signed_from("memory") == LedgerStart(
        seq=0, head=forged.workspace_ledger("memory").tail().head
    )
    _forge(forged.workspace_ledger("memory"), [saved("ablazione", "flag", "x", reviewer=ANN)])
    report = _memory(forged, check).verify()
    assert _signature_problems(report.problems) == [("signature", 1)]
    assert report.problems[-1].message == (
        "unsigned human decision: every human entry of the memory ledger must be signed"
    )
    registry = _memory(genuine, check)
    entry = saved("ablazione", "flag", "procedures.flag", reviewer=ANN)
    registry.append(registry.load_for_write(), [entry])
    assert registry.verify().ok  # signed by ann's key


# --------------------------------------------------------------------------- the composition


def _app(trust: Trust) -> Any:  # the App as workspace_signing sees it
    return SimpleNamespace(kernel=SimpleNamespace(trust=trust))


def test_a_registry_that_does_not_verify_accepts_no_unsigned_human_entry_either() -> None:
    """Trust nobody: where the registry is broken, an unsigned "human" entry is a problem too
    (the agent damaging the registry does not turn the older rule back on)."""
    reason = "the reviewer registry does not verify (`tht reviewer verify`)"
    store = MemoryStore()
    registry = registry_on(store)
    registry.append(
        registry.load_for_write(), [saved("ablazione", "flag", "procedures.flag", reviewer=ANN)]
    )
    broken = Trust(signed=True, human_check=lambda event: reason)
    checked = registry_on(store, human_check=human_check(_app(broken)))
    report = checked.verify()
    assert _signature_problems(report.problems) == [("signature", 1)]
    assert report.problems[-1].message.startswith(reason)


def test_control_without_a_registry_an_unsigned_workspace_takes_unsigned_entries() -> None:
    store = MemoryStore()
    registry = registry_on(store)
    registry.append(
        registry.load_for_write(), [saved("ablazione", "flag", "procedures.flag", reviewer=ANN)]
    )
    checked = registry_on(store, human_check=human_check(_app(Trust())))
    assert checked.verify().ok


# --------------------------------------------------------------------------- the real CLI


def _agent(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return agent(ws, *args, seed="7", timeout=120)


def _reviewer(ws: Path, *args: str, typed: tuple[str, ...]) -> TerminalRun:
    return reviewer(ws, *args, typed=typed, seed="7", timeout=120)


@pytest.fixture
def signed_shop(tmp_path: Path) -> Path:
    """A workspace on the shop database, synced (no human entry in its catalog), then made
    signed by ann adding herself."""
    ws = tmp_path / "ws"
    assert _agent(ws, "workspace", "init", str(ws)).returncode == 0
    (ws / "data").mkdir()
    alter(ws / "data" / "shop.db", SHOP)
    with (ws / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write('\ndatabase: {url: "sqlite:///data/shop.db"}\nevidence: {embedder: hashing}\n')
    synced = _agent(ws, "catalog", "sync", "--json")
    assert synced.returncode == 0, synced.stderr
    added = _reviewer(ws, "reviewer", "add", ANN, "--json", typed=(ANN_PW, ANN_PW))
    assert added.returncode == 0, added.stderr
    return ws


def test_through_the_cli_moving_the_registry_aside_forges_no_catalog_or_memory_decision(
    signed_shop: Path,
) -> None:
    ws = signed_shop
    catalog_lines = (ws / "catalog" / "ledger.jsonl").read_bytes().splitlines()
    root = ev.decode_event((ws / "reviewers" / "ledger.jsonl").read_bytes().splitlines()[0])
    assert isinstance(root, ReviewerAdded) and root.payload.signed_from is not None
    recorded = root.payload.signed_from
    # no human entry in the synced catalog, no memory registry: every human entry is signed
    assert recorded["catalog"] == LedgerStart(seq=0, head=line_hash(catalog_lines[-1]))
    assert recorded["memory"].seq == 0
    assert _agent(ws, "catalog", "verify").returncode == 0
    rid = json.loads(_agent(ws, "catalog", "relationships", "--json").stdout)[0]["id"]

    # the agent: registry aside, human-only commands as ann (tht believes it unsigned), back.
    # The registry's witness gives a registry moved aside away (a rollback to nothing: every
    # command refuses), so this agent moves the witness aside too
    shutil.move(ws / "reviewers", ws / "reviewers.aside")
    caught = _agent(ws, "catalog", "relationship", "delete", rid, "--reason", "x", "--as", ANN)
    assert caught.returncode == 7 and "rolled back" in caught.stderr, caught.stderr
    witness = ws / ".tht" / "witness" / "reviewers.json"
    shutil.move(witness, ws / "witness.aside")
    deleted = _agent(ws, "catalog", "relationship", "delete", rid, "--reason", "x", "--as", ANN)
    assert deleted.returncode == 0, deleted.stderr
    store = FileSystemStore(ws / "sessions", ws / ".tht" / "cache")
    memory = registry_on(store)
    memory.append(
        memory.load_for_write(), [saved("ablazione", "flag", "procedures.flag", reviewer=ANN)]
    )
    shutil.move(ws / "reviewers.aside", ws / "reviewers")
    shutil.move(ws / "witness.aside", witness)

    catalog_verify = _agent(ws, "catalog", "verify", "--json")
    assert catalog_verify.returncode == 7, catalog_verify.stdout
    body = json.loads(catalog_verify.stdout)
    problems = body.get("problems") or body["error"]["details"]["problems"]
    assert [(p["code"], p["seq"]) for p in problems] == [("signature", len(catalog_lines) + 1)]
    memory_verify = _agent(ws, "memory", "verify", "--json")
    assert memory_verify.returncode == 7, memory_verify.stdout
    assert "signature" in memory_verify.stdout

    # and ann's next signed curation cannot cover the forgery: refused before the passphrase
    # is of any use, nothing written
    before = (ws / "catalog" / "ledger.jsonl").read_bytes()
    restored = _reviewer(
        ws, "catalog", "relationship", "restore", rid, "--as", ANN, typed=(ANN_PW,)
    )
    assert restored.returncode == 7, restored.stderr
    assert (ws / "catalog" / "ledger.jsonl").read_bytes() == before


def test_a_repair_that_cuts_where_signing_began_quarantines_the_unwitnessed_entries_too(
    tmp_path: Path,
) -> None:
    """Two unsigned human entries from before signing began, a sync between them; the registry
    records the second. A line between them is damaged: the cut there would leave the first
    one unwitnessed (its recorded successor gone), so the repair cuts from it, in one run, and
    records the repair; the catalog verifies after it."""
    store = MemoryStore()
    db = shop()
    catalog = _synced(store, db)
    ledger = store.workspace_ledger("catalog")
    first = _forge(ledger, _delete(catalog))
    db.add("suppliers", "id:INTEGER:pk", "name:TEXT")
    run_sync(catalog)
    state = catalog.load_for_write().state
    recorded = _forge(ledger, [plan_restore(state, CUSTOMER, reason="a real join", actor=ANN)])
    catalog = _checked(catalog, _registry_check(tmp_path, store, recorded=True))
    assert catalog.verify().ok
    damaged_seq = first + 1
    assert damaged_seq < recorded
    damaged = ev.decode_event(ledger.lines[damaged_seq - 1])
    ledger.lines[damaged_seq - 1] = ledger.lines[damaged_seq - 1].replace(
        damaged.prev.encode(), b"0" * 64
    )
    before, repaired = repair_catalog(catalog, actor=ANN, reason="a damaged line")
    assert not before.ok
    events = ledger.read().events
    assert [ev.info_of(e).type for e in events[first - 1 :]] == ["ledger_repaired"]
    assert events[-1].sig is not None
    assert catalog.verify().ok
    assert repaired.state.logical[CUSTOMER].state == "active"  # the deletion went with the cut
