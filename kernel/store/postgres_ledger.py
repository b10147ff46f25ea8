"""One ledger in PostgreSQL: rows of ``tht_ledger_events`` plus its head row in ``tht_ledgers``
(ARCHITECTURE §3.1, §3.5) — the reading side; appends, copies and repair are
:mod:`kernel.store.postgres_write`'s. The lines are the exact bytes the filesystem ledger writes
(:func:`~kernel.ledger_records.stamp_batch`), so ``verify`` is the same pure function of them
and of the anchor (the head row), and a ledger moves between stores byte for byte.

Positions: a hint is the seq itself (``LedgerTail.hint == last_seq``), so ``read_after`` reads
only the rows after it. Every read is one statement (one snapshot, one round trip), and two
lines come with other answers of the store (:class:`~kernel.store.postgres.PostgresStore`):
the first with the session's existence (``first_event``), the last with the status cache
(``line_at`` of a cache that is up to date). A committed line never changes but by a repair,
so handing out such a line later is as good as reading it then; each is handed out once, and
a repair forgets them. Never the head or the tail: those are always read when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from kernel.errors import IntegrityError
from kernel.events import Event, decode_event, decode_lines
from kernel.ledger_records import LedgerRead, LedgerTail
from kernel.ledger_verify import (
    Problem,
    VerifyReport,
    genesis_hash,
    line_hash,
    start_of_last_lines,
    verify_ledger_bytes,
)
from kernel.store.postgres_write import CHANNEL, WHERE, LedgerWriter

if TYPE_CHECKING:
    from kernel.store.postgres_driver import Connection

__all__ = ["CHANNEL", "PostgresLedger"]

_WHERE = WHERE
_LAST_LINE = f"SELECT seq, line FROM tht_ledger_events WHERE {_WHERE} ORDER BY seq DESC LIMIT 1"
_AFTER = (
    f"SELECT (SELECT string_agg(line, '\\x0a'::bytea ORDER BY seq) FROM tht_ledger_events "
    f"WHERE {_WHERE} AND seq > %(after)s), (SELECT line FROM tht_ledger_events "
    f"WHERE {_WHERE} ORDER BY seq DESC LIMIT 1)"
)
_SNAPSHOT = (
    "SELECT h.last_seq, h.head, (SELECT string_agg(line, '\\x0a'::bytea ORDER BY seq) "
    f"FROM tht_ledger_events WHERE {_WHERE}) FROM (SELECT 1) AS one "
    "LEFT JOIN tht_ledgers h ON h.workspace = %(ws)s AND h.ledger = %(key)s"
)


class PostgresLedger(LedgerWriter):
    """One ledger (a session's, or a workspace-level one) of one workspace: ``LedgerPort``."""

    # ------------------------------------------------------------------ reading

    def exists(self) -> bool:
        sql = f"SELECT EXISTS (SELECT 1 FROM tht_ledger_events WHERE {_WHERE})"
        row = self._query(self._what("looking for"), sql)
        return bool(row and row[0])

    def _decode(self, data: bytes) -> list[Event]:
        try:
            return decode_lines(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            raise IntegrityError(
                f"{self.ledger_name} {self._id}: a ledger line is not a valid event ({err}); "
                "run `tht ledger verify`"
            ) from err

    def _read(self, after: int) -> LedgerRead:
        row = self._query(self._what("reading"), _AFTER, after=after)
        blob, last = (row[0], row[1]) if row is not None else (None, None)
        if last is None:
            return LedgerRead(events=[], head=genesis_hash(self._id), size=0, torn=None)
        last = bytes(last)
        events = self._decode(bytes(blob) + b"\n") if blob is not None else []
        final = events[-1] if events else self._decode(last + b"\n")[0]
        if final.batch_left:  # only a damaged ledger ends inside a batch
            return self._read_committed(after)
        head = line_hash(last)
        self._known = (final.seq, head)
        return LedgerRead(events=events, head=head, size=final.seq, torn=None)

    def _read_committed(self, after: int) -> LedgerRead:
        """The slow path of a ledger whose last batch is unfinished (damage): its whole lines
        are never events, as on the filesystem."""
        row = self._query(self._what("reading"), _AFTER, after=0)
        data = bytes(row[0]) + b"\n" if row is not None and row[0] is not None else b""
        events = self._decode(data)
        keep = len(events)
        while keep and events[keep - 1].batch_left:
            keep -= 1
        complete = data[: start_of_last_lines(data, len(events) - keep)]
        head = genesis_hash(self._id)
        if complete:
            head = line_hash(complete[complete.rfind(b"\n", 0, len(complete) - 1) + 1 : -1])
        kept = [e for e in events[:keep] if e.seq > after]
        return LedgerRead(events=kept, head=head, size=keep, torn=None)

    def read(self, *, upto: int | None = None) -> LedgerRead:
        read = self._read(0)
        if upto is not None:
            events = [e for e in read.events if e.seq <= upto]
            return LedgerRead(events=events, head=read.head, size=read.size, torn=None)
        return read

    def read_after(self, seq: int, hint: int) -> LedgerRead:
        """The events after ``seq`` (only those rows are read; the hint is the seq itself)."""
        return self._read(seq)

    def tail(self) -> LedgerTail:
        row = self._query(self._what("reading the tail of"), _LAST_LINE)
        if row is None:
            return LedgerTail(0, genesis_hash(self._id), 0, None, 0)
        seq, line = int(row[0]), bytes(row[1])
        try:
            unfinished = decode_event(line).batch_left > 0
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            raise IntegrityError(
                f"{self.ledger_name} {self._id}: the final ledger line is not a valid event "
                f"({err}); run `tht ledger verify`"
            ) from err
        if unfinished:
            read = self._read_committed(0)
            return LedgerTail(read.size, read.head, read.size, None, max(0, read.size - 1))
        head = line_hash(line)
        self._known = (seq, head)
        return LedgerTail(seq, head, seq, None, max(0, seq - 1))

    def line_at(self, seq: int, hint: int) -> bytes | None:
        if seq < 1 or hint != seq:
            return None
        seen, self._seen_line = self._seen_line, None
        if seen is not None and seen[0] == seq:
            line = seen[1]
        else:
            sql = f"SELECT line FROM tht_ledger_events WHERE {_WHERE} AND seq = %(seq)s"
            row = self._query(self._what("reading a line of"), sql, seq=seq)
            if row is None:
                return None
            line = bytes(row[0])
        try:
            return line if decode_event(line).seq == seq else None
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    def lines_after(self, seq: int, hint: int) -> list[bytes] | None:
        if hint != seq or seq < 0:
            return None

        def work(conn: Connection) -> list[bytes]:
            sql = f"SELECT line FROM tht_ledger_events WHERE {_WHERE} AND seq > %(after)s "
            rows = conn.execute(sql + "ORDER BY seq", self._params(after=seq))
            return [bytes(r[0]) for r in rows]

        return self._db.run(self._what("reading"), work)

    def first_event(self) -> Event | None:
        line, self._first_line = self._first_line, None
        if line is None:
            sql = f"SELECT line FROM tht_ledger_events WHERE {_WHERE} ORDER BY seq LIMIT 1"
            row = self._query(self._what("reading the first event of"), sql)
            if row is None:
                return None
            line = bytes(row[0])
        try:
            return decode_event(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    def read_anchor(self) -> tuple[int, str] | None:
        sql = f"SELECT last_seq, head FROM tht_ledgers WHERE {_WHERE}"
        row = self._query(self._what("reading the head row of"), sql)
        if row is None or row[1] is None:
            return None
        return int(row[0]), str(row[1])

    def verify(self) -> VerifyReport:
        """Schema, gapless seq, batches, hash chain and the head row — on the rows and the head
        row read in one statement (one snapshot), by the filesystem's own verifier."""
        row = self._query(self._what("verifying"), _SNAPSHOT)
        anchor_seq, anchor_head, blob = row if row is not None else (None, None, None)
        if blob is None:
            missing = Problem("empty", "the ledger has no events (emptied or never written)")
            return VerifyReport(ok=False, events=0, head=genesis_hash(self._id), problems=[missing])
        anchor = (int(anchor_seq), str(anchor_head)) if anchor_head is not None else None
        report = verify_ledger_bytes(
            self._id,
            bytes(blob) + b"\n",
            anchor,
            anchor_name="the head row",
            first_type=self.first_type,
        )
        if report.ok:
            self._known = (report.events, report.head)
        return report
