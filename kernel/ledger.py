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
- A ledger or anchor that is *missing* is what the format says (no events yet; for ``verify``
  an integrity problem). One that exists but that the operating system will not let tht read
  (permission, an I/O error, a folder in its place) is an unavailable store:
  :func:`~kernel.errors.unreadable_error` (exit 6, naming the path and the OS reason), never an
  integrity verdict on bytes that were not seen, and nothing is written.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec

from kernel.clock import Clock, format_ts
from kernel.errors import IntegrityError, unreadable_error, unwritable_error
from kernel.events import Event, EventDraft, decode_event, decode_lines
from kernel.ledger_records import (
    AppendResult,
    LedgerRead,
    LedgerTail,
    Repair,
    Signer,
    TornTail,
    chain_lines,
    conflict_error,
    offset_of_seq,
    stamp_batch,
)
from kernel.ledger_tail import tail_of_fd, tail_of_fd_lenient
from kernel.ledger_verify import (
    Problem,
    VerifyReport,
    genesis_hash,
    line_hash,
    start_of_last_lines,
    verify_ledger_bytes,
)
from kernel.ledger_writer import WriterHandles, fsync_dir, write_all, write_anchor_fd

# the records are defined beside the format (kernel/ledger_records.py) and re-exported here, the
# module every caller knows
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

_FIRST_CHUNK = 4096  # reading backwards to find a line's start: most lines fit in one page
_VERIFY_ATTEMPTS = 5
#: what a reader may see of an append still in flight (part of its write, or lines before their
#: anchor): looked at again under the writers' lock before it is reported
_IN_FLIGHT = frozenset({"torn_tail", "unanchored"})
#: one batch as a writer builds it on the tail it found: events, their lines, the new head
_Batch = tuple[list[Event], list[bytes], str]


