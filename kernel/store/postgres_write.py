"""Writing a PostgreSQL ledger (ARCHITECTURE §3.1): appends with the expected last seq, verbatim
copies (``append_lines``) and the explicit repair, over ``tht_ledger_events`` and the ledger's
head row in ``tht_ledgers``.

**Appends lock the head row.** An append is one transaction that takes the row lock of the
ledger's head row (``UPDATE … WHERE last_seq = expected`` on the fast path, ``SELECT … FOR
UPDATE`` on the slow one), checks the expected last seq against it, inserts the lines and moves
the head. A row lock and not an advisory lock because the head row *is* what the check reads
and the append changes: holding it until commit makes every other writer of that ledger wait,
then re-read the committed head (READ COMMITTED re-checks an updated row) and fail its check —
so insert order equals commit order, a stale writer gets ``ConflictError`` (exit 4) with
nothing written, and writers of other ledgers never wait (an advisory lock keyed by a hash
could collide; a lock on its own row cannot, and it is released by the commit or by the server
when the session dies). A unique violation on ``(workspace, ledger, seq)`` is a
``ConflictError`` too.

The fast path is one statement (one round trip): the writer stamps its batch on the head it
saw last (``verify``, ``tail``, its own last append), and the statement moves the head only
when it is still that one and the last line still hashes to it; otherwise the slow path locks,
looks and explains (conflict, or a damaged ledger: ``IntegrityError``, nothing appended).

**The notice goes right after the commit**, not inside the append's transaction, and only
while a view listens (:mod:`kernel.store.postgres_statements`): ``NOTIFY tht_ledger,
'<workspace>:<ledger>:<seq>'`` in a transaction of its own, posted on the same connection once
the append's commit is acknowledged (its answer is read by the connection's next statement, so
it costs the append no round trip). Inside the transaction a notice is correct by construction
— sent exactly when the commit happens — but PostgreSQL serializes every committing transaction
that has notified, across the whole server, on one lock held until its commit is flushed:
writers of *different* ledgers then wait for each other's WAL flush, and group commit is lost.
Measured (``python -m benchmarks store``: pgbench on an append-shaped statement,
``synchronous_commit`` on, 8 clients on 8 ledgers against 1, 2 CPUs): 0.8-1.2× one client's
rate with the notice inside (the commits queue), 2.3-13× with it after (the slower the disk's
flush, the more group commit gains); docs/operations.md has the numbers. A notice of its own
costs a transaction (some 20-40 µs of server time, and one more wake-up of the server, per
append), which is why it is not sent when nobody listens. The price: a crash (or a lost
connection) between the commit and the notice loses that notice — never a spurious one for an
append that did not commit (an append found to have landed after a lost connection sends its
notice then). So a notice only says *when to look*: listeners also re-read on a timer
(:mod:`kernel.store.postgres_listen`). Notices of one ledger may arrive out of order (each is
its own transaction); a notice's seq is a lower bound.

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
from kernel.events import Event, EventDraft, decode_event
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
from kernel.store.postgres_libpq import UNIQUE_VIOLATION, PgError
from kernel.store.postgres_statements import (
    APPEND,
    APPEND_FIRST,
    APPEND_ONE,
    APPEND_ONE_FIRST,
    CHANNEL,
    ENSURE,
    LAST,
    LOCK,
    NOTIFY,
    WHERE,
    append_params,
    listening_key,
)

if TYPE_CHECKING:
    from kernel.store.postgres_driver import Connection

__all__ = ["CHANNEL", "WHERE", "LedgerWriter"]

_WHERE = WHERE
_Batch = tuple[list[Event], list[bytes], str]


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
        self._listening = listening_key(workspace)
        # lines read beside another answer (one round trip saved), each handed out once: the
        # first line (with the session's existence) and the last one (with the status cache).
        # A committed line never changes but by a repair, which forgets them.
        self._first_line: bytes | None = None
        self._seen_line: tuple[int, bytes] | None = None

    @property
    def session_id(self) -> str:
        return self._id

    @property
    def key(self) -> str:
        return self._key

    def _params(self, **more: object) -> dict[str, object]:
        return {"ws": self._ws, "key": self._key, **more}

    def _query(self, what: str, sql: str, **params: object) -> tuple[Any, ...] | None:
        def work(conn: Connection) -> tuple[Any, ...] | None:
            return conn.execute(sql, self._params(**params)).fetchone()

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

    def _landed(self, conn: Connection, batch: _Stamped, expected: int) -> AppendResult | None:
        """The batch, when its exact lines are the ledger's after ``expected``."""
        for (last_seq, _), (events, lines, head) in batch.built.items():
            if last_seq != expected:
                continue
            sql = (
                f"SELECT line FROM tht_ledger_events WHERE {_WHERE} AND seq > %(after)s "
                "AND seq <= %(upto)s ORDER BY seq"
            )
            params = self._params(after=expected, upto=expected + len(lines))
            found = [bytes(r[0]) for r in conn.execute(sql, params)]
            if found == lines:
                self._known = (events[-1].seq, head)
                self._notify(conn, events[-1].seq)  # its own notice was lost with the connection
                return AppendResult(events=events, head=head)
        return None

    def _write_on(self, conn: Connection, batch: _Stamped, expected: int) -> AppendResult:
        known = self._known
        try:
            if known is not None and known[0] == expected:
                built = batch.on(expected, known[1])
                moved, listened = self._insert(conn, built, expected, known[1])
                if moved:
                    return self._done(conn, built, listened)
            with conn.transaction():
                tail_seq, tail_head = self._lock(conn)
                if tail_seq != expected:
                    raise conflict_error(self._id, expected, tail_seq)
                built = batch.on(tail_seq, tail_head)
                moved, listened = self._insert(conn, built, expected, tail_head)
                if not moved:
                    raise InternalError(f"{self._what('appending to')}: the locked head moved")
        except PgError as err:
            if err.sqlstate != UNIQUE_VIOLATION:
                raise
            tail = self.tail()
            raise conflict_error(self._id, expected, tail.last_seq) from None
        return self._done(conn, built, listened)

    def _done(self, conn: Connection, built: _Batch, listened: bool) -> AppendResult:
        """A committed append: remember its head, and tell the listeners, if any."""
        events, _, head = built
        self._known = (events[-1].seq, head)
        if listened:
            self._notify(conn, events[-1].seq)
        return AppendResult(events=events, head=head)

    def _notify(self, conn: Connection, seq: int) -> None:
        """The notice of a commit already made, posted: its answer is read by the connection's
        next statement (by then long there), so it costs the writer no round trip."""
        conn.post(NOTIFY, {"notice": f"{self._ws}:{self._key}:{seq}"})

    def _lock(self, conn: Connection) -> tuple[int, str]:
        """Lock the head row (created for a workspace ledger's first append) and return the
        committed tail — after checking it agrees with the head row."""
        row = conn.execute(LOCK, self._params()).fetchone()
        if row is None:
            if self.ledger_name == "session":
                raise NotFoundError(f"session {self._id} does not exist")
            params = self._params(kind=self.ledger_name, id=self._id)
            conn.execute(ENSURE, params)
            row = conn.execute(LOCK, self._params()).fetchone()
            assert row is not None
        anchor_seq, anchor_head = row
        last = conn.execute(LAST, self._params()).fetchone()
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
        self, conn: Connection, built: _Batch, expected: int, prev: str
    ) -> tuple[bool, bool]:
        """The append statement: whether the head moved (the lines are in), and whether a view
        listens (:mod:`kernel.store.postgres_statements`)."""
        events, lines, head = built
        params = append_params(events, lines)  # a new dict: the rest goes in it
        params.update(
            ws=self._ws,
            key=self._key,
            last=events[-1].seq,
            head=head,
            expected=expected,
            prev=prev,
            prev_digest=bytes.fromhex(prev),
            listening=self._listening,
        )
        if len(events) == 1:  # one row (listening,) when the line is in, none otherwise
            row = conn.execute(APPEND_ONE if expected else APPEND_ONE_FIRST, params).fetchone()
            return (False, False) if row is None else (True, bool(row[0]))
        row = conn.execute(APPEND if expected else APPEND_FIRST, params).fetchone()
        return (False, False) if row is None else (int(row[0]) == len(lines), bool(row[1]))

    # ------------------------------------------------------------------ repair

    def repair(self, *, cut_seq: int | None = None) -> Repair:
        """The explicit repair (human-only; the kernel records ``ledger_repaired``): rows from
        line ``cut_seq`` on (back to the end of a whole batch) move to the quarantine table and
        the head row re-anchors on what is left."""
        return self._db.run(
            self._what("repairing"), lambda c: self._repair_on(c, cut_seq), retry=False
        )

    def _repair_on(self, conn: Connection, cut_seq: int | None) -> Repair:
        with conn.transaction():
            anchor = conn.execute(
                f"SELECT last_seq, head FROM tht_ledgers WHERE {_WHERE} FOR UPDATE", self._params()
            ).fetchone()
            if anchor is None:
                raise IntegrityError(
                    f"{self.ledger_name} {self._id} has no rows: nothing to repair"
                )
            sql = f"SELECT seq, line FROM tht_ledger_events WHERE {_WHERE} ORDER BY seq"
            rows = [(int(s), bytes(b)) for s, b in conn.execute(sql, self._params())]
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
        self._notify(conn, last)
        self._known = (last, head)
        self._first_line = self._seen_line = None
        old_seq = int(anchor[0]) if anchor[1] is not None else 0
        moved = b"".join(line + b"\n" for _, line in cut)
        accepted = (old_seq + 1, last) if 0 <= old_seq < last else None
        missing = (last + 1, old_seq) if old_seq > last else None
        return Repair(moved=moved, last_seq=last, accepted=accepted, missing=missing)

    def close(self) -> None:
        """Forget the head and lines seen last (the connection belongs to the store)."""
        self._known = None
        self._first_line = self._seen_line = None

    def saw_lines(
        self, *, first: bytes | None = None, last: tuple[int, bytes] | None = None
    ) -> None:
        """Lines the store read for this ledger beside another answer (see ``__init__``)."""
        if first is not None:
            self._first_line = first
        if last is not None:
            self._seen_line = last
