"""The Memory registry's entries (ARCHITECTURE §4.3) and the Disambiguation → Memory contract.

The Memory registry is a workspace-level ledger (``store.workspace_ledger("memory")``, §3.5):
the same envelope, hash chain and store as a session, never valid in one. Its entries:

- ``memory_saved``: a clarification a reviewer promoted in F8 — its subject, meaning, target (the
  column, table or value it points at), rationale, language, the session and seq it came from and
  the promoting reviewer. ``memory_id`` is the content identity of (normalized subject, target,
  meaning): the same clarification is never saved twice, and saving it again after it was
  forgotten revives the same id (its history shows both);
- ``memory_superseded``: a newer memory for the same subject and target replaced an older one
  (the older stays visible in history);
- ``memory_forgotten``: a human forgot a memory (reason, actor);
- ``solved_question_saved``: a finalized session's question, rewritten question, final SQL,
  evidence ids, tables and result hash (after finalize, through the outbox).

:data:`MEMORY_CONTRACT` is the Disambiguation → Memory contract (spec 001 §6.3): which session
decisions Memory reuses and which of their fields it reads. Both sides test it
(``tests/contract/test_memory_contract.py``): a change to either is a new contract version.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import msgspec

from kernel.event_base import Event, Payload

__all__ = [
    "MEMORY_CONTRACT",
    "MEMORY_REGISTRY_FIRST_TYPES",
    "MemoryContract",
    "MemoryForgotten",
    "MemoryForgottenPayload",
    "MemorySaved",
    "MemorySavedPayload",
    "MemorySource",
    "MemorySuperseded",
    "MemorySupersededPayload",
    "SolvedQuestionSaved",
    "SolvedQuestionSavedPayload",
]


class MemorySource(Payload, frozen=True, kw_only=True):
    """Where a registry entry came from: a session and the seq of the decision in it."""

    session: str
    seq: int


class MemorySavedPayload(Payload, frozen=True, kw_only=True):
    memory_id: str
    subject: str
    meaning: str
    #: the column (``table.column``), table, or value (``table.column=value``) it points at
    target: str | None = None
    rationale: str = ""
    #: the language the clarification was made in (``it``, ``en``; "" when unknown)
    language: str = ""
    #: the reusable session decision it came from (:data:`MEMORY_CONTRACT`)
    decision: str = "concept_clarified"
    source: MemorySource
    #: the reviewer who promoted it (``human:<id>``)
    reviewer: str


class MemorySupersededPayload(Payload, frozen=True, kw_only=True):
    memory_id: str  # the older memory
    by: str  # the newer memory, for the same subject and target
    reason: str = ""


class MemoryForgottenPayload(Payload, frozen=True, kw_only=True):
    memory_id: str
    reason: str


class SolvedQuestionSavedPayload(Payload, frozen=True, kw_only=True):
    solved_id: str
    question: str
    rewritten: str = ""
    sql: str
    sql_sha256: str
    evidence: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    result_sha256: str = ""
    language: str = ""
    #: the finalized session (``seq``: its ``session_finalized``)
    source: MemorySource


class MemorySaved(Event, tag="memory_saved", frozen=True, kw_only=True):
    payload: MemorySavedPayload


class MemorySuperseded(Event, tag="memory_superseded", frozen=True, kw_only=True):
    payload: MemorySupersededPayload


class MemoryForgotten(Event, tag="memory_forgotten", frozen=True, kw_only=True):
    payload: MemoryForgottenPayload


class SolvedQuestionSaved(Event, tag="solved_question_saved", frozen=True, kw_only=True):
    payload: SolvedQuestionSavedPayload


#: the types a Memory registry's history may start with
MEMORY_REGISTRY_FIRST_TYPES: Final = ("memory_saved", "solved_question_saved")


class MemoryContract(msgspec.Struct, frozen=True, kw_only=True):
    """The Disambiguation → Memory contract: ``reusable`` maps each session decision type Memory
    promotes and recalls to the payload fields it reads; ``envelope`` the envelope fields it
    reads (``subject`` is the clarified concept)."""

    version: int
    reusable: Mapping[str, tuple[str, ...]]
    envelope: tuple[str, ...]


MEMORY_CONTRACT: Final = MemoryContract(
    version=1,
    reusable=MappingProxyType({"concept_clarified": ("meaning", "target")}),
    envelope=("seq", "subject", "stage", "actor"),
)