class Ledger:
    """One session's ledger file (``sessions/<id>/ledger.jsonl``)."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.lock_path = path.with_name(path.name + ".lock")
        self.head_path = path.with_name("ledger.head")
        self.quarantine_path = path.with_name("ledger.quarantine.jsonl")
        self._writer: WriterHandles | None = None
        self._mutex = threading.Lock()

    ledger_name = "session"
    first_type: str | tuple[str, ...] = "session_created"

    # ------------------------------------------------------------------ reading

    def exists(self) -> bool:
        try:
            return self.path.is_file()
        except OSError as err:  # a folder on the way that cannot be searched
            raise unreadable_error(self.path, err) from err

    def read_bytes(self, start: int = 0) -> bytes:
        try:
            with self.path.open("rb") as fh:
                if start:
                    fh.seek(start)
                return fh.read()
        except FileNotFoundError:
            return b""
        except OSError as err:
            raise unreadable_error(self.path, err) from err

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
        fd = self._open_for_reading()
        if fd is None:
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
        except OSError as err:
            raise unreadable_error(self.path, err) from err
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
        except OSError as err:
            raise unreadable_error(self.path, err) from err
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
        fd = self._open_for_reading()
        if fd is None:
            return LedgerTail(0, genesis_hash(self.session_id), 0, None, 0)
        try:
            return tail_of_fd(fd, self.session_id)
        except OSError as err:
            raise unreadable_error(self.path, err) from err
        finally:
            os.close(fd)

    def _open_for_reading(self) -> int | None:
        """A read-only descriptor of the ledger; None when there is no file."""
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise unreadable_error(self.path, err) from err

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock for writers (a separate lock file, so readers never block)."""
        try:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # the session folder is new
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise unwritable_error(err.filename or self.lock_path, err, "open for writing") from err
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
                raise conflict_error(self.session_id, expected_last_seq, tail.last_seq)
            return AppendResult(events=[], head=tail.head)

        def stamped(last_seq: int, prev: str) -> _Batch:  # the clock is read under the lock
            ts = format_ts(clock.now())
            return stamp_batch(drafts, last_seq=last_seq, prev=prev, ts=ts, signer=signer)

        with self._mutex:  # threads share this object's descriptors; flock guards processes
            return self._append_locked(stamped, expected_last_seq)

    def append_lines(self, lines: Sequence[bytes], *, expected_last_seq: int) -> AppendResult:
        """Append already-encoded, already-chained committed lines verbatim (a ledger copied
        between stores), checked by :func:`~kernel.ledger_records.chain_lines` under the lock
        and written like one batch; ``ConflictError`` / ``IntegrityError`` and nothing written
        otherwise."""
        if not lines:
            tail = self.tail()
            if tail.last_seq != expected_last_seq:
                raise conflict_error(self.session_id, expected_last_seq, tail.last_seq)
            return AppendResult(events=[], head=tail.head)

        def checked(last_seq: int, prev: str) -> _Batch:
            events, head = chain_lines(
                lines,
                last_seq=last_seq,
                prev=prev,
                ledger=f"{self.ledger_name} {self.session_id}",
                first_type=self.first_type,
            )
            return events, list(lines), head

        with self._mutex:
            return self._append_locked(checked, expected_last_seq)

    def _append_locked(
        self, build: Callable[[int, str], _Batch], expected_last_seq: int
    ) -> AppendResult:
        writer = self._writer_handles()
        fcntl.flock(writer.lock_fd, fcntl.LOCK_EX)
        try:
            try:  # nothing is written yet: a ledger that cannot be read back refuses here
                fd = writer.ledger_fd
                st = os.fstat(fd)
                if not st.st_nlink:  # deleted or replaced under us (with its folder): reopen
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
                    tail = tail_of_fd(fd, self.session_id)
            except OSError as err:
                raise unreadable_error(self.path, err) from err
            created = tail.size == 0 and tail.torn is None  # new (or empty): fsync its folder
            if tail.last_seq != expected_last_seq:
                writer.tail, writer.size = tail, os.fstat(fd).st_size
                raise conflict_error(self.session_id, expected_last_seq, tail.last_seq)
            if tail.torn is not None:
                raise IntegrityError(
                    f"{self.ledger_name} {self.session_id} ends with {len(tail.torn.data)} bytes "
                    "of an interrupted write; nothing is appended until a human repairs it "
                    "(`tht ledger verify --repair --as human:<id>`)"
                )
            try:
                writer.check_anchor(tail, self)
            except OSError as err:  # nothing is written yet
                raise unreadable_error(err.filename or self.head_path, err) from err
            quarantined = None
            events, lines, prev = build(tail.last_seq, tail.head)
            seq = events[-1].seq
            lines.append(b"")
            data = b"\n".join(lines)
            writer.tail = None  # unknown until the write is durable
            failing = self.path
            try:
                write_all(fd, data)
                os.fsync(fd)
                if created:
                    fsync_dir(self.path.parent)
                failing = self.head_path
                writer.write_anchor(seq, prev)
            except OSError as err:  # disk full, quota, size limit, I/O: take the batch back
                writer.undo(tail, self, err, anchor=failing == self.head_path)
                raise unwritable_error(failing, err, "append to") from err
            size = tail.size + len(data)
            writer.tail = LedgerTail(seq, prev, size, None, size - len(lines[-2]) - 1)
            writer.size = size
        finally:
            fcntl.flock(writer.lock_fd, fcntl.LOCK_UN)
        return AppendResult(events=events, head=prev, quarantined=quarantined)

    def _writer_handles(self) -> WriterHandles:
        writer = self._writer
        if writer is not None and writer.pid == os.getpid():
            return writer
        if writer is not None:  # inherited across fork: never share open file descriptions
            writer.forget()
        opened: list[int] = []
        try:  # nothing is written yet: an immutable, read-only or full store fails here
            try:
                opened.append(os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600))
            except FileNotFoundError:  # the session folder is new
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                opened.append(os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600))
            opened.append(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600))
            opened.append(os.open(self.head_path, os.O_RDWR | os.O_CREAT, 0o600))
        except OSError as err:
            for fd in opened:
                os.close(fd)
            raise unwritable_error(err.filename or self.path, err, "open for writing") from err
        lock_fd, ledger_fd, anchor_fd = opened
        writer = WriterHandles(lock_fd, ledger_fd, anchor_fd, self.head_path)
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
            raw = self.head_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:  # there, but not readable: no verdict on what it says
            raise unreadable_error(self.head_path, err) from err
        try:
            data = json.loads(raw)
            return int(data["seq"]), str(data["head"])
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
            write_all(fd, json.dumps(record).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ verification

    def verify(self) -> VerifyReport:
        """Schema validity, gapless seq, batches, hash chain, head anchor and torn tail."""
        # The anchor never runs ahead of the ledger: read it before the lines, and again after
        # them to be sure no append (which rewrites it) ran in between.
        if not self._present():
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

    def _present(self) -> bool:
        """Whether the ledger file is there (missing: an integrity problem for ``verify``);
        something there that cannot be read is reported when it is read (exit 6)."""
        try:
            os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as err:  # a folder on the way that cannot be searched
            raise unreadable_error(self.path, err) from err
        return True

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
            fd, anchor_fd = self._open_for_repair()
            try:
                size = os.fstat(fd).st_size
                cut = None
                if cut_seq is not None:
                    cut = offset_of_seq(os.pread(fd, size, 0), cut_seq)
                tail = tail_of_fd_lenient(fd, self.session_id, cut)
                start = tail.size
                moved = os.pread(fd, size - start, start) if start < size else b""
                if moved:
                    try:
                        self._quarantine(TornTail(start, moved))
                    except OSError as err:  # the ledger is untouched yet
                        raise unwritable_error(self.quarantine_path, err, "append to") from err
                    os.ftruncate(fd, start)
                    os.fsync(fd)
                old_seq = anchor[0] if anchor is not None else 0
                write_anchor_fd(anchor_fd, tail.last_seq, tail.head)
                os.fsync(anchor_fd)
            finally:
                os.close(fd)
                os.close(anchor_fd)
        self.close()  # the writer's cached tail and anchor mapping are stale now
        accepted = (old_seq + 1, tail.last_seq) if 0 <= old_seq < tail.last_seq else None
        missing = (tail.last_seq + 1, old_seq) if old_seq > tail.last_seq else None
        return Repair(moved=moved, last_seq=tail.last_seq, accepted=accepted, missing=missing)

    def _open_for_repair(self) -> tuple[int, int]:
        """The ledger and its anchor, both opened for writing before anything is moved: a
        store that cannot be written refuses the repair with nothing changed."""
        opened: list[int] = []
        try:
            opened.append(os.open(self.path, os.O_RDWR))
            opened.append(os.open(self.head_path, os.O_RDWR | os.O_CREAT, 0o600))
        except OSError as err:
            for fd in opened:
                os.close(fd)
            raise unwritable_error(err.filename or self.path, err, "open for writing") from err
        return opened[0], opened[1]
