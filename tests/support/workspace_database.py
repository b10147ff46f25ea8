"""One fixture schema, created in SQLite and in the real PostgreSQL test server, for the
``kernel.database`` contract and attack suites.

The schema has a composite primary key, a composite (named) foreign key, unnamed foreign keys,
indexes (one unique), a view, nullable and not-null columns, a sequence on PostgreSQL, and a few
rows. :class:`Backend` gives the binding tht uses (read-only by construction), a way to change
the database *outside* tht (as its owner), and a fingerprint of everything a write could touch.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.database import DatabaseBinding, binding_from_url
from tests.support.postgres import PostgresServer

__all__ = [
    "PASSWORD",
    "SCHEMA",
    "TABLES",
    "Backend",
    "postgres_backend",
    "sqlite_backend",
    "workspace_files",
]

#: the password of the PostgreSQL owner role: every error path is checked for it
PASSWORD = "s3cr3t-PASS"
OWNER = "tht_owner"

SCHEMA = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email VARCHAR(120)
);
CREATE TABLE products (
    sku TEXT NOT NULL,
    variant INTEGER NOT NULL,
    title TEXT,
    price NUMERIC(10, 2),
    PRIMARY KEY (sku, variant)
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id),
    placed_on DATE
);
CREATE TABLE order_lines (
    order_id INTEGER NOT NULL,
    line_no INTEGER NOT NULL,
    sku TEXT NOT NULL,
    variant INTEGER NOT NULL,
    qty INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (order_id, line_no),
    CONSTRAINT fk_line_product FOREIGN KEY (sku, variant) REFERENCES products (sku, variant),
    FOREIGN KEY (order_id) REFERENCES orders (id)
);
CREATE INDEX ix_orders_customer ON orders (customer_id, placed_on);
CREATE UNIQUE INDEX ux_customers_email ON customers (email);
CREATE VIEW big_orders AS
    SELECT o.id AS order_id, c.name AS customer
    FROM orders o JOIN customers c ON c.id = o.customer_id;
INSERT INTO customers VALUES
    (1, 'Ann', 'ann@example.org'), (2, 'Bob', NULL), (3, 'Çelik', 'c@example.org');
INSERT INTO products VALUES ('A-1', 1, 'Kettle', 12.50), ('A-1', 2, 'Kettle XL', 19.90);
INSERT INTO orders VALUES (10, 1, '2024-01-31'), (11, 2, '2024-02-29'), (12, 1, NULL);
INSERT INTO order_lines VALUES
    (10, 1, 'A-1', 1, 2), (10, 2, 'A-1', 2, 1), (11, 1, 'A-1', 1, 1), (12, 1, 'A-1', 2, 3);
"""
TABLES = ("customers", "products", "orders", "order_lines")


@dataclass
class Backend:
    """One bound fixture database."""

    name: str
    binding: DatabaseBinding
    root: Path
    #: run SQL as the database's owner, outside tht (to change the structure under test)
    write: Callable[[str], None]
    #: what a write would change: data checksums, structure, objects, files
    fingerprint: Callable[[], Any]
    #: a query that runs until stopped
    slow_sql: str


def workspace_files(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the SHA-256 of its bytes."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def sqlite_backend(root: Path) -> Backend:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "data" / "shop.db"
    path.parent.mkdir(exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.commit()
    conn.close()

    def write(sql: str) -> None:
        with sqlite3.connect(path) as conn:
            conn.executescript(sql)
        conn.close()

    return Backend(
        name="sqlite",
        binding=binding_from_url(root, "sqlite:///data/shop.db"),
        root=root,
        write=write,
        fingerprint=lambda: workspace_files(root),
        slow_sql=(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        ),
    )


def postgres_backend(
    server: PostgresServer, root: Path, dbname: str, *, superuser: bool = False
) -> Backend:
    """The fixture schema in a fresh database ``dbname`` owned by the role ``tht_owner``
    (password :data:`PASSWORD`); the binding logs in as that owner, or as the server's
    superuser, both roles that *could* write."""
    import psycopg

    root.mkdir(parents=True, exist_ok=True)
    server.execute("postgres", f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
    if not server.execute("postgres", "SELECT 1 FROM pg_roles WHERE rolname = %s", (OWNER,)):
        server.create_role(OWNER, PASSWORD)
    server.create_database(dbname, owner=OWNER)
    owner_dsn = server.dsn(dbname, user=OWNER, password=PASSWORD)
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        conn.execute(SCHEMA + "CREATE SEQUENCE order_seq;")

    def write(sql: str) -> None:
        with psycopg.connect(owner_dsn, autocommit=True) as conn:
            conn.execute(sql)

    def fingerprint() -> Any:
        with psycopg.connect(server.dsn(dbname), autocommit=True) as conn:
            data = {
                table: conn.execute(
                    "SELECT count(*), md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), ''))"
                    f" FROM {table} t"
                ).fetchone()
                for table in TABLES
            }
            objects = conn.execute(
                "SELECT n.nspname, c.relname, c.relkind FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') "
                "ORDER BY 1, 2"
            ).fetchall()
            sequence = conn.execute("SELECT last_value, is_called FROM order_seq").fetchone()
            large = conn.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()
        return {
            "data": data,
            "objects": objects,
            "sequence": sequence,
            "large_objects": large,
            "files": workspace_files(root),
        }

    dsn = server.dsn(dbname) if superuser else owner_dsn
    return Backend(
        name="postgresql",
        binding=binding_from_url(root, dsn, origin="$THT_DATABASE_URL"),
        root=root,
        write=write,
        fingerprint=fingerprint,
        slow_sql="SELECT pg_sleep(60)",
    )
