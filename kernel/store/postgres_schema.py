"""The PostgreSQL store's own tables, as versioned migrations (ARCHITECTURE §3.5).

``init_schema`` applies, in one transaction under an advisory lock (so two ``tht store init``
never interleave), every migration the database has not recorded in ``tht_schema_migrations``;
it is idempotent. On a current store it runs no DDL at all, so the everyday role (no ``CREATE``:
docs/operations.md) may run it too; a missing migration is the owner role's to apply, and any
other role gets a :class:`~kernel.errors.PolicyError` (exit 5, nothing changed) saying so: the
server's privileges refuse the write, as they do ``tht sql run``'s. The store refuses a
database whose version is not :data:`LATEST` (``tht store init`` first; a newer version was
written by a newer tht).

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

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from kernel.errors import PolicyError
from kernel.store.postgres_conn import Database, installed_version
from kernel.store.postgres_libpq import PgError
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
# SQLSTATE insufficient_privilege: no CREATE in the schema, not the owner of a table
_INSUFFICIENT_PRIVILEGE = "42501"

_MIGRATIONS_TABLE = """CREATE TABLE tht_schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


def init_schema(dsn: str) -> list[str]:
    """Apply every missing migration; the labels applied now (``[]`` when up to date, which
    any role that may read ``tht_schema_migrations`` can run: no DDL then).
    ``PolicyError`` (exit 5, nothing changed) when a migration is missing and the role may not
    apply it (the everyday role: ``tht store init`` is the owner role's);
    ``UnavailableError`` (exit 6) when the server cannot be reached; the DSN is never shown."""
    db = Database(dsn, required_version=None)
    try:
        work = partial(_apply, reason=db.reason)
        return db.run("applying the store's schema migrations", work, retry=False)
    finally:
        db.close()


def schema_version(dsn: str) -> int:
    """The store's schema version in that database: 0 when ``init_schema`` never ran."""
    db = Database(dsn, required_version=None)
    try:
        return db.run("reading the store's schema version", installed_version)
    finally:
        db.close()


def _apply(conn: Connection, reason: Callable[[BaseException], str]) -> list[str]:
    """The missing migrations, applied in one transaction; no DDL at all when none is missing
    (PostgreSQL checks ``CREATE`` even for ``CREATE TABLE IF NOT EXISTS`` of a table that
    exists, and the everyday role has no ``CREATE``: docs/operations.md)."""
    denied: str | None = None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        recorded, role = _recorded(conn)
        missing = [m for m in MIGRATIONS if recorded is None or m.version not in recorded]
        if not missing:
            return []
        try:
            if recorded is None:
                conn.execute(_MIGRATIONS_TABLE)
            for migration in missing:
                _run(conn, migration)
        except PgError as err:
            if err.sqlstate != _INSUFFICIENT_PRIVILEGE:
                raise
            denied = reason(err)
        if denied is not None:  # raised here, not in ``except``: the driver's error is not kept
            raise _not_the_owner(max(recorded or {0}), role, denied)  # rolls the block back
    return [migration.label for migration in missing]


def _recorded(conn: Connection) -> tuple[set[int] | None, str]:
    """The versions ``tht_schema_migrations`` records (``None``: no such table) and the role
    connected; read without DDL, and without a failed statement (it would end the transaction)."""
    row = conn.execute(
        "SELECT to_regclass('tht_schema_migrations') IS NOT NULL, current_user::text"
    ).fetchone()
    assert row is not None
    exists, role = bool(row[0]), str(row[1])
    if not exists:
        return None, role
    return {int(r[0]) for r in conn.execute("SELECT version FROM tht_schema_migrations")}, role


def _run(conn: Connection, migration: Migration) -> None:
    for statement in migration.statements:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO tht_schema_migrations (version, name) VALUES (%s, %s)",
        (migration.version, migration.name),
    )


def _not_the_owner(version: int, role: str, reason: str) -> PolicyError:
    return PolicyError(
        f"the PostgreSQL store's tables are at schema version {version}, this tht needs "
        f"{LATEST}, and the role {role} may not change the schema ({reason}): run "
        "`tht store init` as the store's owner role (the one that may CREATE in its database; "
        "docs/operations.md); nothing was changed"
    )
