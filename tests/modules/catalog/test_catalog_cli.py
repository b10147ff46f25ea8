"""``tht catalog …`` against a real SQLite Workspace Database: the JSON contract of
ARCHITECTURE §6, exit codes, human-only curation, and what is (not) written on error."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.modules.catalog.conftest import alter
from tests.tht.conftest import run_tht

ANN = ("--as", "human:ann")


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its hash (the fake clock's file excluded)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "fake-clock"
    }


def sync(*extra: str) -> dict[str, object]:
    done = run_tht("catalog", "sync", "--json", *extra)
    assert done.code == 0, done.stderr
    body: dict[str, object] = done.json()
    return body


def test_sync_answers_the_contract_and_show_lists_the_catalog(shop_workspace: Path) -> None:
    body = sync()
    assert list(body) == ["run", "status", "tables", "columns", "relationships", "capabilities"]
    assert (body["status"], body["tables"], body["columns"], body["relationships"]) == (
        "completed",
        5,
        15,
        4,
    )
    assert body["capabilities"] == {
        "tables": "observed",
        "columns": "observed",
        "primary_keys": "observed",
        "relationships": "observed",
        "indexes": "observed",
    }
    shown = run_tht("catalog", "show", "orders", "--json").json()
    assert list(shown) == ["tables", "freshness"]
    (orders,) = shown["tables"]
    assert list(orders) == ["name", "description", "columns", "generated"]
    assert orders["columns"][0] == {
        "name": "id",
        "type": "INTEGER",
        "pk": True,
        "sensitive": False,
        "description": "",
        "generated": None,
    }
    assert shown["freshness"]["state"] == "fresh"
    assert run_tht("catalog", "show", "nope", "--json").code == 3


def test_the_relationship_map_and_its_deleted_entries(shop_workspace: Path) -> None:
    sync()
    entries = run_tht("catalog", "relationships", "--json").json()
    assert all(list(e) == ["id", "from", "to", "origin", "state"] for e in entries)
    generated = next(e for e in entries if e["from"] == "orders.customer_id")
    assert (generated["to"], generated["origin"]) == ("customers.id", "generated")
    rid = generated["id"]
    done = run_tht(
        "catalog", "relationship", "delete", rid, "--reason", "not a join", *ANN, "--json"
    )
    assert done.code == 0, done.stderr
    assert rid not in {e["id"] for e in run_tht("catalog", "relationships", "--json").json()}
    deleted = run_tht("catalog", "relationships", "--include-deleted", "--json").json()
    assert {"id": rid, "state": "deleted"}.items() <= next(
        e for e in deleted if e["id"] == rid
    ).items()
    assert run_tht("catalog", "relationship", "restore", rid, *ANN).code == 0


def test_curation_is_human_only(shop_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sync()
    rid = run_tht("catalog", "relationships", "--json").json()[0]["id"]
    before = tree(shop_workspace / "catalog")
    assert run_tht("catalog", "relationship", "reconstruct").code == 2  # no --as
    assert run_tht("catalog", "relationship", "reconstruct", "--as", "agent").code == 5
    monkeypatch.setenv("THT_ACTOR", "agent")
    for args in (
        ("relationship", "delete", rid, "--reason", "x", *ANN),
        ("relationship", "restore", rid, *ANN),
        ("relationship", "add", "orders.placed", "customers.name", *ANN),
        ("relationship", "reconstruct", *ANN),
        ("cleanup", "--table", "orders", "--reason", "x", *ANN),
    ):
        done = run_tht("catalog", *args, "--json")
        assert done.code == 5, args
        assert json.loads(done.stdout)["error"]["exit_code"] == 5
    assert tree(shop_workspace / "catalog") == before
    assert run_tht("catalog", "sync", "--json").code == 0  # an agent may sync


def test_add_reconstruct_and_cleanup_through_the_cli(shop_workspace: Path) -> None:
    sync()
    added = run_tht(
        "catalog", "relationship", "add", "orders.placed", "customers.name",
        "--rationale", "demo", *ANN, "--json",
    )  # fmt: skip
    assert added.code == 0, added.stderr
    assert added.json()["events"][0]["type"] == "relationship_added"
    again = run_tht("catalog", "relationship", "add", "orders.placed", "customers.name", *ANN)
    assert again.code == 5 and "already exists" in again.stderr
    rebuilt = run_tht("catalog", "relationship", "reconstruct", *ANN, "--json").json()
    assert rebuilt["generated"] == []
    cleaned = run_tht(
        "catalog", "cleanup", "--table", "customers", "--column", "orders.placed",
        "--reason", "tidy", *ANN, "--json",
    )  # fmt: skip
    assert cleaned.code == 0, cleaned.stderr
    shown = run_tht("catalog", "show", "--json").json()
    assert "customers" not in [t["name"] for t in shown["tables"]]
    assert run_tht("catalog", "cleanup", "--table", "customers", "--reason", "x", *ANN).code == 3
    assert run_tht("catalog", "cleanup", "--table", "orders", *ANN).code == 2  # no reason


def test_no_binding_is_exit_2_with_the_fix_and_nothing_written(shop_workspace: Path) -> None:
    settings = shop_workspace / "workspace.yaml"
    settings.write_text(
        settings.read_text().replace('database: {url: "sqlite:///data/shop.db"}', "")
    )
    done = run_tht("catalog", "sync", "--json")
    assert done.code == 2
    assert "no database bound in workspace.yaml: add database: {url: ...}" in done.stderr
    assert not (shop_workspace / "catalog").exists()
    # reading an empty catalog is fine: nothing to show, never synced
    shown = run_tht("catalog", "show", "--json").json()
    assert shown["tables"] == [] and shown["freshness"]["state"] == "never_synced"


def test_an_unreachable_database_is_exit_6_with_nothing_written(shop_workspace: Path) -> None:
    (shop_workspace / "data" / "shop.db").unlink()
    done = run_tht("catalog", "sync", "--json")
    assert done.code == 6, done.stderr
    assert not (shop_workspace / "catalog").exists()


def test_freshness_goes_stale_when_the_database_changes(shop_workspace: Path) -> None:
    sync()
    alter(shop_workspace / "data" / "shop.db", "ALTER TABLE orders ADD COLUMN note TEXT;")
    status = run_tht("catalog", "status", "--json").json()
    assert status["freshness"]["state"] == "stale"
    assert "orders" in status["freshness"]["stale_tables"]
    sync("--scope", "orders")
    shown = run_tht("catalog", "show", "--json").json()["freshness"]
    assert shown["tables"]["orders"]["state"] == "fresh"
    assert shown["tables"]["customers"]["state"] == "stale" and shown["state"] == "stale"
    runs = run_tht("catalog", "status", "--json").json()["runs"]
    assert [r["scope"] for r in runs] == [None, ["orders"]]
    assert all(Path(shop_workspace / r["log"]).is_file() for r in runs)


def test_verify_passes_then_fails_on_tampering_with_exit_7(shop_workspace: Path) -> None:
    sync()
    assert run_tht("catalog", "verify", "--json").json()["ok"] is True
    ledger = shop_workspace / "catalog" / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b'"rule":"table_pk"', b'"rule":"pk_table"', 1))
    done = run_tht("catalog", "verify", "--json")
    assert done.code == 7
    assert not done.json()["ok"]
    assert run_tht("catalog", "sync", "--json").code == 7  # no write on a damaged catalog
    assert run_tht("catalog", "relationship", "reconstruct", *ANN).code == 7


def test_verify_without_a_catalog_is_not_found(shop_workspace: Path) -> None:
    assert run_tht("catalog", "verify", "--json").code == 3


def test_human_output_is_readable(shop_workspace: Path) -> None:
    done = run_tht("catalog", "sync")
    assert done.code == 0 and "completed" in done.stdout
    assert "orders.customer_id" in run_tht("catalog", "relationships").stdout
    assert "customer_id" in run_tht("catalog", "show", "orders").stdout
    assert "freshness: fresh" in run_tht("catalog", "status").stdout
    assert run_tht("catalog", "verify").stdout.startswith("ok:")


def test_reindex_rebuilds_the_schema_index_from_the_catalog(shop_workspace: Path) -> None:
    assert run_tht("catalog", "reindex", "--json").code == 2  # never synced
    sync()  # the sync brought the index up to date already
    body = run_tht("catalog", "reindex", "--json").json()
    assert (body["tables"], body["columns"], body["embedded"]) == (5, 15, 0)


def test_a_first_append_that_never_completed_leaves_a_fresh_catalog(shop_workspace: Path) -> None:
    folder = shop_workspace / "catalog"
    folder.mkdir()
    (folder / "ledger.jsonl").write_bytes(b"")  # opened, nothing written, nothing anchored
    (folder / "ledger.head").write_bytes(b"")
    assert run_tht("catalog", "sync", "--json").code == 0
    assert run_tht("catalog", "verify", "--json").json()["ok"]
