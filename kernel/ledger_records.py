"""The records every ledger backend speaks (ARCHITECTURE §3.5), and the one line format they
all write (:func:`stamp_batch`), so a ledger moves between stores byte for byte. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from kernel.errors import ConflictError, IntegrityError
from kernel.events import (
    Event,
    EventDraft,
    LedgerRepairedPayload,
    decode_event,
    encode_event,
    info_of,
    stamp,
)
from kernel.ledger_verify import first_types, line_hash, starts_ledger

__all__ = [
    "TAIL_PROBLEMS",
    "AppendResult",
    "LedgerRead",
    "LedgerTail",
    "Repair",
    "Signer",
    "TornTail",
    "chain_lines",
    "conflict_error",
    "offset_of_seq",
    "repair_cut",
    "repaired_payload",
    "stamp_batch",
]

#: signs a stamped event (signed mode): its ``sig``, or None when the event is not signed
Signer = Callable[[Event], "str | None"]


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


@dataclass(frozen=True)
class Repair:
    moved: bytes  # the bytes moved to quarantine (torn tail and cut lines)
    last_seq: int
    accepted: tuple[int, int] | None  # seqs past the old anchor that were kept
    missing: tuple[int, int] | None  # seqs the old anchor acknowledged that are gone


#: problems at a ledger's end that a repair settles without cutting committed lines
TAIL_PROBLEMS = frozenset({"torn_tail", "unanchored", "head_anchor", "empty", "rolled_back"})


def repair_cut(problems: Sequence[object]) -> int | None:
    """Where an explicit repair cuts: the first line that fails verification (tail problems
    aside), or None when only the end needs settling. Each problem has ``code``, ``seq``,
    ``line`` (kernel/ledger_verify.py ``Problem``)."""
    return min(
        (
            getattr(p, "seq", None) or getattr(p, "line", None) or 1
            for p in problems
            if getattr(p, "code", "") not in TAIL_PROBLEMS
        ),
        default=None,
    )


def repaired_payload(
    reason: str, done: Repair, problems: Sequence[object]
) -> LedgerRepairedPayload:
    """``ledger_repaired``'s payload for a repair ``done`` of a ledger with ``problems``."""
    return LedgerRepairedPayload(
        reason=reason.strip(),
        quarantined_bytes=len(done.moved),
        quarantined_sha256=line_hash(done.moved) if done.moved else None,
        accepted_from=done.accepted[0] if done.accepted else None,
        accepted_to=done.accepted[1] if done.accepted else None,
        missing_from=done.missing[0] if done.missing else None,
        missing_to=done.missing[1] if done.missing else None,
        problems=tuple(f"{getattr(p, 'code', '')}: {getattr(p, 'message', '')}" for p in problems),
    )


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


def chain_lines(
    lines: Sequence[bytes],
    *,
    last_seq: int,
    prev: str,
    ledger: str,
    first_type: str | tuple[str, ...],
) -> tuple[list[Event], str]:
    """Check that already-encoded lines continue a ledger after ``(last_seq, prev)`` exactly as
    ``verify`` would accept them — each decodes to a registered version, seqs follow on, ``prev``
    chains, the first line of a ledger has its ``first_type``, batches are whole (the last line
    ends one) — and return their events and the new head. ``IntegrityError`` names the first
    line that does not; the caller then writes nothing (``LedgerPort.append_lines``: copying a
    ledger between stores verbatim)."""
    events: list[Event] = []
    pending = 0
    batch_ts = ""
    seq = last_seq
    for index, line in enumerate(lines, start=1):
        seq += 1
        where = f"{ledger}: line {index} of the lines to append (seq {seq})"
        if b"\n" in line:
            raise IntegrityError(f"{where} holds a newline (not one line); nothing was appended")
        try:
            event = decode_event(line)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            raise IntegrityError(
                f"{where} is not a valid event ({err}); nothing was appended"
            ) from None
        info = info_of(event)
        problem = None
        if event.v != info.version:
            problem = f"is {info.type} v{event.v}, which is not registered"
        elif event.seq != seq:
            problem = f"has seq {event.seq}: the ledger ends at seq {seq - 1}"
        elif event.prev != prev:
            problem = "does not chain onto the line before it (prev differs)"
        elif seq == 1 and not starts_ledger(info.type, first_type):
            shown = " or ".join(first_types(first_type))
            problem = f"is not {shown}, the first event of this ledger"
        elif pending and (event.batch_left != pending - 1 or event.ts != batch_ts):
            problem = "breaks the batch before it"
        if problem is not None:
            raise IntegrityError(f"{where} {problem}; nothing was appended")
        pending = event.batch_left
        batch_ts = event.ts
        prev = line_hash(line)
        events.append(event)
    if pending:
        raise IntegrityError(
            f"{ledger}: the lines to append end inside a batch ({pending} line(s) of it "
            "missing); nothing was appended"
        )
    return events, prev


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
