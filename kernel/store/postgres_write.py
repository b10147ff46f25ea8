"""Writing a PostgreSQL ledger (ARCHITECTURE §3.1): appends with the expected last seq, verbatim
copies (``append_lines``) and the explicit repair, over ``tht_ledger_events`` and the ledger's
head row in ``tht_ledgers``.

**Appends lock the head row.** An append is one transaction that takes the row lock of the
ledger's head row (``UPDATE … WHERE last_seq = expected`` on the fast path, ``SELECT … FOR
UPDATE`` on the slow one), checks the expected last seq against it, inserts the lines, moves
the head and sends ``NOTIFY tht_ledger, '<workspace>:<ledger>:<seq>'``. A row lock and not an
advisory lock because the head row *is* what the check reads and the append changes: holding
it until commit makes every other writer of that ledger wait, then re-read the committed head
(READ COMMITTED re-checks an updated row) and fail its check — so insert order equals commit
order, a stale writer gets ``ConflictError`` (exit 4) with nothing written, and writers of other
ledgers never wait (an advisory lock keyed by a hash could collide; a lock on its own row
cannot, and it is released by the commit or by the server when the session dies). A unique
violation on ``(workspace, ledger, seq)`` is a ``ConflictError`` too.

The fast path is one statement (one round trip): the writer stamps its batch on the head it
saw last (``verify``, ``tail``, its own last append), and the statement moves the head only
when it is still that one and the last line still hashes to it; otherwise the slow path locks,
looks and explains (conflict, or a damaged ledger: ``IntegrityError``, nothing appended).

A broken connection mid-append leaves its outcome unknown: the ledger reconnects once, looks
whether its exact lines landed (then it is acknowledged), else appends them again.

No torn tail can exist here (a transaction is all or nothing); ``repair`` is the explicit human
path: rows from ``cut_seq`` on move to ``tht_ledger_quarantine`` and the head row re-anchors.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.clock import Clock, format_ts
from kernel.errors import ConflictError, IntegrityError, InternalError, NotFoundError
from kernel.events import Event, EventDraft, decode_event, info_of
from kernel.ledger_records import (
    AppendResult,
    LedgerTail,
    Repair,
    Signer,
    chain_lines,
    conflict_error,
    stamp_batch,
)
from kernel.ledger_verify import genesis_hash, line_hash
from kernel.store.postgres_conn import ConnectionLost, Database

if TYPE_CHECKING:
    import psycopg

__all__ = ["CHANNEL", "WHERE", "LedgerWriter"]

#: the LISTEN/NOTIFY channel of appends (payload ``<workspace>:<ledger>:<last seq>``)
CHANNEL = "tht_ledger"
#: the rows of one ledger (parameters ``ws`` and ``key``)
WHERE = "workspace = %(ws)s AND ledger = %(key)s"
_WHERE = WHERE
_Batch = tuple[list[Event], list[bytes], str]
_PAYLOAD = msgspec.json.Encoder(order="deterministic")

# Two statements, never one: a statement that waited for the row lock sees the head row as the
# winner committed it but everything else as of its own start (READ COMMITTED re-checks only
# the locked row), so the last line is read by a second statement, after the lock is held.
_LOCK = f"SELECT last_seq, head FROM tht_ledgers WHERE {_WHERE} FOR UPDATE"
_LAST = f"SELECT seq, line FROM tht_ledger_events WHERE {_WHERE} ORDER BY seq DESC LIMIT 1"
# The append, in one statement: the head moves only from (expected, prev) when the last row is
# still line ``expected`` and hashes to prev (no row after it); the lines go in only when it
# moved. The last row is found with ORDER BY seq DESC LIMIT 1: an EXISTS on seq = expected made
# the server's cached (generic) plan cost grow with the ledger's length. A batch of one line (the
# usual append) binds scalars; a longer one, arrays (binding them costs more).
_MOVE = f"""
WITH moved AS (
    UPDATE tht_ledgers SET last_seq = %(last)s::bigint, head = %(head)s
    WHERE {_WHERE} AND last_seq = %(expected)s::bigint
      AND (head = %(prev)s OR (head IS NULL AND %(expected)s::bigint = 0))
      AND CASE WHEN %(expected)s::bigint = 0
          THEN NOT EXISTS (SELECT 1 FROM tht_ledger_events WHERE {_WHERE})
          ELSE (SELECT seq = %(expected)s::bigint AND sha256(line) = %(prev_digest)s
                FROM tht_ledger_events WHERE {_WHERE} ORDER BY seq DESC LIMIT 1) IS TRUE
          END
    RETURNING 1
), added AS (
    INSERT INTO tht_ledger_events
        (workspace, ledger, seq, type, actor, stage, ts, payload, prev, line)
    {{rows}}
    WHERE EXISTS (SELECT 1 FROM moved)
    RETURNING 1
), told AS (
    SELECT pg_notify('{CHANNEL}', %(notice)s) FROM moved
)
SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM told)
"""
_APPEND_ONE = _MOVE.format(
    rows="SELECT %(ws)s, %(key)s, %(last)s::bigint, %(type)s, %(actor)s, %(stage)s, %(ts)s, "
    "%(payload)s::jsonb, %(prev)s, %(line)s"
)
_APPEND = _MOVE.format(
    rows="SELECT %(ws)s, %(key)s, e.* FROM unnest(%(seqs)s::bigint[], %(types)s::text[], "
    "%(actors)s::text[], %(stages)s::text[], %(tss)s::text[], %(payloads)s::jsonb[], "
    "%(prevs)s::text[], %(lines)s::bytea[]) AS e"
)
_ENSURE = (
    "INSERT INTO tht_ledgers (workspace, ledger, kind, ledger_id) "
    "VALUES (%(ws)s, %(key)s, %(kind)s, %(id)s) ON CONFLICT DO NOTHING"
)


class _Stamped:
    """A batch built once per ``(last_seq, prev)`` (so a retry writes the very same bytes, and
    the clock is read once per tail)."""

    def __init__(self, build: Callable[[int, str], _Batch]) -> None:
        self._build = build
        self.built: dict[tuple[int, str], _Batch] = {}

    def on(self, last_seq: int, prev: str) -> _Batch:
        found = self.built.get((last_seq, prev))
        if found is None:
            found = self.built[(last_seq, prev)] = self._build(last_seq, prev)
        return found


class LedgerWriter(ABC):
    """One ledger's rows (a session's, or a workspace-level one, of one workspace) and how they
    are written; :class:`~kernel.store.postgres_ledger.PostgresLedger` adds the reading."""

    def __init__(
        self,
        db: Database,
        workspace: str,
        key: str,
        ledger_id: str,
        *,
        name: str = "session",
        first_type: str | tuple[str, ...] = "session_created",
    ) -> None:
        self._db = db
        self._ws = workspace
        self._key = key  # the rows' ``ledger``: session:<id>, catalog, memory
        self._id = ledger_id  # seeds the genesis hash
        self.ledger_name = name
        self.first_type = first_type
        self._known: tuple[int, str] | None = None  # the head seen last (the fast path's guess)

    @property
    def session_id(self) -> str:
        return self._id

    @property
    def key(self) -> str:
        return self._key

    def _params(self, **more: object) -> dict[str, object]:
        return {"ws": self._ws, "key": self._key, **more}

    def _query(self, what: str, sql: str, **params: object) -> tuple[Any, ...] | None:
        def work(conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
            return conn.execute(sql, self._params(**params), binary=True).fetchone()

        return self._db.run(what, work)

    def _what(self, verb: str) -> str:
        return f"{verb} {self.ledger_name} {self._id}"

    @abstractmethod
    def tail(self) -> LedgerTail:
        """The committed tail (the reading side, :class:`PostgresLedger`, gives it)."""

    # ------------------------------------------------------------------ writing

    def append(
        self,
        drafts: Sequence[EventDraft],
        *,
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None = None,
    ) -> AppendResult:
        if not drafts:
            return self._nothing(expected_last_seq)

        def stamped(last_seq: int, prev: str) -> _Batch:
            ts = format_ts(clock.now())
            return stamp_batch(drafts, last_seq=last_seq, prev=prev, ts=ts, signer=signer)

        return self._write("appending to", _Stamped(stamped), expected_last_seq)

    def append_lines(self, lines: Sequence[bytes], *, expected_last_seq: int) -> AppendResult:
        if not lines:
            return self._nothing(expected_last_seq)

        def checked(last_seq: int, prev: str) -> _Batch:
            where = f"{self.ledger_name} {self._id}"
            events, head = chain_lines(
                lines, last_seq=last_seq, prev=prev, ledger=where, first_type=self.first_type
            )
            return events, [bytes(line) for line in lines], head

        return self._write("copying lines to", _Stamped(checked), expected_last_seq)

    def _nothing(self, expected_last_seq: int) -> AppendResult:
        tail = self.tail()
        if tail.last_seq != expected_last_seq:
            raise conflict_error(self._id, expected_last_seq, tail.last_seq)
        return AppendResult(events=[], head=tail.head)

    def _write(self, verb: str, batch: _Stamped, expected: int) -> AppendResult:
        what = self._what(verb)
        for attempt in range(2):
            try:
                return self._db.run(what, lambda c: self._write_on(c, batch, expected), retry=False)
            except ConnectionLost:
                if attempt:
                    raise
            except ConflictError:
                landed = self._landed_now(batch, expected) if attempt else None
                if landed is None:
                    raise
                return landed
            # the connection broke mid-append: did the lines land before it did?
            landed = self._landed_now(batch, expected)
            if landed is not None:
                return landed
        raise InternalError("unreachable")  # pragma: no cover

    def _landed_now(self, batch: _Stamped, expected: int) -> AppendResult | None:
        return self._db.run(
            self._what("checking an interrupted append to"),
            lambda c: self._landed(c, batch, expected),
        )

    def _landed(
        self, conn: psycopg.Connection[Any], batch: _Stamped, expected: int
    ) -> AppendResult | None:
        """The batch, when its exact lines are the ledger's after ``expected``."""
        for (last_seq, _), (events, lines, head) in batch.built.items():
            if last_seq != expected:
                continue
            sql = (
                f"SELECT line FROM tht_ledger_events WHERE {_WHERE} AND seq > %(after)s "
                "AND seq <= %(upto)s ORDER BY seq"
            )
            params = self._params(after=expected, upto=expected + len(lines))
            found = [bytes(r[0]) for r in conn.execute(sql, params, binary=True)]
            if found == lines:
                self._known = (events[-1].seq, head)
                return AppendResult(events=events, head=head)
        return None

    def _write_on(
        self, conn: psycopg.Connection[Any], batch: _Stamped, expected: int
    ) -> AppendResult:
        import psycopg

        known = self._known
        try:
            if known is not None and known[0] == expected:
                built = batch.on(expected, known[1])
                if self._insert(conn, built, expected, known[1]):
                    return self._done(built)
            with conn.transaction():
                tail_seq, tail_head = self._lock(conn)
                if tail_seq != expected:
                    raise conflict_error(self._id, expected, tail_seq)
                built = batch.on(tail_seq, tail_head)
                if not self._insert(conn, built, expected, tail_head):
                    raise InternalError(f"{self._what('appending to')}: the locked head moved")
        except psycopg.errors.UniqueViolation:
            tail = self.tail()
            raise conflict_error(self._id, expected, tail.last_seq) from None
        return self._done(built)

    def _done(self, built: _Batch) -> AppendResult:
        events, _, head = built
        self._known = (events[-1].seq, head)
        return AppendResult(events=events, head=head)

    def _lock(self, conn: psycopg.Connection[Any]) -> tuple[int, str]:
        """Lock the head row (created for a workspace ledger's first append) and return the
        committed tail — after checking it agrees with the head row."""
        row = conn.execute(_LOCK, self._params(), binary=True).fetchone()
        if row is None:
            if self.ledger_name == "session":
                raise NotFoundError(f"session {self._id} does not exist")
            params = self._params(kind=self.ledger_name, id=self._id)
            conn.execute(_ENSURE, params)
            row = conn.execute(_LOCK, self._params(), binary=True).fetchone()
            assert row is not None
        anchor_seq, anchor_head = row
        last = conn.execute(_LAST, self._params(), binary=True).fetchone()
        if last is None:
            tail_seq, tail_head = 0, genesis_hash(self._id)
        else:
            last_line = bytes(last[1])
            tail_seq, tail_head = int(last[0]), line_hash(last_line)
            try:
                unfinished = decode_event(last_line).batch_left > 0
            except (msgspec.ValidationError, msgspec.DecodeError):
                unfinished = True
            if unfinished:
                raise IntegrityError(
                    f"{self.ledger_name} {self._id} ends with a line that does not end a "
                    "batch; nothing is appended until a human repairs it "
                    "(`tht ledger verify --repair --as human:<id>`)"
                )
        self._known = (tail_seq, tail_head)
        anchored = (
            anchor_seq == tail_seq and anchor_head == tail_head
            if tail_seq
            else anchor_seq == 0 and anchor_head in (None, tail_head)
        )
        if not anchored:
            raise IntegrityError(
                f"{self.ledger_name} {self._id} disagrees with its head row (acknowledged seq "
                f"{anchor_seq}, the rows end at seq {tail_seq}); nothing is appended until a "
                "human repairs it (`tht ledger verify --repair --as human:<id>`)"
            )
        return tail_seq, tail_head

    def _insert(
        self, conn: psycopg.Connection[Any], built: _Batch, expected: int, prev: str
    ) -> bool:
        events, lines, head = built
        last = events[-1].seq
        params = self._params(
            last=last,
            head=head,
            expected=expected,
            prev=prev,
            prev_digest=bytes.fromhex(prev),
            notice=f"{self._ws}:{self._key}:{last}",
        )
        if len(events) == 1:
            event = events[0]
            params.update(
                type=info_of(event).type,
                actor=_text(event.actor),
                stage=None if event.stage is None else _text(event.stage),
                ts=_text(event.ts),
                payload=_payload(event),
                line=lines[0],
            )
            row = conn.execute(_APPEND_ONE, params).fetchone()
            return row is not None and int(row[0]) == 1
        params.update(
            seqs=[e.seq for e in events],
            types=[info_of(e).type for e in events],
            actors=[_text(e.actor) for e in events],
            stages=[None if e.stage is None else _text(e.stage) for e in events],
            tss=[_text(e.ts) for e in events],
            payloads=[_payload(e) for e in events],
            prevs=[_text(e.prev) for e in events],
            lines=lines,
        )
        row = conn.execute(_APPEND, params).fetchone()
        return row is not None and int(row[0]) == len(lines)

    # ------------------------------------------------------------------ repair

    def repair(self, *, cut_seq: int | None = None) -> Repair:
        """The explicit repair (human-only; the kernel records ``ledger_repaired``): rows from
        line ``cut_seq`` on (back to the end of a whole batch) move to the quarantine table and
        the head row re-anchors on what is left."""
        return self._db.run(
            self._what("repairing"), lambda c: self._repair_on(c, cut_seq), retry=False
        )

    def _repair_on(self, conn: psycopg.Connection[Any], cut_seq: int | None) -> Repair:
        with conn.transaction():
            anchor = conn.execute(
                f"SELECT last_seq, head FROM tht_ledgers WHERE {_WHERE} FOR UPDATE", self._params()
            ).fetchone()
            if anchor is None:
                raise IntegrityError(
                    f"{self.ledger_name} {self._id} has no rows: nothing to repair"
                )
            sql = f"SELECT seq, line FROM tht_ledger_events WHERE {_WHERE} ORDER BY seq"
            rows = [(int(s), bytes(b)) for s, b in conn.execute(sql, self._params(), binary=True)]
            keep = len(rows) if cut_seq is None else max(0, min(cut_seq - 1, len(rows)))
            while keep:  # back to the end of a whole, decodable batch
                try:
                    if not decode_event(rows[keep - 1][1]).batch_left:
                        break
                except (msgspec.ValidationError, msgspec.DecodeError):
                    pass
                keep -= 1
            cut = rows[keep:]
            if cut:
                conn.execute(
                    "INSERT INTO tht_ledger_quarantine (workspace, ledger, seq, line) "
                    "SELECT %(ws)s, %(key)s, q.* FROM unnest(%(seqs)s::bigint[], "
                    "%(lines)s::bytea[]) AS q",
                    self._params(seqs=[s for s, _ in cut], lines=[b for _, b in cut]),
                )
                conn.execute(
                    f"DELETE FROM tht_ledger_events WHERE {_WHERE} AND seq >= %(cut)s",
                    self._params(cut=cut[0][0]),
                )
            last = rows[keep - 1][0] if keep else 0
            head = line_hash(rows[keep - 1][1]) if keep else genesis_hash(self._id)
            conn.execute(
                f"UPDATE tht_ledgers SET last_seq = %(last)s, head = %(head)s WHERE {_WHERE}",
                self._params(last=last, head=head),
            )
            conn.execute(
                "SELECT pg_notify(%(channel)s, %(notice)s)",
                {"channel": CHANNEL, "notice": f"{self._ws}:{self._key}:{last}"},
            )
        self._known = (last, head)
        old_seq = int(anchor[0]) if anchor[1] is not None else 0
        moved = b"".join(line + b"\n" for _, line in cut)
        accepted = (old_seq + 1, last) if 0 <= old_seq < last else None
        missing = (last + 1, old_seq) if old_seq > last else None
        return Repair(moved=moved, last_seq=last, accepted=accepted, missing=missing)

    def close(self) -> None:
        """Forget the head seen last (the connection belongs to the store)."""
        self._known = None


def _payload(event: Event) -> str | None:
    """The payload's JSON for its jsonb column, or None: jsonb cannot hold ``\\u0000`` in a
    string (the line keeps it; the column is a copy for queries)."""
    payload = _PAYLOAD.encode(event.payload)  # type: ignore[attr-defined]
    return None if b"\\u0000" in payload else payload.decode()


def _text(value: str) -> str:
    """A query column's copy of an envelope string (text cannot hold NUL; the line does)."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value
