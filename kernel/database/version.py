"""``structure_version(binding)``: a cheap fingerprint of the Workspace Database's structure.

Same structure, same string; a table, view, column, type, nullability, key, foreign key, index
or comment that changes gives another one. Data changes never do. One query, so the Metadata
Catalog can compare it with the version of its last sync and skip introspection when nothing
changed (Catalog Freshness).

SQLite
    SHA-256 over the rows of ``sqlite_master`` (type, name, tbl_name, sql), sorted: SQLite
    keeps every object's defining SQL there, and rewrites it on ALTER TABLE.
PostgreSQL
    SHA-256, computed by the server, over one line per relation, column (number, name,
    ``format_type``, not-null, comment), constraint (``pg_get_constraintdef``) and index
    (``pg_get_indexdef``) of the bound schema, sorted in the "C" collation.

The value is ``<dialect>:<64 hex digits>``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.database.binding import DatabaseBinding
from kernel.database.errors import DatabaseUnavailable
from kernel.database.readonly import connect_postgres, connect_sqlite, postgres_reason

if TYPE_CHECKING:
    import psycopg

__all__ = ["postgres_structure_version", "sqlite_structure_version", "structure_version"]

_SQLITE_MASTER = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name, tbl_name"

_POSTGRES = """
WITH rels AS (
    SELECT c.oid, c.relname, c.relkind
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
), lines AS (
    SELECT json_build_array('rel', r.relname, r.relkind::text,
                            pg_catalog.obj_description(r.oid, 'pg_class'))::text AS line
    FROM rels r
    UNION ALL
    SELECT json_build_array('col', r.relname, a.attnum, a.attname,
                            pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
                            pg_catalog.col_description(r.oid, a.attnum))::text
    FROM rels r JOIN pg_catalog.pg_attribute a ON a.attrelid = r.oid
    WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT json_build_array('con', r.relname, k.conname, k.contype::text,
                            pg_catalog.pg_get_constraintdef(k.oid, true))::text
    FROM rels r JOIN pg_catalog.pg_constraint k ON k.conrelid = r.oid
    UNION ALL
    SELECT json_build_array('idx', r.relname, i.relname,
                            pg_catalog.pg_get_indexdef(x.indexrelid))::text
    FROM rels r
    JOIN pg_catalog.pg_index x ON x.indrelid = r.oid
    JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
)
SELECT encode(sha256(convert_to(
    coalesce(string_agg(line, E'\\n' ORDER BY line COLLATE "C"), ''), 'UTF8')), 'hex')
FROM lines
"""


def structure_version(binding: DatabaseBinding) -> str:
    """The current structure version of the binding's database (one read-only query)."""
    if binding.dialect == "sqlite":
        conn, _ = connect_sqlite(binding)
        try:
            return sqlite_structure_version(conn)
        except sqlite3.Error as err:
            raise DatabaseUnavailable(f"workspace database {binding.display}: {err}") from None
        finally:
            conn.close()
    import psycopg

    pg = connect_postgres(binding, timeout_ms=binding.timeout_ms)
    reason = ""
    try:
        return postgres_structure_version(pg, binding.schema or "public")
    except psycopg.Error as err:
        reason = postgres_reason(binding, err)
    finally:
        pg.close()  # never committed: closing ends the read-only transaction
    raise DatabaseUnavailable(f"workspace database {binding.display}: {reason}")


def sqlite_structure_version(conn: sqlite3.Connection) -> str:
    rows: list[Any] = conn.execute(_SQLITE_MASTER).fetchall()
    return "sqlite:" + hashlib.sha256(msgspec.json.encode(rows)).hexdigest()


def postgres_structure_version(conn: psycopg.Connection[Any], schema: str) -> str:
    row = conn.execute(_POSTGRES, {"schema": schema}).fetchone()
    return "postgresql:" + str(row[0] if row else "")
