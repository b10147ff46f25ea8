"""The PostgreSQL store's own tables, as versioned migrations (ARCHITECTURE §3.5).

``init_schema`` applies, in one transaction under an advisory lock (so two ``tht store init``
never interleave), every migration the database has not recorded in ``tht_schema_migrations``;
it is idempotent. The store refuses a database whose version is not :data:`LATEST`
(``tht store init`` first; a newer version was written by a newer tht).

Every row is namespaced by ``workspace`` (one server may hold several workspaces) and by
``ledger``: ``session:<id>`` for a session, ``catalog`` / ``memory`` for the workspace-level
ledgers. ``tht_ledger_events.line`` holds the exact bytes the filesystem ledger writes (one
line, without its newline); the envelope columns and ``payload`` (jsonb, NULL for the rare
payload jsonb cannot hold: a ``\\u0000`` in a string) are copies of the line, for queries only.
``tht_ledgers`` is each ledger's head row: the anchor ``(last_seq, head)`` (``head`` NULL until
the first append) and the row an append locks and updates. It is kept small on purpose: every
append writes a new version of it (``fillfactor`` leaves room for those on its page, so they
stay heap-only), and a session's workflow snapshot (kilobytes) lives beside it in
``tht_workflows``, written once (inline, it would be copied into the WAL on every append).
``tht_ledger_events`` has no foreign key to it: rows are only written by the append statement,
which moves the head row first (the check would cost every append a lookup of the row it just
updated). No index beyond the primary key either: each is paid by every append.

``tht_outbox`` (version 2) holds the after-finalize outbox's items
(:mod:`kernel.store.postgres_outbox`). Version 3 keeps the rules an append writes against
(``kind`` one of three, ``last_seq >= 0``, ``seq > 0``) as a foreign key to
``tht_ledger_kinds`` and the domains ``tht_last_seq`` and ``tht_seq`` instead of CHECK
constraints, which the server re-plans on every append.

The tables live in the first schema of the role's ``search_path`` (``public`` by default; put
``options=-csearch_path%3Dtht`` in the URL for another).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.store.postgres_conn import Database, installed_version
from kernel.store.postgres_outbox import OUTBOX_TABLE

if TYPE_CHECKING:
    from kernel.store.postgres_driver import Connection

__all__ = ["LATEST", "MIGRATIONS", "Migration", "init_schema", "schema_version"]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"


_INITIAL = (
    """CREATE TABLE tht_ledgers (
        workspace text NOT NULL,
        ledger text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('session', 'catalog', 'memory')),
        ledger_id text NOT NULL,
        last_seq bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
        head text,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace, ledger)
    ) WITH (fillfactor = 50)""",
    """CREATE TABLE tht_workflows (
        workspace text NOT NULL,
        ledger text NOT NULL,
        workflow bytea NOT NULL,
        PRIMARY KEY (workspace, ledger),
        FOREIGN KEY (workspace, ledger) REFERENCES tht_ledgers (workspace, ledger)
    )""",
    """CREATE TABLE tht_ledger_events (
        workspace text NOT NULL,
        ledger text NOT NULL,
        seq bigint NOT NULL CHECK (seq > 0),
        type text NOT NULL,
        actor text NOT NULL,
        stage text,
        ts text NOT NULL,
        payload jsonb,
        prev text NOT NULL,
        line bytea NOT NULL,
        PRIMARY KEY (workspace, ledger, seq)
    )""",
    """CREATE TABLE tht_ledger_quarantine (
        id bigserial PRIMARY KEY,
        workspace text NOT NULL,
        ledger text NOT NULL,
        seq bigint NOT NULL,
        line bytea NOT NULL,
        moved_at timestamptz NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE tht_objects (
        workspace text NOT NULL,
        ledger text NOT NULL,
        sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
        data bytea NOT NULL,
        PRIMARY KEY (workspace, ledger, sha256),
        FOREIGN KEY (workspace, ledger) REFERENCES tht_ledgers (workspace, ledger)
    )""",
    """CREATE TABLE tht_artifacts (
        workspace text NOT NULL,
        ledger text NOT NULL,
        name text NOT NULL,
        sha256 text NOT NULL,
        PRIMARY KEY (workspace, ledger, name),
        FOREIGN KEY (workspace, ledger, sha256) REFERENCES tht_objects (workspace, ledger, sha256)
    )""",
    """CREATE TABLE tht_caches (
        workspace text NOT NULL,
        ledger text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('status', 'checkpoint', 'fold')),
        data bytea NOT NULL,
        PRIMARY KEY (workspace, ledger, kind)
    )""",
    # a status cache is a msgpack of the whole folded state: rewritten often, rarely smaller
    # compressed; kept out of line uncompressed (pglz on every rewrite costs more than it saves)
    "ALTER TABLE tht_caches ALTER COLUMN data SET STORAGE EXTERNAL",
)

# Version 3: the rules an append writes against, kept, but checked without re-planning them
# on every append. PostgreSQL reads and plans a table's CHECK constraints anew for every
# statement that writes a row of it — every append updates the head row and inserts a line —
# whereas a domain's constraint is compiled once per session, and a foreign key whose column the
# update leaves alone is not looked at. Measured (pg_stat_statements, least time of 3,000): the
# head row's UPDATE 6.3-6.8 us with its two CHECKs, 3.3-3.5 with these; a line's INSERT
# 3.5-3.7 with ``seq > 0`` as a CHECK, 2.4-2.7 as a domain. The domains are attached before
# they get their rule (no rewrite of the tables; adding the rule checks the rows once).
_WRITE_RULES = (
    "CREATE DOMAIN tht_last_seq AS bigint",
    "CREATE DOMAIN tht_seq AS bigint",
    "CREATE TABLE tht_ledger_kinds (kind text PRIMARY KEY)",
    "INSERT INTO tht_ledger_kinds (kind) VALUES ('session'), ('catalog'), ('memory')",
    """ALTER TABLE tht_ledgers
        ALTER COLUMN last_seq TYPE tht_last_seq,
        ADD CONSTRAINT tht_ledgers_kind_fkey FOREIGN KEY (kind) REFERENCES tht_ledger_kinds,
        DROP CONSTRAINT tht_ledgers_kind_check,
        DROP CONSTRAINT tht_ledgers_last_seq_check""",
    """ALTER TABLE tht_ledger_events
        ALTER COLUMN seq TYPE tht_seq,
        DROP CONSTRAINT tht_ledger_events_seq_check""",
    "ALTER DOMAIN tht_last_seq ADD CONSTRAINT tht_last_seq_check CHECK (VALUE >= 0)",
    "ALTER DOMAIN tht_seq ADD CONSTRAINT tht_seq_check CHECK (VALUE > 0)",
)

#: every migration, in order; a released one is never edited (add the next version instead)
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "ledgers_objects_caches", _INITIAL),
    # the after-finalize outbox (kernel.store.postgres_outbox)
    Migration(2, "outbox", OUTBOX_TABLE),
    # the rules of the head row and of a line as domains and a foreign key (cheaper appends)
    Migration(3, "write_rules", _WRITE_RULES),
)
LATEST = MIGRATIONS[-1].version

# pg_advisory_xact_lock key of schema changes ("tht" + "schema", as ASCII, in one bigint)
_LOCK_KEY = 0x7468_7473_6368_656D


def init_schema(dsn: str) -> list[str]:
    """Apply every missing migration; the labels applied now (``[]`` when up to date).
    ``UnavailableError`` (exit 6) when the server cannot be reached; the DSN is never shown."""
    db = Database(dsn, required_version=None)
    try:
        return db.run("applying the store's schema migrations", _apply, retry=False)
    finally:
        db.close()


def schema_version(dsn: str) -> int:
    """The store's schema version in that database: 0 when ``init_schema`` never ran."""
    db = Database(dsn, required_version=None)
    try:
        return db.run("reading the store's schema version", installed_version)
    finally:
        db.close()


def _apply(conn: Connection) -> list[str]:
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            """CREATE TABLE IF NOT EXISTS tht_schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )"""
        )
        done = {row[0] for row in conn.execute("SELECT version FROM tht_schema_migrations")}
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO tht_schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration.label)
    return applied
