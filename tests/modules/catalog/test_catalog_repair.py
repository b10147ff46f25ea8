"""The catalog ledger's explicit repair (ARCHITECTURE §3.9 rule 3): a crash mid-append (a torn
final line) or a damaged line leaves the catalog refusing every write (exit 7) — no write ever
launders it — until a human runs ``tht catalog verify --repair``, which quarantines the damage
and records ``ledger_repaired``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.modules.catalog.conftest import alter
from tests.tht.conftest import run_tht

ANN = ("--as", "human:ann")


def _ledger(workspace: Path) -> Path:
    return workspace / "catalog" / "ledger.jsonl"


def test_a_torn_tail_blocks_writes_until_a_human_repairs_it(
    shop_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_tht("catalog", "sync").code == 0
    ledger = _ledger(shop_workspace)
    ledger.write_bytes(ledger.read_bytes() + b'{"type":"catalog_sync_started","seq":')  # crash
    torn = ledger.read_bytes()
    assert run_tht("catalog", "verify").code == 7
    assert run_tht("catalog", "sync").code == 7  # an append never repairs anything
    assert ledger.read_bytes() == torn
    monkeypatch.setenv("THT_ACTOR", "agent")
    refused = run_tht("catalog", "verify", "--repair", "--reason", "crash", *ANN)
    assert refused.code == 5 and ledger.read_bytes() == torn
    monkeypatch.delenv("THT_ACTOR")
    assert run_tht("catalog", "verify", "--repair", *ANN).code == 2  # a reason is required
    done = run_tht("catalog", "verify", "--repair", "--reason", "power cut", *ANN, "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert body["repaired"] is True and body["problems"][0]["code"] == "torn_tail"
    assert run_tht("catalog", "verify").code == 0
    last = json.loads(ledger.read_bytes().splitlines()[-1])
    assert last["type"] == "ledger_repaired" and last["actor"] == "human:ann"
    assert last["payload"]["reason"] == "power cut"
    alter(shop_workspace / "data" / "shop.db", "ALTER TABLE customers ADD COLUMN phone TEXT")
    assert run_tht("catalog", "sync").code == 0  # writes work again


def test_repairing_a_catalog_that_verifies_is_refused(shop_workspace: Path) -> None:
    assert run_tht("catalog", "sync").code == 0
    before = _ledger(shop_workspace).read_bytes()
    done = run_tht("catalog", "verify", "--repair", "--reason", "just in case", *ANN)
    assert done.code == 5 and "nothing to repair" in done.stderr
    assert _ledger(shop_workspace).read_bytes() == before
