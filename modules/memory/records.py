"""The Memory registry's folded records (ARCHITECTURE §4.3): plain, frozen data.

- :class:`MemoryRecord` — one memory: a clarification a reviewer promoted (subject, meaning,
  target, rationale, language), where it came from (session, seq, reviewer) and what happened
  to it since: ``live``, ``superseded`` by a newer memory for the same subject and target, or
  ``forgotten`` by a human. Nothing is deleted: ``history`` lists every registry seq that
  touched it (a forgotten memory saved again is live again, and its history shows both).
- :class:`SolvedQuestion` — a finalized session's question, rewritten question, final SQL,
  evidence, tables and result hash.
- :class:`MemoryState` — the whole fold; ``problems`` are the registry entries the fold
  refused (``tht memory verify`` reports them; no write is accepted while there are any).

Records hold only strings, numbers and tuples, never a cycle (``gc=False``, as the catalog's).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from modules.memory.keys import memory_id_for_key, memory_key, normalize_text, subject_key

__all__ = ["FoldProblem", "MemoryRecord", "MemoryState", "MemoryStatus", "SolvedQuestion"]

MemoryStatus = Literal["live", "superseded", "forgotten"]


class MemoryRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    memory_id: str
    subject: str
    meaning: str
    #: the column (``table.column``), table or value (``table.column=value``) it points at
    target: str | None = None
    rationale: str = ""
    language: str = ""
    #: the reusable session decision type it came from (kernel.memory_events.MEMORY_CONTRACT)
    decision: str = "concept_clarified"
    source_session: str
    source_seq: int
    reviewer: str
    #: the registry seq and time of its (latest) memory_saved
    saved_seq: int
    saved_at: str
    status: MemoryStatus = "live"
    superseded_by: str | None = None
    forgotten_reason: str = ""
    forgotten_by: str = ""
    #: every registry seq that saved, superseded or forgot it, in order
    history: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        """Its :func:`~modules.memory.keys.memory_key`."""
        return memory_key(self.subject, self.target, self.meaning)

    @property
    def live(self) -> bool:
        return self.status == "live"

    @property
    def provenance(self) -> str:
        """Where it came from, as a reviewer reads it."""
        return (
            f"from session {self.source_session} seq {self.source_seq}, promoted by {self.reviewer}"
        )


class SolvedQuestion(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    solved_id: str
    question: str
    rewritten: str = ""
    sql: str
    sql_sha256: str
    evidence: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    result_sha256: str = ""
    language: str = ""
    source_session: str
    #: the finalized session's ``session_finalized`` seq
    source_seq: int
    saved_seq: int
    saved_at: str


class FoldProblem(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    code: str
    message: str


class MemoryState(msgspec.Struct, frozen=True, kw_only=True):
    last_seq: int = 0
    memories: dict[str, MemoryRecord] = msgspec.field(default_factory=dict)
    solved: dict[str, SolvedQuestion] = msgspec.field(default_factory=dict)
    problems: tuple[FoldProblem, ...] = ()
    #: :func:`~modules.memory.keys.subject_key` → the ids of every memory about that subject,
    #: in the order they were first saved (an index the fold keeps: supersession and
    #: contradictions look up one subject, never scan the registry)
    by_subject: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)

    def live(self) -> list[MemoryRecord]:
        """The live memories, oldest save first."""
        return sorted(
            (m for m in self.memories.values() if m.status == "live"),
            key=lambda m: (m.saved_seq, m.memory_id),
        )

    def memory(self, memory_id: str) -> MemoryRecord | None:
        return self.memories.get(memory_id)

    def live_key(self, key: str) -> MemoryRecord | None:
        """The live memory whose :func:`~modules.memory.keys.memory_key` is ``key``."""
        # the id is the key's digest, so the lookup is direct; the key check guards against a
        # record whose id does not match its content (the fold never admits one)
        found = self.memories.get(memory_id_for_key(key))
        if found is None or found.status != "live" or found.key != key:
            return None
        return found

    def about(self, subject: str) -> list[MemoryRecord]:
        """Every memory about ``subject`` (normalized), whatever its status, first saved first."""
        ids = self.by_subject.get(subject_key(subject), ())
        return [self.memories[i] for i in ids if i in self.memories]

    def contradictions(self) -> list[list[MemoryRecord]]:
        """Groups of two or more live memories with the same subject and different targets:
        explicit, each shown with its provenance, never merged. Groups in order of their
        oldest live memory; the memories of a group oldest first."""
        groups = []
        for ids in self.by_subject.values():
            found = (self.memories.get(i) for i in ids)
            live = [m for m in found if m is not None and m.status == "live"]
            if _contradict(live):
                groups.append(sorted(live, key=lambda m: (m.saved_seq, m.memory_id)))
        return sorted(groups, key=lambda g: (g[0].saved_seq, g[0].memory_id))

    def contradicting(self, memory_id: str) -> list[MemoryRecord]:
        """The other live memories that contradict memory ``memory_id`` (same subject,
        another target), oldest first; [] when it is not live or nothing contradicts it."""
        record = self.memories.get(memory_id)
        if record is None or record.status != "live":
            return []
        target = normalize_text(record.target or "")
        found = [
            other
            for other in self.about(record.subject)
            if other.status == "live" and normalize_text(other.target or "") != target
        ]
        return sorted(found, key=lambda m: (m.saved_seq, m.memory_id))


def _contradict(records: list[MemoryRecord]) -> bool:
    return len({normalize_text(r.target or "") for r in records}) >= 2
