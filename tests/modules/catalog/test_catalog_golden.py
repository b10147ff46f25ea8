"""Golden: the catalog ledger and the Effective Relationship Map of a fixed SQLite database,
through a fixed curation story (THT_CLOCK / THT_SEED make every byte repeat).

Regenerate with ``pytest tests/modules/catalog/test_catalog_golden.py --update-golden`` and
explain the diff in the commit message.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.modules.catalog.conftest import alter
from tests.tht.conftest import run_tht

GOLDEN = Path(__file__).resolve().parents[3] / "golden" / "catalog"
ANN = ("--as", "human:ann")


def ok(*args: str) -> dict[str, object] | list[dict[str, str]]:
    done = run_tht("catalog", *args, "--json")
    assert done.code == 0, (args, done.stderr)
    body: dict[str, object] | list[dict[str, str]] = done.json()
    return body


def rid(source: str) -> str:
    entries = ok("relationships", "--include-deleted")
    assert isinstance(entries, list)
    return next(e["id"] for e in entries if e["from"] == source)


def story(ws: Path) -> None:
    ok("sync")
    ok("relationship", "delete", rid("orders.customer_id"), "--reason", "not yet", *ANN)
    ok("relationship", "add", "orders.placed", "customers.name", "--rationale", "demo", *ANN)
    alter(
        ws / "data" / "shop.db",
        "CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT);"
        "ALTER TABLE products ADD COLUMN supplier_id INTEGER;",
    )
    ok("sync")
    ok("relationship", "delete", rid("products.supplier_id"), "--permanent", "--reason", "x", *ANN)
    ok("relationship", "reconstruct", "--reason", "rebuild", *ANN)
    ok("cleanup", "--column", "orders.customer_id", "--reason", "tidy", *ANN)
    # unchanged: restores the column; its relationship, logically deleted before the cleanup,
    # is not generated anew (the cleanup made the deletion permanent: relationship_decisions.py)
    ok("sync")
    ok("sync")  # unchanged, and nothing to restore: the fast path
    ok("sync", "--scope", "orders")
    ok("relationship", "delete", rid("customers.country_code"), "--reason", "keep out", *ANN)


def compare(name: str, data: bytes, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert path.read_bytes() == data, f"{name} drifted (run with --update-golden and explain)"


def test_the_catalog_ledger_and_relationship_map_are_golden(
    shop_workspace: Path, update_golden: bool
) -> None:
    story(shop_workspace)
    ledger = (shop_workspace / "catalog" / "ledger.jsonl").read_bytes()
    assert b"/tmp" not in ledger and str(shop_workspace).encode() not in ledger
    compare("ledger.jsonl", ledger, update_golden)
    relationships = ok("relationships", "--include-deleted")
    compare(
        "relationships.json",
        (json.dumps(relationships, indent=2) + "\n").encode(),
        update_golden,
    )
    assert ok("verify") == {
        "ok": True,
        "events": ledger.count(b"\n"),
        "head": run_tht("catalog", "verify", "--json").json()["head"],
        "problems": [],
        "repaired": False,
    }
