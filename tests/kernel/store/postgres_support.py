"""Reaching behind a PostgreSQL store, for tests: fresh databases, the rows of a ledger, damage
done with SQL (what the contract suite's tamper hooks and the kernel state machine need).

Every helper runs on the store's own connection (``PostgresStore.database``): no extra login
per call, and the store's lock keeps it from interleaving with the store's statements.
"""

from __future__ import annotations

import itertools
from typing import Any

from kernel.store.postgres import PostgresStore, init_schema
from tests.support.postgres import PostgresServer

__all__ = [
    "damage_line",
    "damage_object",
    "damage_workspace_object",
    "drop_cache",
    "dump",
    "fresh_database",
    "lines",
]

_numbers = itertools.count()


def fresh_database(server: PostgresServer, prefix: str) -> str:
    """A new database with the store's tables; its DSN."""
    dsn = server.dsn(server.create_database(f"tht_store_{prefix}_{next(_numbers)}"))
    init_schema(dsn)
    return dsn


def _sql(store: PostgresStore, sql: str, **params: object) -> list[tuple[Any, ...]]:
    def work(conn: Any) -> list[tuple[Any, ...]]:
        return conn.execute(sql, {"ws": store.workspace, **params}).fetchall()

    return store.database.run("test SQL", work)


def lines(store: PostgresStore, ledger: str) -> list[bytes]:
    """Every line of a ledger (``session:<id>``, ``catalog``, ``memory``), in seq order."""
    rows = _sql(
        store,
        "SELECT line FROM tht_ledger_events WHERE workspace = %(ws)s AND ledger = %(key)s "
        "ORDER BY seq",
        key=ledger,
    )
    return [bytes(r[0]) for r in rows]


def damage_line(store: PostgresStore, ledger: str, seq: int, data: bytes) -> None:
    _sql(
        store,
        "UPDATE tht_ledger_events SET line = %(data)s "
        "WHERE workspace = %(ws)s AND ledger = %(key)s AND seq = %(seq)s",
        key=ledger,
        seq=seq,
        data=data,
    )


def damage_object(store: PostgresStore, ledger: str, sha256: str) -> None:
    _sql(
        store,
        "UPDATE tht_objects SET data = 'altered'::bytea "
        "WHERE workspace = %(ws)s AND ledger = %(key)s AND sha256 = %(sha)s",
        key=ledger,
        sha=sha256,
    )


def damage_workspace_object(store: PostgresStore, name: str, sha256: str) -> None:
    damage_object(store, name, sha256)


def drop_cache(store: PostgresStore, ledger: str, kind: str = "status") -> None:
    _sql(
        store,
        "DELETE FROM tht_caches WHERE workspace = %(ws)s AND ledger = %(key)s AND kind = %(kind)s",
        key=ledger,
        kind=kind,
    )


def dump(store: PostgresStore, ledger: str) -> dict[str, object]:
    """Everything the store holds for a ledger but its caches: every event row (all columns),
    the head row, the quarantine, objects and materialized artifacts."""
    where = "WHERE workspace = %(ws)s AND ledger = %(key)s"
    tables = {
        "events": f"SELECT * FROM tht_ledger_events {where} ORDER BY seq",
        "head": f"SELECT last_seq, head, kind, ledger_id FROM tht_ledgers {where}",
        "workflow": f"SELECT workflow FROM tht_workflows {where}",
        "quarantine": f"SELECT seq, line FROM tht_ledger_quarantine {where} ORDER BY id",
        "objects": f"SELECT sha256, data FROM tht_objects {where} ORDER BY sha256",
        "artifacts": f"SELECT name, sha256 FROM tht_artifacts {where} ORDER BY name",
    }
    return {name: _sql(store, sql, key=ledger) for name, sql in tables.items()}
