"""The session ledger: an append-only, hash-chained JSONL file (ARCHITECTURE §3.1).

- Every line is one event (``kernel.events``), encoded deterministically.
- ``prev`` of a line is the SHA-256 (hex) of the previous line's bytes (without its newline); the
  first line chains from :func:`genesis_hash` of the session id. ``head`` is the hash of the last
  line.
- An append is one batch: under an exclusive lock, the expected last seq is checked (a stale writer
  gets :class:`~kernel.errors.ConflictError`, nothing written), the lines are written with one
  ``write`` and made durable with ``fsync``.
- Every line carries ``batch_left``, the number of lines of its batch still to come (0 on a
  batch's last line). A batch is all or nothing: if a crash cuts a batch's ``write`` short, its
  whole lines are part of the torn tail with the partial one, never events.
- A final line without its newline is a *torn tail* (a crash mid-write): it is never an event.
  Readers report it. No append ever repairs anything (ARCHITECTURE §3.9 rule 3: an append that
  quarantined a torn tail would launder a deleted final newline into a silent rewrite): an append
  refuses (exit 7) a ledger with a torn tail or one that disagrees with its anchor, and only an
  explicit, human-only repair (:meth:`Ledger.repair`, recorded as ``ledger_repaired``) moves
  bytes to the quarantine file beside the ledger.
- ``ledger.head`` beside the ledger anchors the last acknowledged ``(seq, head)`` so that editing
  or deleting the final lines is detected too. It is rewritten in place after each append (one
  fixed-size JSON record, padded with spaces: a single ``pwrite`` within one page, so no rename
  and no metadata churn on the append path) and not fsynced: after a crash it may lag behind the
  ledger, never run ahead of it. ``verify`` reads it before and after the ledger and retries
  when a concurrent append moved it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import mmap
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from kernel.clock import Clock, format_ts
from kernel.errors import ConflictError, IntegrityError
from kernel.events import (
    Event,
    EventDraft,
    decode_event,
    decode_lines,
    encode_event,
    stamp,
)
from kernel.ledger_verify import (
    Problem,
    VerifyReport,
    genesis_hash,
    line_hash,
    start_of_last_lines,
    verify_ledger_bytes,
)

__all__ = [
    "AppendResult",
    "Ledger",
    "LedgerRead",
    "LedgerTail",
    "Problem",
    "Repair",
    "Signer",
    "TornTail",
    "VerifyReport",
    "conflict_error",
    "genesis_hash",
    "line_hash",
    "offset_of_seq",
    "stamp_batch",
]

#: signs a stamped event (signed mode): its ``sig``, or None when the event is not signed
Signer = Callable[[Event], "str | None"]

_FIRST_CHUNK = 4096  # reading the tail backwards: most last lines fit in one page
_CHUNK = 65536
_ANCHOR_SIZE = 128  # bytes of ledger.head: {"seq": N, "head": "<64 hex>"} padded, plus newline
_VERIFY_ATTEMPTS = 5
#: what a reader may see of an append still in flight (part of its write, or lines before their
#: anchor): looked at again under the writers' lock before it is reported
_IN_FLIGHT = frozenset({"torn_tail", "unanchored"})


@dataclass(frozen=True)
class TornTail:
    offset: int
    data: bytes


@dataclass(frozen=True)
class LedgerTail:
    """The end of the ledger: what an append chains onto."""

    last_seq: int
    head: str
    size: int  # bytes of complete lines
    torn: TornTail | None
    last_line_start: int

    @property
    def hint(self) -> int:
        """Where the backend finds what follows ``last_seq`` (opaque to callers: a byte offset
        here, a line count in memory); always paired with ``(last_seq, head)``."""
        return self.size


@dataclass(frozen=True)
class LedgerRead:
    events: list[Event]
    head: str
    size: int
    torn: TornTail | None


@dataclass(frozen=True)
class AppendResult:
    events: list[Event]
    head: str
    quarantined: TornTail | None = None


class Ledger:
    """One session's ledger file (``sessions/<id>/ledger.jsonl``)."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.lock_path = path.with_name(path.name + ".lock")
        self.head_path = path.with_name("ledger.head")
        self.quarantine_path = path.with_name("ledger.quarantine.jsonl")
        self._writer: _WriterHandles | None = None
        self._mutex = threading.Lock()

    ledger_name = "session"
    first_type = "session_created"

    # ------------------------------------------------------------------ reading

    def exists(self) -> bool:
        return self.path.is_file()

    def read_bytes(self, start: int = 0) -> bytes:
        try:
            with self.path.open("rb") as fh:
                if start:
                    fh.seek(start)
                return fh.read()
        except FileNotFoundError:
            return b""

    def read(self, *, start: int = 0, upto: int | None = None) -> LedgerRead:
        """Decode every complete line from byte ``start`` (a line boundary) to the end.

        ``upto`` stops after the event with that seq. A line that does not decode raises
        :class:`~kernel.errors.IntegrityError` naming it; the torn tail is returned, not decoded.
        """
        data = self.read_bytes(start)
        end = data.rfind(b"\n") + 1
        complete = data[:end]
        try:
            events = decode_lines(complete)
        except (msgspec.ValidationError, msgspec.DecodeError):
            events = self._decode_one_by_one(complete, start)
        if events and events[-1].batch_left:
            # the final batch was cut short: its whole lines are torn too, never events
            keep = len(events)
            while keep and events[keep - 1].batch_left:
                keep -= 1
            end = start_of_last_lines(complete, len(events) - keep)
            events = events[:keep]
            complete = data[:end]
        torn = TornTail(start + end, data[end:]) if end < len(data) else None
        if upto is not None:
            events = [e for e in events if e.seq <= upto]
        head = self._head_of(complete, start)
        return LedgerRead(events=events, head=head, size=start + end, torn=torn)

    def read_after(self, seq: int, hint: int) -> LedgerRead:
        """The events after ``seq``, from ``hint`` (a position :meth:`line_at` validated)."""
        return self.read(start=hint)

    def line_at(self, seq: int, hint: int) -> bytes | None:
        """The bytes of line ``seq`` (without its newline) when it ends at ``hint``, else None."""
        if hint <= 0:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            chunk = _FIRST_CHUNK
            while True:
                start = max(0, hint - chunk)
                data = os.pread(fd, hint - start, start)
                if len(data) != hint - start or not data.endswith(b"\n"):
                    return None
                nl = data.rfind(b"\n", 0, len(data) - 1)
                if nl >= 0 or start == 0:
                    line = data[nl + 1 : -1]
                    break
                chunk *= 4
        finally:
            os.close(fd)
        try:
            event = decode_event(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
        return line if event.seq == seq else None

    def lines_after(self, seq: int, hint: int) -> list[bytes] | None:
        """The complete lines after ``seq`` (from ``hint``), or None when the file ends torn."""
        data = self.read_bytes(hint)
        if data and not data.endswith(b"\n"):
            return None
        return data.split(b"\n")[:-1]

    def first_event(self) -> Event | None:
        """The first event (``session_created``: what the session was created with), read
        without the rest of the file; None when there is no complete first line."""
        try:
            with self.path.open("rb") as fh:
                line = fh.readline(1 << 24)
        except FileNotFoundError:
            return None
        if not line.endswith(b"\n"):
            return None
        try:
            return decode_event(line[:-1])
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    def _decode_one_by_one(self, complete: bytes, start: int) -> list[Event]:
        events = []
        first_line = 1 if start == 0 else None
        for index, line in enumerate(complete.split(b"\n")[:-1]):
            try:
                events.append(decode_event(line))
            except (msgspec.ValidationError, msgspec.DecodeError) as err:
                where = f"line {first_line + index}" if first_line else f"byte offset {start}"
                raise IntegrityError(
                    f"{self.path}: {where} is not a valid event: {err}; run `tht ledger verify`"
                ) from err
        return events

    def _head_of(self, complete: bytes, start: int) -> str:
        if not complete:
            if start == 0:
                return genesis_hash(self.session_id)
            return self.tail().head
        last_start = complete.rfind(b"\n", 0, len(complete) - 1) + 1
        return line_hash(complete[last_start:-1])

    def tail(self) -> LedgerTail:
        """The last complete event's seq and hash, found by reading backwards from the end."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return LedgerTail(0, genesis_hash(self.session_id), 0, None, 0)
        try:
            return _tail_of_fd(fd, self.session_id)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock for writers (a separate lock file, so readers never block)."""
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the session folder is new
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def append(
        self,
        drafts: Sequence[EventDraft],
        *,
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None = None,
    ) -> AppendResult:
        """Append one batch durably, or raise ``ConflictError`` and write nothing.

        ``signer`` (signed mode) is called under the lock with each stamped event once its
        ``prev`` is known; it returns the event's ``sig`` (or None for an event that is not
        signed), computed over :func:`~kernel.events.canonical_bytes`.

        The writer's descriptors (lock, ledger, anchor) stay open between appends of this
        ``Ledger`` object in this process, and the tail it wrote last is reused when the file is
        still exactly as it left it (same size, still linked) — checked under the lock, so a
        concurrent writer's append is always seen. A forked child reopens its own descriptors.
        """
        if not drafts:
            tail = self.tail()
            if tail.last_seq != expected_last_seq:
                raise _conflict(self.session_id, expected_last_seq, tail.last_seq)
            return AppendResult(events=[], head=tail.head)
        with self._mutex:  # threads share this object's descriptors; flock guards processes
            return self._append_locked(drafts, expected_last_seq, clock, signer)

    def _append_locked(
        self,
        drafts: Sequence[EventDraft],
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None,
    ) -> AppendResult:
        writer = self._writer_handles()
        fcntl.flock(writer.lock_fd, fcntl.LOCK_EX)
        try:
            fd = writer.ledger_fd
            st = os.fstat(fd)
            if not st.st_nlink:  # deleted or replaced under us (with its folder): reopen all
                fcntl.flock(writer.lock_fd, fcntl.LOCK_UN)
                writer.close()
                self._writer = None
                writer = self._writer_handles()
                fcntl.flock(writer.lock_fd, fcntl.LOCK_EX)
                fd = writer.ledger_fd
                st = os.fstat(fd)
            cached = writer.tail
            if cached is not None and st.st_size == writer.size:
                tail = cached
            else:
                tail = _tail_of_fd(fd, self.session_id)
            created = tail.size == 0 and tail.torn is None  # new (or empty): fsync its folder
            if tail.last_seq != expected_last_seq:
                writer.tail, writer.size = tail, os.fstat(fd).st_size
                raise _conflict(self.session_id, expected_last_seq, tail.last_seq)
            if tail.torn is not None:
                raise IntegrityError(
                    f"{self.ledger_name} {self.session_id} ends with {len(tail.torn.data)} bytes "
                    "of an interrupted write; nothing is appended until a human repairs it "
                    "(`tht ledger verify --repair --as human:<id>`)"
                )
            writer.check_anchor(tail, self)
            quarantined = None
            events, lines, prev = stamp_batch(
                drafts,
                last_seq=tail.last_seq,
                prev=tail.head,
                ts=format_ts(clock.now()),
                signer=signer,
            )
            seq = events[-1].seq
            lines.append(b"")
            data = b"\n".join(lines)
            writer.tail = None  # unknown until the write is durable
            _write_all(fd, data)
            os.fsync(fd)
            if created:
                _fsync_dir(self.path.parent)
            size = tail.size + len(data)
            writer.tail = LedgerTail(seq, prev, size, None, size - len(lines[-2]) - 1)
            writer.size = size
            writer.write_anchor(seq, prev)
        finally:
            fcntl.flock(writer.lock_fd, fcntl.LOCK_UN)
        return AppendResult(events=events, head=prev, quarantined=quarantined)

    def _writer_handles(self) -> _WriterHandles:
        writer = self._writer
        if writer is not None and writer.pid == os.getpid():
            return writer
        if writer is not None:  # inherited across fork: never share open file descriptions
            writer.forget()
        try:
            lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the session folder is new
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        ledger_fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        anchor_fd = os.open(self.head_path, os.O_RDWR | os.O_CREAT, 0o600)
        writer = _WriterHandles(lock_fd, ledger_fd, anchor_fd, self.head_path)
        self._writer = writer
        weakref.finalize(self, writer.close)
        return writer

    def close(self) -> None:
        """Close the writer's descriptors (they are also closed when the object is collected)."""
        with self._mutex:
            if self._writer is not None:
                if self._writer.pid == os.getpid():
                    self._writer.close()
                self._writer = None

    def read_anchor(self) -> tuple[int, str] | None:
        try:
            data = json.loads(self.head_path.read_bytes())
            return int(data["seq"]), str(data["head"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return (-1, "")

    def _quarantine(self, torn: TornTail) -> None:
        record = {
            "offset": torn.offset,
            "size": len(torn.data),
            "data_b64": base64.b64encode(torn.data).decode("ascii"),
        }
        fd = os.open(self.quarantine_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _write_all(fd, json.dumps(record).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ verification

    def verify(self) -> VerifyReport:
        """Schema validity, gapless seq, batches, hash chain, head anchor and torn tail."""
        # The anchor never runs ahead of the ledger: read it before the lines, and again after
        # them to be sure no append (which rewrites it) ran in between.
        if not self.path.is_file():
            missing = Problem("missing_ledger", f"{self.path.name} is missing (deleted?)")
            return VerifyReport(
                ok=False, events=0, head=genesis_hash(self.session_id), problems=[missing]
            )
        # A writer makes its lines durable a moment before it moves the anchor; readers never
        # wait for writers, except a reader that saw lines past the anchor (below).
        report = self._verify_once()
        if any(p.code in _IN_FLIGHT for p in report.problems):
            # Look again once no append is in flight: a writer holds its exclusive lock from
            # before its write to after its anchor, so under a shared lock the lines are whole
            # and agree with the anchor — unless a crash (or a forger) left them otherwise.
            with self._shared_lock():
                report = self._verify_once()
        return report

    @contextlib.contextmanager
    def _shared_lock(self) -> Iterator[None]:
        try:
            fd = os.open(self.lock_path, os.O_RDONLY)
        except OSError:  # no lock file (never written by tht) or unreadable: nothing to wait for
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _verify_once(self) -> VerifyReport:
        for _ in range(_VERIFY_ATTEMPTS):
            anchor = self.read_anchor()
            data = self.read_bytes()
            if self.read_anchor() == anchor:
                break
        return verify_ledger_bytes(
            self.session_id,
            data,
            anchor,
            anchor_name=self.head_path.name,
            first_type=self.first_type,
        )

    def repair(self, *, cut_seq: int | None = None) -> Repair:
        """The explicit repair (human-only; the kernel records it as ``ledger_repaired``).

        Moves to the quarantine file the torn tail and, with ``cut_seq``, every line from line
        ``cut_seq`` on (the first line that failed verification), then re-anchors the head
        to what is left: lines past the old anchor that remain are thereby *accepted*. Returns
        what was moved and accepted; nothing is ever deleted without a copy.
        """
        with self.locked():
            if not self.path.exists():
                raise IntegrityError(f"{self.path} is missing: nothing to repair")
            anchor = self.read_anchor()
            fd = os.open(self.path, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                cut = None
                if cut_seq is not None:
                    cut = offset_of_seq(os.pread(fd, size, 0), cut_seq)
                tail = _tail_of_fd_lenient(fd, self.session_id, cut)
                start = tail.size
                moved = os.pread(fd, size - start, start) if start < size else b""
                if moved:
                    self._quarantine(TornTail(start, moved))
                    os.ftruncate(fd, start)
                    os.fsync(fd)
                old_seq = anchor[0] if anchor is not None else 0
                self._reanchor(tail.last_seq, tail.head)
            finally:
                os.close(fd)
        self.close()  # the writer's cached tail and anchor mapping are stale now
        accepted = (old_seq + 1, tail.last_seq) if 0 <= old_seq < tail.last_seq else None
        missing = (tail.last_seq + 1, old_seq) if old_seq > tail.last_seq else None
        return Repair(moved=moved, last_seq=tail.last_seq, accepted=accepted, missing=missing)

    def _reanchor(self, seq: int, head: str) -> None:
        fd = os.open(self.head_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _write_anchor_fd(fd, seq, head)
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Repair:
    moved: bytes  # the bytes moved to quarantine (torn tail and cut lines)
    last_seq: int
    accepted: tuple[int, int] | None  # seqs past the old anchor that were kept
    missing: tuple[int, int] | None  # seqs the old anchor acknowledged that are gone


def _tail_of_fd_lenient(fd: int, session_id: str, cut: int | None) -> LedgerTail:
    """The tail of the complete, committed lines before ``cut`` (a byte offset at a line
    start), for a ledger that may not decode past it."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0)
    end = data.rfind(b"\n") + 1
    if cut is not None:
        end = min(end, cut)
    while end:
        line_start = data.rfind(b"\n", 0, end - 1) + 1
        line = data[line_start : end - 1]
        try:
            event = decode_event(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            end = line_start
            continue
        if event.batch_left:
            end = line_start
            continue
        return LedgerTail(event.seq, line_hash(line), end, None, line_start)
    return LedgerTail(0, genesis_hash(session_id), 0, None, 0)


def stamp_batch(
    drafts: Sequence[EventDraft], *, last_seq: int, prev: str, ts: str, signer: Signer | None
) -> tuple[list[Event], list[bytes], str]:
    """Stamp one batch after ``(last_seq, prev)``: its events, their line bytes and the new head
    — the one format every backend writes (so a ledger moves between stores byte for byte)."""
    events: list[Event] = []
    lines: list[bytes] = []
    last = len(drafts) - 1
    seq = last_seq
    for position, draft in enumerate(drafts):
        seq += 1
        event = stamp(draft, seq=seq, ts=ts, prev=prev, batch_left=last - position)
        if signer is not None:
            sig = signer(event)
            if sig is not None:
                event = msgspec.structs.replace(event, sig=sig)
        line = encode_event(event)
        prev = line_hash(line)
        events.append(event)
        lines.append(line)
    return events, lines, prev


def offset_of_seq(data: bytes, seq: int) -> int:
    """The byte offset where line ``seq`` starts in a ledger file's bytes."""
    offset = 0
    for _ in range(seq - 1):
        nl = data.find(b"\n", offset)
        if nl < 0:
            return len(data)
        offset = nl + 1
    return offset


def conflict_error(session_id: str, expected: int, actual: int) -> ConflictError:
    return _conflict(session_id, expected, actual)


def _conflict(session_id: str, expected: int, actual: int) -> ConflictError:
    return ConflictError(
        f"session {session_id} moved on: expected last seq {expected}, found {actual}; "
        "re-read the state and retry",
        details={"expected_last_seq": expected, "last_seq": actual},
    )


def _tail_of_fd(fd: int, session_id: str) -> LedgerTail:
    size = os.fstat(fd).st_size
    if size == 0:
        return LedgerTail(0, genesis_hash(session_id), 0, None, 0)
    # 1. where do complete lines end?
    pos = size
    end = -1
    buffer = b""
    chunk = _FIRST_CHUNK
    while pos > 0 and end < 0:
        start = max(0, pos - chunk)
        buffer = os.pread(fd, pos - start, start) + buffer
        pos = start
        chunk = min(chunk * 4, _CHUNK)
        idx = buffer.rfind(b"\n")
        if idx >= 0:
            end = pos + idx + 1
    if end < 0:  # no newline at all: everything is torn
        return LedgerTail(0, genesis_hash(session_id), 0, TornTail(0, buffer), 0)
    torn = TornTail(end, buffer[end - pos :]) if end < size else None
    # 2. where does the last complete line start?
    line_end = end - 1
    rel_end = line_end - pos
    idx = buffer.rfind(b"\n", 0, rel_end)
    while idx < 0 and pos > 0:
        start = max(0, pos - chunk)
        buffer = os.pread(fd, pos - start, start) + buffer
        rel_end += pos - start
        pos = start
        chunk = min(chunk * 4, _CHUNK)
        idx = buffer.rfind(b"\n", 0, rel_end)
    line_start = pos + idx + 1
    line = buffer[line_start - pos : rel_end]
    event = _decode_tail_line(line, session_id)
    if event.batch_left:
        return _tail_of_unfinished_batch(fd, session_id, size)
    return LedgerTail(event.seq, line_hash(line), end, torn, line_start)


def _decode_tail_line(line: bytes, session_id: str) -> Event:
    try:
        return decode_event(line)
    except (msgspec.ValidationError, msgspec.DecodeError) as err:
        raise IntegrityError(
            f"session {session_id}: a final ledger line is not a valid event ({err}); "
            "run `tht ledger verify`"
        ) from err


def _tail_of_unfinished_batch(fd: int, session_id: str, size: int) -> LedgerTail:
    """The rare path after a crash mid-batch: the committed end is the last line with
    ``batch_left == 0``; the unfinished batch's whole lines belong to the torn tail."""
    data = os.pread(fd, size, 0)
    end = data.rfind(b"\n") + 1
    cut = end
    while cut:
        line_start = data.rfind(b"\n", 0, cut - 1) + 1
        event = _decode_tail_line(data[line_start : cut - 1], session_id)
        if not event.batch_left:
            return LedgerTail(
                event.seq,
                line_hash(data[line_start : cut - 1]),
                cut,
                TornTail(cut, data[cut:]),
                line_start,
            )
        cut = line_start
    return LedgerTail(0, genesis_hash(session_id), 0, TornTail(0, data), 0)


class _WriterHandles:
    """Descriptors a writer keeps open between appends, and the tail it last wrote."""

    def __init__(self, lock_fd: int, ledger_fd: int, anchor_fd: int, anchor_path: Path) -> None:
        self.pid = os.getpid()
        self.lock_fd = lock_fd
        self.ledger_fd = ledger_fd
        self.anchor_fd = anchor_fd
        self.anchor_path = anchor_path
        self.tail: LedgerTail | None = None
        self.size = -1
        self.anchor_map: mmap.mmap | None = None
        self.closed = False

    def check_anchor(self, tail: LedgerTail, ledger: Ledger) -> None:
        """Under the lock, before writing: the ledger must end exactly where its anchor says
        (no line removed, edited or appended behind tht's back), else nothing is appended."""
        try:
            st = os.stat(self.anchor_path)
        except FileNotFoundError:
            st = None
        if st is None or st.st_ino != os.fstat(self.anchor_fd).st_ino:
            if tail.size == 0 and st is None:
                return  # a new ledger: its anchor is written with its first line
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id}: {self.anchor_path.name} is missing "
                "or was replaced; run `tht ledger verify`"
            )
        raw = os.pread(self.anchor_fd, _ANCHOR_SIZE, 0)
        try:
            data = json.loads(raw)
            seq, head = int(data["seq"]), str(data["head"])
        except (ValueError, KeyError, TypeError):
            if tail.size == 0 and not raw:
                return
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id}: {self.anchor_path.name} is "
                "unreadable; run `tht ledger verify`"
            ) from None
        if seq != tail.last_seq or head != tail.head:
            raise IntegrityError(
                f"{ledger.ledger_name} {ledger.session_id} disagrees with its anchor "
                f"(acknowledged seq {seq}, the file ends at seq {tail.last_seq}); nothing is "
                "appended until a human repairs it (`tht ledger verify --repair --as human:<id>`)"
            )

    def write_anchor(self, seq: int, head: str) -> None:
        """The first write sizes the file (one ``pwrite``); later ones are stores into a shared
        mapping of its page: no syscall, and no inode update for the ledger's next fsync to
        commit. Either way the page reaches the disk by writeback, after the ledger's fsync."""
        if self.anchor_map is None or os.fstat(self.anchor_fd).st_size != _ANCHOR_SIZE:
            _write_anchor_fd(self.anchor_fd, seq, head)  # (re)sizes a new or rewritten file
            if self.anchor_map is None:
                self.anchor_map = mmap.mmap(self.anchor_fd, _ANCHOR_SIZE)
        else:
            self.anchor_map[:] = _anchor_record(seq, head)

    def close(self) -> None:
        if self.closed or self.pid != os.getpid():
            return
        self.closed = True
        if self.anchor_map is not None:
            with contextlib.suppress(OSError, ValueError, BufferError):
                self.anchor_map.close()
        for fd in (self.lock_fd, self.ledger_fd, self.anchor_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def forget(self) -> None:
        """A forked child drops (without closing) what it inherited from its parent."""
        self.closed = True


def _anchor_record(seq: int, head: str) -> bytes:
    record = b'{"seq": %d, "head": "%s"}' % (seq, head.encode("ascii"))
    return record.ljust(_ANCHOR_SIZE - 1) + b"\n"


def _write_anchor_fd(fd: int, seq: int, head: str) -> None:
    """One fixed-size record rewritten in place. A rename per append made ext4 flush the new
    file's data on every append (``auto_da_alloc``): slower than the ledger's own fsync."""
    data = _anchor_record(seq, head)
    os.pwrite(fd, data, 0)
    if os.fstat(fd).st_size > len(data):  # an older, longer anchor file
        os.ftruncate(fd, len(data))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
