"""Finding a ledger file's end by reading backwards (the committed tail, a torn tail, an
unfinished batch), without reading the whole file on the append path."""

from __future__ import annotations

import os

import msgspec

from kernel.errors import IntegrityError
from kernel.events import Event, decode_event
from kernel.ledger_records import LedgerTail, TornTail
from kernel.ledger_verify import genesis_hash, line_hash

__all__ = ["tail_of_fd", "tail_of_fd_lenient"]

_FIRST_CHUNK = 4096  # reading the tail backwards: most last lines fit in one page
_CHUNK = 65536


def tail_of_fd(fd: int, session_id: str) -> LedgerTail:
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


def tail_of_fd_lenient(fd: int, session_id: str, cut: int | None) -> LedgerTail:
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
