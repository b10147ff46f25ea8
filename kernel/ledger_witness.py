"""A workspace-level ledger's witness: the longest history of it this workspace's tht has verified
— a rollback tripwire for the reviewer registry, the Memory registry and the Metadata Catalog
(docs/security.md, "roll a ledger back").

A prefix of a valid ledger is a valid ledger: cut the last lines off ``reviewers/ledger.jsonl``
and rewrite its anchor, and the registry verifies — with a revoked key active again. The same
cut undoes a forgotten memory or a Sensitive Data Flag. A session has its signed checkpoint to
give such a rollback away (:mod:`kernel.session_checkpoints`); a workspace-level ledger has this:
after every verification that passed and every append, tht records the ledger's last
``(seq, line hash)`` and where the line ends (the store's ``hint``) in
``.tht/witness/<name>.json``. A ledger that later ends before that seq, or holds another line
there, is ``rolled_back``: every command that decides on it refuses (exit 7) until a human
restores the lines from a backup or accepts the loss (``--accept-rollback``).

The witness is not signed, and need not be: it only ever makes tht *refuse*. A forged one is a
false alarm, which an agent able to write the workspace can cause anyway (availability is not
protected). What it cannot do is vouch for anything. It is a tripwire, not a boundary: an agent
that deletes the witness, or puts back an older one, is not seen; neither is a copy of the
whole workspace, ``.tht/`` included, put back from a backup.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from kernel.atomic import atomic_write
from kernel.errors import IntegrityError, ThtError
from kernel.ledger_records import AppendResult, LedgerRead, LedgerTail, Repair, Signer
from kernel.ledger_verify import Problem, VerifyReport, line_hash

if TYPE_CHECKING:
    from kernel.clock import Clock
    from kernel.events import Event, EventDraft
    from kernel.store.base import LedgerPort

__all__ = ["LedgerWitness", "WitnessFile", "WitnessedLedger", "witness_problem"]

_VERSION = 1
#: a witness file is a few hundred bytes; anything larger is not one
_MAX_BYTES = 4096


class LedgerWitness(msgspec.Struct, frozen=True, kw_only=True):
    version: int = _VERSION
    ledger: str  # the ledger's id (its genesis): a witness of another ledger is ignored
    seq: int
    head: str  # the SHA-256 of line ``seq``
    hint: int  # where line ``seq`` ends, for the store (opaque)


_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder(LedgerWitness)


def witness_problem(
    witness: LedgerWitness,
    last_seq: int,
    head_at: Callable[[int, int], str | None],
    *,
    label: str,
    remedy: str,
) -> Problem | None:
    """``rolled_back`` when the ledger (ending at ``last_seq``) does not hold the witnessed line
    at the witnessed seq — it ends before it, or its line there is another one — else None.
    ``head_at(seq, hint)``: the hash of the ledger's line ``seq`` (None: it has none there);
    ``label`` names the ledger in the message, ``remedy`` says how a human accepts the loss."""
    if witness.seq <= 0:
        return None
    if last_seq < witness.seq:
        what = f"{label} ends at seq {last_seq}"
    else:
        if head_at(witness.seq, witness.hint) == witness.head:
            return None
        what = f"{label}'s line {witness.seq} is another one"
    return Problem(
        "rolled_back",
        f"{what}, but this workspace's tht verified it up to seq {witness.seq} (line "
        f"{witness.head[:12]}): lines were removed from its end, or it was replaced by another "
        f"history (a rollback). Restore it from a backup, or accept the loss with `{remedy}`",
        seq=min(last_seq, witness.seq) or None,
    )


class WitnessFile:
    """The witness of ledger ``ledger`` (its id) at ``path``."""

    def __init__(self, path: Path, ledger: str) -> None:
        self.path = path
        self.ledger = ledger

    def read(self) -> LedgerWitness | None:
        """The witness, or None: none written yet, unreadable, malformed, of another ledger. A
        witness only makes tht refuse, so one that cannot be read is as good as none."""
        try:
            with self.path.open("rb") as fh:
                data = fh.read(_MAX_BYTES + 1)
        except OSError:
            return None
        if len(data) > _MAX_BYTES:
            return None
        try:
            found = _DEC.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if found.version != _VERSION or found.ledger != self.ledger:
            return None
        return found

    def clear(self) -> None:
        """No witness any more (a human accepted a ledger that has no line left)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def record(self, seq: int, head: str, hint: int, *, reset: bool = False) -> None:
        """Record ``(seq, head, hint)``, the end of a ledger just verified or appended to. Only
        forward: a witness further along is kept (a concurrent command saw more), unless
        ``reset`` (a human accepted a rollback, or repaired the ledger). Best-effort: a witness
        that cannot be written costs the tripwire, never the command."""
        current = self.read()
        if current is not None and not reset:
            if (current.seq, current.head, current.hint) == (seq, head, hint):
                return
            if current.seq > seq:
                return
        data = _ENC.encode(LedgerWitness(ledger=self.ledger, seq=seq, head=head, hint=hint))
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write(self.path, data + b"\n", durable=False, mode=0o600)


