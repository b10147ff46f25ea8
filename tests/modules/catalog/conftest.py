"""A workspace bound to a real SQLite Workspace Database, for the catalog's CLI tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.tht.conftest import run_tht

#: the fixed database of the goldens: customers, countries by code, orders, items, products
SHOP = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country_code TEXT);
CREATE TABLE countries (code TEXT PRIMARY KEY, name TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, placed DATE,
                     total NUMERIC(10, 2));
CREATE TABLE order_items (
    id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders (id),
    product_id INTEGER,
    qty INTEGER
);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT);
"""


def alter(db: Path, sql: str) -> None:
    """Change the database outside tht (as its owner would)."""
    conn = sqlite3.connect(db)
    try:
        conn.executescript(sql)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def shop_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    monkeypatch.setenv("THT_SEED", "7")
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    for var in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(var, raising=False)
    assert run_tht("workspace", "init", str(root)).code == 0
    (root / "data").mkdir()
    alter(root / "data" / "shop.db", SHOP)
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write('\ndatabase: {url: "sqlite:///data/shop.db"}\n')
        # the schema index follows every sync: the hashing embedder keeps that cheap here
        fh.write("evidence: {embedder: hashing}\n")
    return root
