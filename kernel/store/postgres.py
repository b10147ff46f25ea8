"""The PostgreSQL store (ARCHITECTURE §3.1, §3.5): every ledger — sessions, the Metadata
Catalog, the Memory registry — and every content-addressed object in one database, for many
reviewers on many machines. Same contract as the filesystem store
(``tests/contract/test_session_store.py`` runs against both).

``workspace`` namespaces every row, so one server may hold several workspaces. The tables and
their versioned migrations are in :mod:`kernel.store.postgres_schema` (``tht store init``); the
ledgers (append with expected last seq, the head-row lock, NOTIFY) in
:mod:`kernel.store.postgres_ledger`; connections and error mapping in
:mod:`kernel.store.postgres_conn`; live views in :mod:`kernel.store.postgres_listen`.

One connection per store (opened on first use), shared by its ledgers under a lock. A server
that cannot be reached is :class:`~kernel.errors.UnavailableError` (exit 6), with nothing
changed and without the DSN. libpq is loaded only when a connection is opened
(:mod:`kernel.store.postgres_libpq`: the store's driver, not psycopg, whose import alone costs
more than ``tht session status`` may).

Round trips of ``tht session status`` with a warm cache: the connection's set-up (durability
and schema version), the session (its existence, workflow snapshot and first line: one
statement), the status cache (with the ledger's last line), the rows after the cache's seq,
the head row — five statements, where one per question made eight.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from kernel.errors import ConflictError, IntegrityError, NotFoundError, UsageError
from kernel.log import get_logger
from kernel.store.base import SESSION_ID, WorkspaceLedgerName, workspace_ledger_spec
from kernel.store.postgres_conn import Database
from kernel.store.postgres_ledger import CHANNEL, PostgresLedger
from kernel.store.postgres_libpq import FOREIGN_KEY_VIOLATION, PgError
from kernel.store.postgres_listen import LedgerListener, LedgerNotice, listen
from kernel.store.postgres_schema import LATEST, init_schema, schema_version

if TYPE_CHECKING:
    from kernel.store.postgres_driver import Connection

__all__ = [
    "CHANNEL",
    "WORKSPACE_ID",
    "LedgerListener",
    "LedgerNotice",
    "PostgresLedger",
    "PostgresStore",
    "connect_store",
    "init_schema",
    "listen",
    "schema_version",
]

logger = get_logger(__name__)

#: what a workspace id looks like (it namespaces rows and notices: no ``:``)
WORKSPACE_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_W = "workspace = %(ws)s AND ledger = %(key)s"
# A session's existence with what every command reads next (its workflow snapshot and first
# line: which workflow, and who created it), in one round trip.
_OPEN = (
    "SELECT w.workflow, (SELECT line FROM tht_ledger_events WHERE workspace = h.workspace "
    "AND ledger = h.ledger ORDER BY seq LIMIT 1) FROM tht_ledgers h LEFT JOIN tht_workflows w "
    "ON w.workspace = h.workspace AND w.ledger = h.ledger "
    "WHERE h.workspace = %(ws)s AND h.ledger = %(key)s"
)
# A status cache with the ledger's last line (what the cache is checked against when it is up
# to date), in one round trip.
_CACHE = (
    "SELECT c.data, l.seq, l.line FROM (SELECT 1) AS one LEFT JOIN tht_caches c "
    "ON c.workspace = %(ws)s AND c.ledger = %(key)s AND c.kind = 'status' LEFT JOIN LATERAL "
    "(SELECT seq, line FROM tht_ledger_events WHERE workspace = %(ws)s AND ledger = %(key)s "
    "ORDER BY seq DESC LIMIT 1) AS l ON true"
)


class PostgresStore:
    """``SessionStore`` on PostgreSQL, for one workspace of the database."""

    #: ledger objects kept (each remembers the head it saw last: the append's fast path)
    OPEN_LEDGERS = 256

    def __init__(self, dsn: str, *, workspace: str) -> None:
        if not WORKSPACE_ID.match(workspace):
            raise UsageError(
                f"{workspace!r} is not a workspace id for the PostgreSQL store (letters, "
                "digits, '.', '_', '-'; at most 64)"
            )
        self.workspace = workspace
        self._db = Database(dsn, required_version=LATEST)
        self._ledgers: OrderedDict[str, PostgresLedger] = OrderedDict()
        self._sessions: set[str] = set()  # known to exist (sessions are never deleted)
        self._workflows: dict[str, bytes] = {}  # read with the existence, handed out once
        self._workspace_rows: set[str] = set()  # workspace ledgers whose head row exists

    def __repr__(self) -> str:
        return f"PostgresStore(workspace={self.workspace!r})"

    @property
    def database(self) -> Database:
        """The store's connection (for tools and tests that need SQL beside the store)."""
        return self._db

    def connect(self) -> None:
        """Open the connection now: ``UnavailableError`` (exit 6) when the server cannot be
        reached, ``UsageError`` when its tables are missing or of another version."""
        self._db.run("connecting", lambda conn: None)

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ helpers

    def _one(self, what: str, sql: str, **params: object) -> tuple[Any, ...] | None:
        def work(conn: Connection) -> tuple[Any, ...] | None:
            return conn.execute(sql, {"ws": self.workspace, **params}).fetchone()

        return self._db.run(what, work)

    def _all(self, what: str, sql: str, **params: object) -> list[tuple[Any, ...]]:
        def work(conn: Connection) -> list[tuple[Any, ...]]:
            return conn.execute(sql, {"ws": self.workspace, **params}).fetchall()

        return self._db.run(what, work)

    @staticmethod
    def _key(session_id: str) -> str:
        if not SESSION_ID.match(session_id):
            raise NotFoundError(f"session {session_id!r} does not exist (not a session id)")
        return f"session:{session_id}"

    def _existing(self, session_id: str) -> str:
        key = self._key(session_id)
        if not self.exists(session_id):  # a known session costs no round trip
            raise NotFoundError(f"session {session_id} does not exist")
        return key

    @staticmethod
    def _sha(sha256: str) -> str:
        if not _SHA256.match(sha256):
            raise UsageError(f"{sha256!r} is not a SHA-256")
        return sha256

    # ------------------------------------------------------------------ sessions

    def create_session(self, session_id: str, workflow_bytes: bytes) -> None:
        key = self._key(session_id)
        row = self._one(
            "creating a session",
            "WITH made AS (INSERT INTO tht_ledgers (workspace, ledger, kind, ledger_id) "
            "VALUES (%(ws)s, %(key)s, 'session', %(id)s) ON CONFLICT DO NOTHING "
            "RETURNING workspace, ledger) INSERT INTO tht_workflows (workspace, ledger, workflow) "
            "SELECT workspace, ledger, %(workflow)s FROM made RETURNING 1",
            key=key,
            id=session_id,
            workflow=bytes(workflow_bytes),
        )
        if row is None:
            raise ConflictError(f"session {session_id} already exists")
        self._sessions.add(session_id)

    def session_ids(self) -> list[str]:
        rows = self._all(
            "listing sessions",
            "SELECT ledger_id FROM tht_ledgers WHERE workspace = %(ws)s AND kind = 'session'",
        )
        return sorted(str(r[0]) for r in rows)  # Python's order, whatever the collation

    def exists(self, session_id: str) -> bool:
        if not SESSION_ID.match(session_id):
            return False
        if session_id in self._sessions:
            return True
        key = f"session:{session_id}"
        row = self._one("looking for a session", _OPEN, key=key)
        if row is None:
            return False
        self._sessions.add(session_id)
        if row[0] is not None:
            self._workflows[session_id] = bytes(row[0])
            if len(self._workflows) > self.OPEN_LEDGERS:
                self._workflows.pop(next(iter(self._workflows)))
        if row[1] is not None:
            self._ledger(key, session_id).saw_lines(first=bytes(row[1]))
        return True

    def ledger(self, session_id: str) -> PostgresLedger:
        return self._ledger(self._existing(session_id), session_id)

    def _ledger(self, key: str, session_id: str) -> PostgresLedger:
        ledger = self._ledgers.get(key)
        if ledger is None:
            ledger = PostgresLedger(self._db, self.workspace, key, session_id)
            self._remember(key, ledger)
        else:
            self._ledgers.move_to_end(key)
        return ledger

    def _remember(self, key: str, ledger: PostgresLedger) -> None:
        self._ledgers[key] = ledger
        if len(self._ledgers) > self.OPEN_LEDGERS:
            self._ledgers.popitem(last=False)

    def workflow_bytes(self, session_id: str) -> bytes:
        known = self._workflows.pop(session_id, None)
        if known is not None and SESSION_ID.match(session_id):
            return known
        row = self._one(
            "reading a workflow snapshot",
            f"SELECT workflow FROM tht_workflows WHERE {_W}",
            key=self._key(session_id),
        )
        if row is None or row[0] is None:
            raise NotFoundError(f"session {session_id} does not exist")
        return bytes(row[0])

    # ------------------------------------------------------------------ objects, artifacts

    def _put(self, what: str, key: str, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()

        def work(conn: Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO tht_objects (workspace, ledger, sha256, data) "
                    "VALUES (%(ws)s, %(key)s, %(sha)s, %(data)s) ON CONFLICT DO NOTHING",
                    {"ws": self.workspace, "key": key, "sha": digest, "data": bytes(data)},
                )
            except PgError as err:
                if err.sqlstate != FOREIGN_KEY_VIOLATION:
                    raise
                raise NotFoundError(f"{key} does not exist") from None

        self._db.run(what, work)
        return digest

    def _get(self, what: str, key: str, sha256: str, where: str) -> bytes:
        row = self._one(
            what,
            f"SELECT data FROM tht_objects WHERE {_W} AND sha256 = %(sha)s",
            key=key,
            sha=self._sha(sha256),
        )
        if row is None:
            raise NotFoundError(f"content {sha256[:12]}… is missing from {where}")
        data = bytes(row[0])
        if hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(f"stored content {sha256[:12]}… of {where} was altered")
        return data

    def _ids(self, what: str, key: str) -> list[str]:
        rows = self._all(what, f"SELECT sha256 FROM tht_objects WHERE {_W}", key=key)
        return sorted(str(r[0]) for r in rows)

    def put_object(self, session_id: str, data: bytes) -> str:
        return self._put("storing an object", self._existing(session_id), data)

    def get_object(self, session_id: str, sha256: str) -> bytes:
        key = self._existing(session_id)
        return self._get("reading an object", key, sha256, f"session {session_id}")

    def object_ids(self, session_id: str) -> list[str]:
        return self._ids("listing objects", self._existing(session_id))

    def materialize(self, session_id: str, name: str, sha256: str) -> None:
        self.get_object(session_id, sha256)  # present and intact
        self._one(
            "materializing an artifact",
            "INSERT INTO tht_artifacts (workspace, ledger, name, sha256) "
            "VALUES (%(ws)s, %(key)s, %(name)s, %(sha)s) "
            "ON CONFLICT (workspace, ledger, name) DO UPDATE SET sha256 = EXCLUDED.sha256",
            key=self._key(session_id),
            name=name,
            sha=sha256,
        )

    def read_artifact(self, session_id: str, name: str) -> bytes | None:
        row = self._one(
            "reading an artifact",
            "SELECT h.ledger, o.data FROM tht_ledgers h "
            "LEFT JOIN tht_artifacts a ON a.workspace = h.workspace AND a.ledger = h.ledger "
            "AND a.name = %(name)s LEFT JOIN tht_objects o ON o.workspace = a.workspace "
            "AND o.ledger = a.ledger AND o.sha256 = a.sha256 "
            "WHERE h.workspace = %(ws)s AND h.ledger = %(key)s",
            key=self._key(session_id),
            name=name,
        )
        if row is None:
            raise NotFoundError(f"session {session_id} does not exist")
        return None if row[1] is None else bytes(row[1])

    # ------------------------------------------------------------------ caches

    def _read_blob(self, what: str, key: str, kind: str) -> bytes | None:
        row = self._one(
            what,
            f"SELECT data FROM tht_caches WHERE {_W} AND kind = %(kind)s",
            key=key,
            kind=kind,
        )
        return None if row is None else bytes(row[0])

    def _write_blob(self, what: str, key: str, kind: str, data: bytes) -> None:
        from kernel.errors import ThtError

        try:
            self._one(
                what,
                # not a durable commit: a cache lost in a crash is only rebuilt
                "INSERT INTO tht_caches (workspace, ledger, kind, data) "
                "SELECT %(ws)s, %(key)s, %(kind)s, %(data)s "
                "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed "
                "ON CONFLICT (workspace, ledger, kind) DO UPDATE SET data = EXCLUDED.data",
                key=key,
                kind=kind,
                data=bytes(data),
            )
        except ThtError as err:  # a cache is an optimisation only
            logger.debug("%s: not written: %s", what, err.message)

    def read_cache(self, session_id: str) -> bytes | None:
        if not SESSION_ID.match(session_id):
            return None
        key = f"session:{session_id}"
        row = self._one("reading a status cache", _CACHE, key=key)
        if row is None or row[0] is None:
            return None
        if row[1] is not None and session_id in self._sessions:
            self._ledger(key, session_id).saw_lines(last=(int(row[1]), bytes(row[2])))
        return bytes(row[0])

    def write_cache(self, session_id: str, data: bytes) -> None:
        if SESSION_ID.match(session_id):
            self._write_blob("writing a status cache", f"session:{session_id}", "status", data)

    def read_checkpoint(self, session_id: str) -> bytes | None:
        return self._read_blob("reading a checkpoint", self._key(session_id), "checkpoint")

    def write_checkpoint(self, session_id: str, data: bytes) -> None:
        self._write_blob("writing a checkpoint", self._key(session_id), "checkpoint", data)

    # ------------------------------------------------------------------ workspace-level ledgers

    def workspace_ledger(self, name: WorkspaceLedgerName) -> PostgresLedger:
        spec = workspace_ledger_spec(name)
        ledger = self._ledgers.get(spec.name)
        if ledger is None:
            ledger = PostgresLedger(
                self._db,
                self.workspace,
                spec.name,
                spec.ledger_id,
                name=spec.name,
                first_type=spec.first_type,
            )
            self._remember(spec.name, ledger)
        return ledger

    def _workspace_key(self, name: WorkspaceLedgerName) -> str:
        """The rows' ledger of a workspace-level ledger, its head row created on first use."""
        spec = workspace_ledger_spec(name)
        if spec.name not in self._workspace_rows:
            self._one(
                "creating a workspace ledger",
                "INSERT INTO tht_ledgers (workspace, ledger, kind, ledger_id) "
                "VALUES (%(ws)s, %(key)s, %(key)s, %(id)s) ON CONFLICT DO NOTHING",
                key=spec.name,
                id=spec.ledger_id,
            )
            self._workspace_rows.add(spec.name)
        return spec.name

    def put_workspace_object(self, name: WorkspaceLedgerName, data: bytes) -> str:
        return self._put("storing a workspace object", self._workspace_key(name), data)

    def get_workspace_object(self, name: WorkspaceLedgerName, sha256: str) -> bytes:
        key = workspace_ledger_spec(name).name
        return self._get("reading a workspace object", key, sha256, f"{key}/objects")

    def workspace_object_ids(self, name: WorkspaceLedgerName) -> list[str]:
        return self._ids("listing workspace objects", workspace_ledger_spec(name).name)

    def read_workspace_cache(self, name: WorkspaceLedgerName) -> bytes | None:
        key = workspace_ledger_spec(name).name
        return self._read_blob("reading a fold cache", key, "fold")

    def write_workspace_cache(self, name: WorkspaceLedgerName, data: bytes) -> None:
        key = workspace_ledger_spec(name).name
        self._write_blob("writing a fold cache", key, "fold", data)


def connect_store(dsn: str, *, workspace: str) -> PostgresStore:
    """A connected store: ``UnavailableError`` (exit 6, the DSN never in it) when the server
    cannot be reached, ``UsageError`` when its tables are missing (`tht store init`)."""
    store = PostgresStore(dsn, workspace=workspace)
    store.connect()
    return store
