"""Ledger verification — a pure function of a ledger's bytes and its head anchor — and the
format primitives it shares with :mod:`kernel.ledger` (genesis hash, line hash).

``tht ledger verify`` reports every problem with the line it concerns: schema validity and
registered version, gapless seq, the first event, batches (``batch_left``), the hash chain, the
head anchor (edited or removed final lines) and a torn tail (the only repairable problem).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import msgspec

from kernel.events import EVENT_TYPES, Event, decode_event, decode_lines, info_of

__all__ = [
    "Problem",
    "VerifyReport",
    "genesis_hash",
    "line_hash",
    "start_of_last_lines",
    "verify_ledger_bytes",
]

_GENESIS_PREFIX = b"tht-ledger-genesis:"


def genesis_hash(session_id: str) -> str:
    """The fixed ``prev`` of a session's first line."""
    return hashlib.sha256(_GENESIS_PREFIX + session_id.encode("utf-8")).hexdigest()


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def start_of_last_lines(complete: bytes, count: int) -> int:
    """The offset where the last ``count`` complete lines of ``complete`` begin."""
    cut = len(complete)
    for _ in range(count):
        cut = complete.rfind(b"\n", 0, cut - 1) + 1
    return cut


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    line: int | None = None
    seq: int | None = None
    repairable: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message": self.message,
            "line": self.line,
            "seq": self.seq,
            "repairable": self.repairable,
        }


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    events: int
    head: str
    problems: list[Problem] = field(default_factory=list)
    repaired: bool = False
    #: the committed events, decoded once (None where a line did not decode); not in the JSON
    decoded: list[Event | None] = field(default_factory=list, repr=False, compare=False)

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "events": self.events,
            "head": self.head,
            "problems": [p.to_json() for p in self.problems],
            "repaired": self.repaired,
        }


def first_types(first_type: str | tuple[str, ...]) -> tuple[str, ...]:
    """A ledger's first-line type(s): one for a session (``session_created``), several for a
    workspace-level ledger whose history may start in more than one way (the Memory registry)."""
    return (first_type,) if isinstance(first_type, str) else first_type


def starts_ledger(event_type: str, first_type: str | tuple[str, ...]) -> bool:
    return event_type in first_types(first_type)


def verify_ledger_bytes(
    session_id: str,
    data: bytes,
    anchor: tuple[int, str] | None,
    *,
    anchor_name: str = "ledger.head",
    first_type: str | tuple[str, ...] = "session_created",
) -> VerifyReport:
    """Verify a ledger's bytes against its anchor (pure: no I/O).

    ``session_id`` is the ledger's id (it seeds the genesis hash); ``first_type`` the type its
    first line must have (``session_created`` for a session, e.g. ``reviewer_added`` for the
    reviewer registry)."""
    problems: list[Problem] = []
    end = data.rfind(b"\n") + 1
    lines = data[:end].split(b"\n")[:-1]
    decoded: list[Event | None]
    try:  # one call for the whole file (the usual case); line by line only when a line is bad
        decoded = list(decode_lines(data[:end]))
    except (msgspec.ValidationError, msgspec.DecodeError):
        decoded = []
        for line in lines:
            try:
                decoded.append(decode_event(line))
            except (msgspec.ValidationError, msgspec.DecodeError):
                decoded.append(None)
    # a final batch cut short (its last line has batch_left > 0) is part of the torn tail
    committed = len(lines)
    while committed and (event := decoded[committed - 1]) is not None and event.batch_left:
        committed -= 1
    if committed < len(lines):
        end = start_of_last_lines(data[:end], len(lines) - committed)
    prev = genesis_hash(session_id)
    count = 0
    pending = 0
    batch_ts = ""
    for index, line in enumerate(lines[:committed], start=1):
        count += 1
        event = decoded[index - 1]
        if event is None:
            try:
                decode_event(line)
            except (msgspec.ValidationError, msgspec.DecodeError) as err:
                problems.append(_schema_problem(line, index, err))
            prev = line_hash(line)
            pending = 0
            continue
        info = info_of(event)
        if event.v != info.version:
            problems.append(
                Problem("unknown_version", f"{info.type} v{event.v} is not registered", index)
            )
        if event.seq != index:
            problems.append(
                Problem("seq", f"expected seq {index}, found {event.seq}", index, event.seq)
            )
        if index == 1 and info.type not in first_types(first_type):
            shown = " or ".join(first_types(first_type))
            problems.append(Problem("first_event", f"the first event is not {shown}", 1))
        if event.prev != prev:
            problems.append(
                Problem(
                    "hash_chain",
                    "prev does not match the previous line (edited, removed or reordered)",
                    index,
                    event.seq,
                )
            )
        if pending and (event.batch_left != pending - 1 or event.ts != batch_ts):
            problems.append(
                Problem(
                    "batch",
                    f"line {index} breaks the batch before it (expected batch_left "
                    f"{pending - 1} at {batch_ts})",
                    index,
                    event.seq,
                )
            )
        pending = event.batch_left
        batch_ts = event.ts
        prev = line_hash(line)
    if end < len(data):
        whole = len(lines) - committed
        what = f"{whole} line(s) of an unfinished batch and " if whole else ""
        problems.append(
            Problem(
                "torn_tail",
                f"{len(data) - end} bytes after the last complete batch "
                f"({what}an interrupted write)",
                count + 1,
                repairable=True,
            )
        )
    if count == 0:
        problems.append(Problem("empty", "the ledger has no events (emptied or never written)"))
    elif anchor is None:
        problems.append(
            Problem(
                "head_anchor",
                f"{anchor_name} is missing: the last acknowledged head cannot be checked",
                repairable=True,
            )
        )
    else:
        problems.extend(_check_anchor(anchor, data[:end], count, anchor_name))
    return VerifyReport(
        ok=not problems,
        events=count,
        head=prev,
        problems=problems,
        decoded=decoded[:committed],
    )


def _check_anchor(
    anchor: tuple[int, str], complete: bytes, count: int, anchor_name: str
) -> list[Problem]:
    seq, head = anchor
    if seq < 0:
        return [Problem("head_anchor", f"{anchor_name} is unreadable")]
    if seq < count:
        return [
            Problem(
                "unanchored",
                f"lines {seq + 1}..{count} were written after the last acknowledged head (seq "
                f"{seq}): a machine crash before the anchor reached the disk, or lines added "
                "behind tht's back; a human accepts or quarantines them with --repair",
                seq + 1,
                seq + 1,
                repairable=True,
            )
        ]
    if seq == 0:
        return []
    if seq > count:
        return [
            Problem(
                "head_anchor",
                f"ledger ends at seq {count} but seq {seq} was acknowledged (lines removed)",
                count + 1,  # the first missing line
                seq,
            )
        ]
    lines = complete.split(b"\n")
    if line_hash(lines[seq - 1]) != head:
        return [
            Problem(
                "head_anchor",
                f"line {seq} differs from the acknowledged head (edited)",
                seq,
                seq,
            )
        ]
    return []


def _schema_problem(line: bytes, index: int, err: Exception) -> Problem:
    try:
        raw = json.loads(line)
        kind = raw.get("type") if isinstance(raw, dict) else None
    except ValueError:
        return Problem("json", f"not JSON: {err}", index)
    if isinstance(kind, str) and kind not in EVENT_TYPES:
        return Problem("unknown_type", f"unknown event type {kind!r}", index)
    return Problem("schema", f"does not match its schema: {err}", index)
