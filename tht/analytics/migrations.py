"""Versioned schema migrations of the analytics store, applied in order, recorded in a table.

Each migration is a numbered tuple of statements. ``migrate`` applies the pending ones inside one
``BEGIN IMMEDIATE`` transaction, so two processes opening a fresh database at once apply them once,
and a failure leaves the previous version intact. ``schema_migrations`` records version, name and
time. A database whose recorded versions are not a prefix of this list (written by a newer or a
diverging tht) is refused rather than guessed at.

Never edit a released migration: add the next one.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from kernel.errors import UnavailableError

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "applied_migrations", "migrate"]


class Migration(NamedTuple):
    version: int
    name: str
    statements: tuple[str, ...]


_CREATE_SOURCES_AND_RUNTIME_EVENTS = (
    # One row per imported file. ``id`` is the HMAC of kind and resolved path: the path itself is
    # never stored. ``offset`` is the byte after the last complete line imported; ``head_hash`` is
    # the HMAC of the first ``head_len`` bytes, so a file replaced in place is noticed.
    """CREATE TABLE source_files (
      id TEXT PRIMARY KEY,
      kind TEXT NOT NULL,
      inode INTEGER,
      size INTEGER NOT NULL DEFAULT 0,
      mtime_ns INTEGER,
      offset INTEGER NOT NULL DEFAULT 0,
      head_len INTEGER NOT NULL DEFAULT 0,
      head_hash TEXT,
      lines_read INTEGER NOT NULL DEFAULT 0,
      rescans INTEGER NOT NULL DEFAULT 0,
      first_scanned_at TEXT NOT NULL,
      last_scanned_at TEXT NOT NULL
    )""",
    # The canonical row of every imported event, whatever its source.
    """CREATE TABLE runtime_events (
      id TEXT PRIMARY KEY,
      source_file_id TEXT NOT NULL,
      event_type TEXT NOT NULL,
      event_origin TEXT NOT NULL,
      event_name TEXT NOT NULL,
      hook_name TEXT,
      hook_event TEXT,
      occurred_at TEXT NOT NULL,
      metadata_json TEXT NOT NULL DEFAULT '{}',
      FOREIGN KEY(source_file_id) REFERENCES source_files(id) ON DELETE CASCADE
    )""",
    "CREATE INDEX idx_runtime_events_occurred_at ON runtime_events(occurred_at)",
    "CREATE INDEX idx_runtime_events_source_file ON runtime_events(source_file_id)",
    # Small key/value facts about the store itself (e.g. the retention watermark).
    "CREATE TABLE analytics_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

_ADD_ROUTING_EVALUATIONS = (
    # Spec 000 §22.6, verbatim.
    """CREATE TABLE IF NOT EXISTS routing_evaluations (
      id TEXT PRIMARY KEY,
      runtime_event_id TEXT NOT NULL,
      source_file_id TEXT NOT NULL,
      request_id TEXT NOT NULL,
      mode TEXT NOT NULL,
      activation TEXT NOT NULL,
      ambiguity_detected INTEGER NOT NULL DEFAULT 0,
      evaluator_status TEXT NOT NULL,
      provider_profile TEXT,
      provider_family TEXT,
      provider_location TEXT,
      model TEXT,
      model_family TEXT,
      model_parameter_class TEXT,
      model_variant TEXT,
      model_quantization TEXT,
      evaluator_profile_version TEXT,
      prompt_contract_version INTEGER,
      response_format TEXT,
      latency_ms INTEGER,
      input_tokens INTEGER,
      output_tokens INTEGER,
      candidate_count INTEGER NOT NULL DEFAULT 0,
      candidate_ids_json TEXT,
      ambiguity_reasons_json TEXT,
      deterministic_top TEXT,
      evaluator_top TEXT,
      final_top TEXT,
      decision TEXT,
      confidence_bucket TEXT,
      changed_top INTEGER NOT NULL DEFAULT 0,
      applied INTEGER NOT NULL DEFAULT 0,
      fallback_reason TEXT,
      cache_hit INTEGER NOT NULL DEFAULT 0,
      sensitive_skip INTEGER NOT NULL DEFAULT 0,
      occurred_at TEXT NOT NULL,
      FOREIGN KEY(runtime_event_id) REFERENCES runtime_events(id) ON DELETE CASCADE,
      FOREIGN KEY(source_file_id) REFERENCES source_files(id) ON DELETE CASCADE
    )""",
    """CREATE INDEX IF NOT EXISTS idx_routing_evaluations_occurred_at
      ON routing_evaluations(occurred_at)""",
    """CREATE INDEX IF NOT EXISTS idx_routing_evaluations_profile_status
      ON routing_evaluations(provider_profile, evaluator_status)""",
    """CREATE INDEX IF NOT EXISTS idx_routing_evaluations_model
      ON routing_evaluations(model)""",
    """CREATE INDEX IF NOT EXISTS idx_routing_evaluations_changed_top
      ON routing_evaluations(changed_top, applied)""",
    # Not in §22.6: the cascade from runtime_events needs it (without it, deleting one runtime
    # event scans the whole projection, and pruning a million rows never finishes).
    """CREATE INDEX IF NOT EXISTS idx_routing_evaluations_runtime_event
      ON routing_evaluations(runtime_event_id)""",
)

_ADD_STAGE_RUNS = (
    # One row per (session, stage): see tht.analytics.stage_runs. ``session_key`` is the HMAC of
    # the session id; ``stage_index`` its place in the session's workflow. No question, prompt or
    # payload text is ever stored.
    """CREATE TABLE stage_runs (
      id TEXT PRIMARY KEY,
      source_file_id TEXT NOT NULL,
      session_key TEXT NOT NULL,
      stage TEXT NOT NULL,
      stage_index INTEGER,
      first_seq INTEGER NOT NULL,
      started_at TEXT,
      ended_at TEXT,
      outcome TEXT NOT NULL,
      runs INTEGER NOT NULL DEFAULT 0,
      attempts INTEGER NOT NULL DEFAULT 0,
      duration_ms INTEGER,
      reviews INTEGER NOT NULL DEFAULT 0,
      answered_reviews INTEGER NOT NULL DEFAULT 0,
      review_wait_ms INTEGER,
      reopen_count INTEGER NOT NULL DEFAULT 0,
      last_event_at TEXT NOT NULL,
      FOREIGN KEY(source_file_id) REFERENCES source_files(id) ON DELETE CASCADE
    )""",
    "CREATE INDEX idx_stage_runs_source_file ON stage_runs(source_file_id)",
    "CREATE INDEX idx_stage_runs_session ON stage_runs(session_key)",
    "CREATE INDEX idx_stage_runs_stage ON stage_runs(stage, last_event_at)",
    # One row per review or revision request of a stage.
    """CREATE TABLE stage_reviews (
      id TEXT PRIMARY KEY,
      stage_run_id TEXT NOT NULL,
      session_key TEXT NOT NULL,
      stage TEXT NOT NULL,
      kind TEXT NOT NULL,
      requested_at TEXT NOT NULL,
      answered_at TEXT,
      wait_ms INTEGER,
      FOREIGN KEY(stage_run_id) REFERENCES stage_runs(id) ON DELETE CASCADE
    )""",
    "CREATE INDEX idx_stage_reviews_stage_run ON stage_reviews(stage_run_id)",
    "CREATE INDEX idx_stage_reviews_stage ON stage_reviews(stage, requested_at)",
    # A session's imported ledger events, to derive its stage rows again after new ones arrive.
    """CREATE INDEX idx_runtime_events_session ON runtime_events(
      json_extract(metadata_json, '$.session'), json_extract(metadata_json, '$.seq')
    ) WHERE event_origin = 'session_ledger'""",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "create_source_files_and_runtime_events", _CREATE_SOURCES_AND_RUNTIME_EVENTS),
    Migration(2, "add_routing_evaluations", _ADD_ROUTING_EVALUATIONS),
    Migration(3, "add_stage_runs", _ADD_STAGE_RUNS),
)
LATEST_VERSION = MIGRATIONS[-1].version

_LEDGER = """CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL
)"""


def applied_migrations(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """``(version, name)`` of every applied migration, in order; empty for a fresh database."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return []
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    return [(int(v), str(n)) for v, n in rows]


def migrate(
    conn: sqlite3.Connection, *, now: str, target: int | None = None, where: str = "database"
) -> list[int]:
    """Apply pending migrations up to ``target`` (default: the latest); return those applied.

    Cheap when nothing is pending: one read of ``schema_migrations``.
    """
    goal = LATEST_VERSION if target is None else target
    done = applied_migrations(conn)
    _check_prefix(done, where)
    if done and done[-1][0] >= goal:
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_LEDGER)
        done = applied_migrations(conn)  # re-read under the write lock
        _check_prefix(done, where)
        applied: list[int] = []
        for migration in MIGRATIONS[len(done) : goal]:
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, now),
            )
            applied.append(migration.version)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied


def _check_prefix(done: list[tuple[int, str]], where: str) -> None:
    known = [(m.version, m.name) for m in MIGRATIONS]
    if done != known[: len(done)]:
        newest = done[-1][0] if done else 0
        raise UnavailableError(
            f"{where}: analytics schema version {newest} was written by another tht version "
            f"(this one knows up to {LATEST_VERSION}); use a matching tht or a new --db"
        )