class WitnessedLedger:
    """A workspace-level ledger (any :class:`~kernel.store.base.LedgerPort`) with its witness:
    :meth:`verify` reports the rollback the witness gives away (``rolled_back``) and, when the
    ledger verifies, moves the witness to its end; :meth:`append` moves it past the batch;
    :meth:`tail` refuses a ledger that ends before it (a deleted or cut ledger would otherwise
    read as a new, empty one); :meth:`repair` — a human's, recorded — resets it. Everything
    else is the ledger's own."""

    def __init__(self, inner: LedgerPort, witness: WitnessFile, *, label: str, remedy: str):
        self.inner = inner
        self.witness = witness
        self.label = label
        self.remedy = remedy

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    def problem(self, last_seq: int) -> Problem | None:
        """The rollback this ledger (ending at ``last_seq``) is, by its witness, or None."""
        found = self.witness.read()
        if found is None:
            return None
        return witness_problem(found, last_seq, self._head_at, label=self.label, remedy=self.remedy)

    def _head_at(self, seq: int, hint: int) -> str | None:
        line = self.inner.line_at(seq, hint)
        if line is not None:
            return line_hash(line)
        # not where the witness says it ends (a ledger migrated to another store, whose hints
        # differ, or another history): by seq, from the next line's ``prev``
        try:
            read = self.inner.read()
        except ThtError:  # a line that does not decode: not the witnessed history either
            return None
        events = read.events
        if len(events) == seq and events[-1].seq == seq:
            return read.head
        if len(events) > seq and events[seq].seq == seq + 1:
            return events[seq].prev
        return None

    def record(self, *, reset: bool = False) -> None:
        """Move the witness to the ledger's end (``reset``: also backwards, and away when the
        ledger has no line left)."""
        tail = self.inner.tail()
        if tail.torn is None and tail.last_seq > 0:
            self.witness.record(tail.last_seq, tail.head, tail.hint, reset=reset)
        elif reset and tail.last_seq == 0:
            self.witness.clear()

    # ------------------------------------------------------------------ the port

    def exists(self) -> bool:
        return self.inner.exists()

    def read(self, *, upto: int | None = None) -> LedgerRead:
        return self.inner.read(upto=upto)

    def read_after(self, seq: int, hint: int) -> LedgerRead:
        return self.inner.read_after(seq, hint)

    def tail(self) -> LedgerTail:
        tail = self.inner.tail()
        found = self.witness.read()
        if found is not None and tail.last_seq < found.seq:
            problem = self.problem(tail.last_seq)
            if problem is not None:
                raise IntegrityError(
                    f"{problem.code}: {problem.message}",
                    details={"problems": [problem.to_json()]},
                )
        return tail

    def line_at(self, seq: int, hint: int) -> bytes | None:
        return self.inner.line_at(seq, hint)

    def lines_after(self, seq: int, hint: int) -> list[bytes] | None:
        return self.inner.lines_after(seq, hint)

    def first_event(self) -> Event | None:
        return self.inner.first_event()

    def read_anchor(self) -> tuple[int, str] | None:
        return self.inner.read_anchor()

    def append(
        self,
        drafts: Sequence[EventDraft],
        *,
        expected_last_seq: int,
        clock: Clock,
        signer: Signer | None = None,
    ) -> AppendResult:
        result = self.inner.append(
            drafts, expected_last_seq=expected_last_seq, clock=clock, signer=signer
        )
        self.record()
        return result

    def append_lines(self, lines: Sequence[bytes], *, expected_last_seq: int) -> AppendResult:
        result = self.inner.append_lines(lines, expected_last_seq=expected_last_seq)
        self.record()
        return result

    def verify(self) -> VerifyReport:
        report = self.inner.verify()
        last_seq = max((e.seq for e in report.decoded if e is not None), default=0)
        problem = self.problem(last_seq)
        if problem is None:
            if report.ok:
                self.record()
            return report
        return dataclasses.replace(report, ok=False, problems=[*report.problems, problem])

    def repair(self, *, cut_seq: int | None = None) -> Repair:
        done = self.inner.repair(cut_seq=cut_seq)
        self.record(reset=True)  # the human's repair, recorded as ledger_repaired, accepts it
        return done

    def close(self) -> None:
        self.inner.close()
