"""The SQL of a PostgreSQL ledger's writes (:mod:`kernel.store.postgres_write` runs them) and
the parameters of an append. Pure: no connection here.

Notices: an append tells live views on ``LISTEN`` channel :data:`CHANNEL` (payload
``<workspace>:<ledger>:<last seq>``) right after its commit, in a transaction of its own, and
only when a view listens: a :class:`~kernel.store.postgres_listen.LedgerListener` holds the
workspace's *listening lock* (:func:`listening_key`, a session-level advisory lock, shared),
and the append statement asks for that lock exclusively and gives it back at once (``CASE WHEN
pg_try_advisory_lock(k) THEN NOT pg_advisory_unlock(k) ELSE true END``: one expression, two
calls to the lock manager, in that order): it cannot get it exactly when a listener holds it.
Two writers asking at the same instant make one of them believe a view listens: one notice too
many, never one too few. The lock of a listener whose session ends goes with it.
"""

from __future__ import annotations

import hashlib

import msgspec

from kernel.events import Event, info_of

__all__ = [
    "APPEND",
    "APPEND_FIRST",
    "APPEND_ONE",
    "APPEND_ONE_FIRST",
    "CHANNEL",
    "ENSURE",
    "LAST",
    "LOCK",
    "NOTIFY",
    "WHERE",
    "append_params",
    "listening_key",
]

#: the LISTEN/NOTIFY channel of appends (payload ``<workspace>:<ledger>:<last seq>``)
CHANNEL = "tht_ledger"
#: the rows of one ledger (parameters ``ws`` and ``key``)
WHERE = "workspace = %(ws)s AND ledger = %(key)s"
_PAYLOAD = msgspec.json.Encoder(order="deterministic")

# Two statements, never one: a statement that waited for the row lock sees the head row as the
# winner committed it but everything else as of its own start (READ COMMITTED re-checks only
# the locked row), so the last line is read by a second statement, after the lock is held.
LOCK = f"SELECT last_seq, head FROM tht_ledgers WHERE {WHERE} FOR UPDATE"
LAST = f"SELECT seq, line FROM tht_ledger_events WHERE {WHERE} ORDER BY seq DESC LIMIT 1"
# The append, in one statement: the head moves only from (expected, prev) when the last row is
# still line ``expected`` and hashes to prev (no row after it) — or, for a ledger's first append,
# when it has no row at all —, and the lines go in only when it moved. The last row is found
# with ORDER BY seq DESC LIMIT 1: an EXISTS on seq = expected made the server's cached (generic)
# plan cost grow with the ledger's length. Four texts, so that each plan holds only what it
# runs (the server initializes every node of a plan on every execution, taken or not): after a
# line or first; one line (the usual append: scalars, inserted FROM the moved head row,
# answering one row — or none when the head did not move) or a batch (arrays, binding them
# costs more; answering the count of lines inserted). Each answer says whether a view listens
# (the module doc), computed only once the lines are in.
_LISTENING = (
    "CASE WHEN pg_try_advisory_lock(%(listening)s::bigint) "
    "THEN NOT pg_advisory_unlock(%(listening)s::bigint) ELSE true END"
)
_MOVE = f"""UPDATE tht_ledgers SET last_seq = %(last)s::bigint, head = %(head)s
    WHERE {WHERE} AND {{anchored}}
    RETURNING 1"""
_AFTER = f"""last_seq = %(expected)s::bigint AND head = %(prev)s
      AND (SELECT seq = %(expected)s::bigint AND sha256(line) = %(prev_digest)s
           FROM tht_ledger_events WHERE {WHERE} ORDER BY seq DESC LIMIT 1) IS TRUE"""
_FIRST = f"""last_seq = 0 AND (head IS NULL OR head = %(prev)s)
      AND NOT EXISTS (SELECT 1 FROM tht_ledger_events WHERE {WHERE})"""
_COLUMNS = "(workspace, ledger, seq, type, actor, stage, ts, payload, prev, line)"
_ONE = f"""WITH moved AS ({_MOVE})
INSERT INTO tht_ledger_events {_COLUMNS}
SELECT %(ws)s, %(key)s, %(last)s::bigint, %(type)s, %(actor)s, %(stage)s, %(ts)s,
    %(payload)s::jsonb, %(prev)s, %(line)s FROM moved
RETURNING {_LISTENING}"""
_MANY = f"""WITH moved AS ({_MOVE}), added AS (
    INSERT INTO tht_ledger_events {_COLUMNS}
    SELECT %(ws)s, %(key)s, e.* FROM unnest(%(seqs)s::bigint[], %(types)s::text[],
        %(actors)s::text[], %(stages)s::text[], %(tss)s::text[], %(payloads)s::jsonb[],
        %(prevs)s::text[], %(lines)s::bytea[]) AS e
    WHERE EXISTS (SELECT 1 FROM moved)
    RETURNING 1
)
SELECT (SELECT count(*) FROM added), {_LISTENING}"""
#: the append of one line after line ``expected`` (> 0): one row ``(listening,)``, or none
APPEND_ONE = _ONE.replace("{anchored}", _AFTER)
#: the append of a batch after line ``expected`` (> 0): ``(lines inserted, listening)``
APPEND = _MANY.replace("{anchored}", _AFTER)
#: a ledger's first append, of one line / of a batch (answers as above)
APPEND_ONE_FIRST = _ONE.replace("{anchored}", _FIRST)
APPEND_FIRST = _MANY.replace("{anchored}", _FIRST)
# The notice of a committed append, in a transaction of its own: it writes no WAL, so its
# commit waits for no flush, and it holds the notify queue's lock only that long.
NOTIFY = f"SELECT pg_notify('{CHANNEL}', %(notice)s)"
ENSURE = (
    "INSERT INTO tht_ledgers (workspace, ledger, kind, ledger_id) "
    "VALUES (%(ws)s, %(key)s, %(kind)s, %(id)s) ON CONFLICT DO NOTHING"
)


def listening_key(workspace: str) -> int:
    """The advisory lock key a workspace's listeners hold (shared): 64 bits of a hash, so two
    workspaces may share one (then each gets the other's notices too: harmless)."""
    digest = hashlib.sha256(f"tht-listening:{workspace}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def append_params(events: list[Event], lines: list[bytes]) -> dict[str, object]:
    """The rows' columns of an append: scalars for one event (:data:`APPEND_ONE`), arrays for
    more (:data:`APPEND`)."""
    if len(events) == 1:
        event = events[0]
        return {
            "type": info_of(event).type,
            "actor": _text(event.actor),
            "stage": None if event.stage is None else _text(event.stage),
            "ts": _text(event.ts),
            "payload": _payload(event),
            "line": lines[0],
        }
    return {
        "seqs": [e.seq for e in events],
        "types": [info_of(e).type for e in events],
        "actors": [_text(e.actor) for e in events],
        "stages": [None if e.stage is None else _text(e.stage) for e in events],
        "tss": [_text(e.ts) for e in events],
        "payloads": [_payload(e) for e in events],
        "prevs": [_text(e.prev) for e in events],
        "lines": lines,
    }


def _payload(event: Event) -> str | None:
    """The payload's JSON for its jsonb column, or None: jsonb cannot hold ``\\u0000`` in a
    string (the line keeps it; the column is a copy for queries)."""
    payload = _PAYLOAD.encode(event.payload)  # type: ignore[attr-defined]
    return None if b"\\u0000" in payload else payload.decode()


def _text(value: str) -> str:
    """A query column's copy of an envelope string (text cannot hold NUL; the line does)."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value
