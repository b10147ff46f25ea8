"""Helpers for the Memory registry's and Memory's decisions' tests (helper A's files).

- registry entries built as the planners build them, stamped without a ledger (:func:`stamped`),
  for the pure fold tests;
- a :class:`MemoryRegistry` on the in-memory or the filesystem store (:func:`registry_on`);
- :class:`Session`: a real session driven through the Workflow Kernel on the in-memory store
  (clarify, retract, reopen, promote or decline, apply a memory in F2), so the candidates and
  the recall plan are computed from a ledger the kernel itself wrote.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel import events as ev
from kernel.clock import FixedClock, SeededIds, format_ts
from kernel.fold import SessionState
from kernel.ledger_verify import genesis_hash
from kernel.memory_events import (
    MemoryForgottenPayload,
    MemorySavedPayload,
    MemorySource,
    MemorySupersededPayload,
)
from kernel.outcomes import ModuleOutcome, ReviewRequest
from kernel.store.fs import FileSystemStore
from kernel.store.memory import MemoryStore
from kernel.workflow_kernel import WorkflowKernel
from modules.memory import MemoryCapabilities, MemoryRegistry, memory_id
from tests.support.kernel_env import admitted_session, advance_to

ANA = "human:ana"
CLOCK = FixedClock()

# --------------------------------------------------------------------------- registry entries


def saved(
    subject: str,
    meaning: str,
    target: str | None = None,
    *,
    session: str = "S1",
    seq: int = 5,
    reviewer: str = ANA,
    actor: str | None = None,
    forged_id: str | None = None,
) -> ev.EventDraft:
    return ev.EventDraft(
        type="memory_saved",
        actor=actor or reviewer,
        subject=subject,
        payload=MemorySavedPayload(
            memory_id=forged_id or memory_id(subject, target, meaning),
            subject=subject,
            meaning=meaning,
            target=target,
            source=MemorySource(session=session, seq=seq),
            reviewer=reviewer,
        ),
    )


def superseded(older: str, by: str, *, actor: str = ANA) -> ev.EventDraft:
    return ev.EventDraft(
        type="memory_superseded",
        actor=actor,
        payload=MemorySupersededPayload(memory_id=older, by=by),
    )


def forgotten(mid: str, *, reason: str = "wrong", actor: str = ANA) -> ev.EventDraft:
    return ev.EventDraft(
        type="memory_forgotten",
        actor=actor,
        payload=MemoryForgottenPayload(memory_id=mid, reason=reason),
    )


def stamped(drafts: Sequence[ev.EventDraft], *, start: int = 1) -> list[ev.Event]:
    """The drafts as the ledger would write them (one entry per batch), from seq ``start``."""
    ts = format_ts(CLOCK.now())
    return [
        ev.stamp(d, seq=start + i, ts=ts, prev=genesis_hash("workspace-memory"))
        for i, d in enumerate(drafts)
    ]


# --------------------------------------------------------------------------- the registry


def make_store(kind: str, tmp_path: Path) -> MemoryStore | FileSystemStore:
    if kind == "memory":
        return MemoryStore()
    return FileSystemStore(tmp_path / "sessions", tmp_path / ".tht" / "cache")


def registry_on(store: MemoryStore | FileSystemStore, **extra: Any) -> MemoryRegistry:
    caps = MemoryCapabilities(
        ledger=store.workspace_ledger("memory"),
        clock=FixedClock(),
        read_cache=lambda: store.read_workspace_cache("memory"),
        write_cache=lambda data: store.write_workspace_cache("memory", data),
        **extra,
    )
    return MemoryRegistry(caps)


# --------------------------------------------------------------------------- sessions


def proposed(type_: str, subject: str | None = None, **payload: object) -> ev.ProposedEvent:
    return ev.ProposedEvent(type=type_, subject=subject, payload=dict(payload))


_WORKFLOW_CACHE: list[Path] = []


def _workflow_cache() -> Path:
    """One compiled-workflow cache for the whole run: without it every kernel load parses
    workflow.yaml again (most of a property test's time)."""
    if not _WORKFLOW_CACHE:
        folder = Path(tempfile.mkdtemp(prefix="tht-memory-workflow-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _WORKFLOW_CACHE.append(folder)
    return _WORKFLOW_CACHE[0]


class Session:
    """One session on its own in-memory store, driven the way an agent and a reviewer would."""

    def __init__(self, question: str = "How many ablations were performed in 2023?") -> None:
        self.kernel = WorkflowKernel(
            MemoryStore(), clock=FixedClock(), ids=SeededIds(3), workflow_cache=_workflow_cache()
        )
        self.id = admitted_session(self.kernel, question)

    @property
    def state(self) -> SessionState:
        return self.kernel.load(self.id).state

    def decide(self, stage: str, *events: ev.ProposedEvent) -> list[int]:
        """The agent proposes ``events`` (one option each); the reviewer chooses them all.
        The seqs of the recorded decisions, in order."""
        review = ReviewRequest(
            kind="decide",
            prompt=f"{stage}: choose",
            options=tuple(
                ev.ReviewOptionPayload(id=f"o{i}", label=f"option {i}", events=(e,))
                for i, e in enumerate(events)
            ),
        )
        asked = self.kernel.apply_outcome(
            self.id, stage, ModuleOutcome(status="awaiting_review", review=review), actor="agent"
        )
        answered = self.kernel.answer(
            self.id,
            asked.events[-1].seq,
            actor=ANA,
            choose=tuple(f"o{i}" for i in range(len(events))),
        )
        return [e.seq for e in answered.events if not isinstance(e, ev.ReviewAnswered)]

    def clarify(self, subject: str | None, meaning: str, target: str | None = None) -> int:
        payload: dict[str, object] = {"meaning": meaning}
        if target is not None:
            payload["target"] = target
        (seq,) = self.decide("disambiguation", proposed("concept_clarified", subject, **payload))
        return seq

    def retract(self, seq: int) -> None:
        self.kernel.retract(self.id, seq, actor=ANA, reason="not what was meant")

    def close(self, stage: str) -> None:
        review = ReviewRequest(kind="confirm", prompt=f"Close {stage}?")
        asked = self.kernel.apply_outcome(
            self.id, stage, ModuleOutcome(status="awaiting_review", review=review), actor="agent"
        )
        self.kernel.answer(self.id, asked.events[-1].seq, actor=ANA, approve=True)

    def reopen(self, stage: str) -> None:
        self.kernel.reopen(self.id, stage, actor=ANA, reason="again")

    def skip(self, stage: str) -> None:
        self.kernel.skip(self.id, stage, actor=ANA, reason="not needed")

    def advance_to(self, stage: str) -> None:
        advance_to(self.kernel, self.id, stage)

    def run_module(self, stage: str, outcome: ModuleOutcome) -> int | None:
        """Memory's own run of ``stage`` (``module:memory``): the seq of the review it asked,
        None when the outcome completed the stage by itself."""
        applied = self.kernel.apply_outcome(self.id, stage, outcome, actor="module:memory")
        for event in applied.events:
            if isinstance(event, ev.ReviewRequested):
                return event.seq
        return None

    def answer(self, seq: int, *choose: str) -> list[ev.Event]:
        return self.kernel.answer(self.id, seq, actor=ANA, choose=choose).events
