"""The Memory registry's fold: registry entries → :class:`MemoryState`. Pure and total.

``fold_registry(events)`` folds a whole registry; ``fold_registry_from(state, events)``
continues from a folded state, and ``fold_registry(a + b) == fold_registry_from(
fold_registry(a), b)`` at every split (a property test holds it to that), so a cached state
(keyed by ``(last_seq, head)``) costs time proportional to the new entries only.

The fold never raises on a bad entry: it records a :class:`FoldProblem` with the entry's seq
and ignores the entry (``tht memory verify`` reports them; no write is accepted on a registry
that has any). Refused:

- an entry that is not a Memory registry entry (a session event, a catalog entry) — ``not_memory``;
- ``memory_saved`` whose ``memory_id`` is not :func:`memory_id` (subject, target, meaning) — a
  forged id, ``forged_id``; whose actor is not a human or not the reviewer it names — ``actor``;
  of a memory that is already live — ``duplicate`` (the registry's writer never saves one twice;
  saving a superseded or forgotten memory again revives it, its history keeps both);
- ``memory_superseded`` of an unknown or no longer live memory, by an unknown, not live or
  unrelated one (another subject or target), or by itself — ``supersede``;
- ``memory_forgotten`` of an unknown or already forgotten memory, or recorded by anyone but a
  human — ``forget`` / ``actor``;
- ``solved_question_saved`` whose ``solved_id`` is not :func:`solved_id` (its session) —
  ``forged_id``; whose ``sql_sha256`` is not the SHA-256 of its SQL — ``sql_sha256``; of a
  session already saved — ``duplicate``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import msgspec

from kernel import events as ev
from kernel.memory_events import (
    MemoryForgotten,
    MemorySaved,
    MemorySuperseded,
    SolvedQuestionSaved,
)
from kernel.signature_rules import is_human_actor
from modules.memory.keys import memory_id, solved_id, subject_key, subject_target_key
from modules.memory.records import FoldProblem, MemoryRecord, MemoryState, SolvedQuestion

__all__ = ["fold_registry", "fold_registry_from", "sql_sha256"]


def sql_sha256(sql: str) -> str:
    """The SHA-256 a ``solved_question_saved`` records for its SQL (of its UTF-8 bytes)."""
    return hashlib.sha256(sql.encode("utf-8", errors="surrogatepass")).hexdigest()


def fold_registry(events: Iterable[ev.Event]) -> MemoryState:
    return fold_registry_from(MemoryState(), events)


def fold_registry_from(state: MemoryState, events: Iterable[ev.Event]) -> MemoryState:
    folder = _Folder(state)
    for event in events:
        folder.apply(event)
    return folder.freeze()


class _Reject(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Folder:
    def __init__(self, state: MemoryState) -> None:
        self.last_seq = state.last_seq
        self.memories = dict(state.memories)
        self.solved = dict(state.solved)
        self.problems = list(state.problems)
        self.by_subject = dict(state.by_subject)
        self.handlers: dict[type[ev.Event], Callable[[ev.Event], None]] = {
            MemorySaved: self._saved,
            MemorySuperseded: self._superseded,
            MemoryForgotten: self._forgotten,
            SolvedQuestionSaved: self._solved,
            ev.LedgerRepaired: self._repaired,
        }

    def apply(self, event: ev.Event) -> None:
        self.last_seq = event.seq
        handler = self.handlers.get(type(event))
        try:
            if handler is None:
                kind = ev.info_of(event).type
                raise _Reject("not_memory", f"{kind} does not belong in the memory registry")
            handler(event)
        except _Reject as rejected:
            self.problems.append(
                FoldProblem(seq=event.seq, code=rejected.code, message=rejected.message)
            )

    def freeze(self) -> MemoryState:
        return MemoryState(
            last_seq=self.last_seq,
            memories=self.memories,
            solved=self.solved,
            problems=tuple(self.problems),
            by_subject=self.by_subject,
        )

    # ------------------------------------------------------------------ memories

    def _saved(self, event: ev.Event) -> None:
        assert isinstance(event, MemorySaved)
        p = event.payload
        expected = memory_id(p.subject, p.target, p.meaning)
        if p.memory_id != expected:
            raise _Reject(
                "forged_id",
                f"memory_saved {p.memory_id} is not the id of its subject, target and meaning "
                f"({expected})",
            )
        if not is_human_actor(event.actor) or event.actor != p.reviewer:
            raise _Reject(
                "actor",
                f"memory_saved {p.memory_id} names reviewer {p.reviewer} but was recorded by "
                f"{event.actor}; a memory is saved by the human who promoted it",
            )
        before = self.memories.get(p.memory_id)
        if before is not None and before.status == "live":
            raise _Reject("duplicate", f"memory {p.memory_id} is already live")
        self.memories[p.memory_id] = MemoryRecord(
            memory_id=p.memory_id,
            subject=p.subject,
            meaning=p.meaning,
            target=p.target,
            rationale=p.rationale,
            language=p.language,
            decision=p.decision,
            source_session=p.source.session,
            source_seq=p.source.seq,
            reviewer=p.reviewer,
            saved_seq=event.seq,
            saved_at=event.ts,
            history=(*(before.history if before is not None else ()), event.seq),
        )
        if before is None:
            subject = subject_key(p.subject)
            self.by_subject[subject] = (*self.by_subject.get(subject, ()), p.memory_id)

    def _superseded(self, event: ev.Event) -> None:
        assert isinstance(event, MemorySuperseded)
        p = event.payload
        if not is_human_actor(event.actor):
            raise _Reject("actor", f"memory_superseded recorded by {event.actor}, not a human")
        older, newer = self.memories.get(p.memory_id), self.memories.get(p.by)
        if older is None or older.status != "live":
            was = "unknown" if older is None else older.status
            raise _Reject("supersede", f"memory {p.memory_id} is {was}, not live")
        if p.by == p.memory_id:
            raise _Reject("supersede", f"memory {p.memory_id} cannot supersede itself")
        if newer is None or newer.status != "live":
            was = "unknown" if newer is None else newer.status
            raise _Reject("supersede", f"memory {p.memory_id} superseded by {p.by}, {was}")
        if subject_target_key(older.subject, older.target) != subject_target_key(
            newer.subject, newer.target
        ):
            raise _Reject(
                "supersede",
                f"memory {p.by} is about another subject or target than {p.memory_id}",
            )
        self.memories[p.memory_id] = msgspec.structs.replace(
            older,
            status="superseded",
            superseded_by=p.by,
            history=(*older.history, event.seq),
        )

    def _forgotten(self, event: ev.Event) -> None:
        assert isinstance(event, MemoryForgotten)
        p = event.payload
        if not is_human_actor(event.actor):
            raise _Reject("actor", f"memory_forgotten recorded by {event.actor}, not a human")
        found = self.memories.get(p.memory_id)
        if found is None or found.status == "forgotten":
            state = "unknown" if found is None else "already forgotten"
            raise _Reject("forget", f"memory {p.memory_id} is {state}")
        self.memories[p.memory_id] = msgspec.structs.replace(
            found,
            status="forgotten",
            forgotten_reason=p.reason,
            forgotten_by=event.actor,
            history=(*found.history, event.seq),
        )

    # ------------------------------------------------------------------ solved questions

    def _solved(self, event: ev.Event) -> None:
        assert isinstance(event, SolvedQuestionSaved)
        p = event.payload
        expected = solved_id(p.source.session)
        if p.solved_id != expected:
            raise _Reject(
                "forged_id",
                f"solved_question_saved {p.solved_id} is not the id of session "
                f"{p.source.session} ({expected})",
            )
        if p.sql_sha256 != sql_sha256(p.sql):
            raise _Reject("sql_sha256", f"solved question {p.solved_id}: its SQL hash differs")
        if p.solved_id in self.solved:
            raise _Reject("duplicate", f"solved question {p.solved_id} is already saved")
        self.solved[p.solved_id] = SolvedQuestion(
            solved_id=p.solved_id,
            question=p.question,
            rewritten=p.rewritten,
            sql=p.sql,
            sql_sha256=p.sql_sha256,
            evidence=p.evidence,
            tables=p.tables,
            result_sha256=p.result_sha256,
            language=p.language,
            source_session=p.source.session,
            source_seq=p.source.seq,
            saved_seq=event.seq,
            saved_at=event.ts,
        )

    def _repaired(self, event: ev.Event) -> None:
        """The explicit human repair (``tht ledger verify --repair`` of the registry): it
        changes no memory; the lines it quarantined are no longer in the ledger."""
        if not is_human_actor(event.actor):
            raise _Reject("actor", f"ledger_repaired recorded by {event.actor}, not a human")
