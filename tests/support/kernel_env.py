"""A real kernel on a temporary folder, for the invariant, crash, concurrency and tamper tests.

Everything here goes through the kernel's public API (``WorkflowKernel`` over a
``FileSystemStore``) with the deterministic clock and ids, so ledgers are byte-stable.
"""

from __future__ import annotations

from pathlib import Path

from kernel.clock import FixedClock, SeededIds
from kernel.events import ProposedEvent
from kernel.outcomes import ModuleOutcome, ReviewRequest
from kernel.store.fs import FileSystemStore
from kernel.workflow_kernel import WorkflowKernel

__all__ = [
    "QUESTION",
    "admitted_session",
    "advance_to",
    "make_kernel",
    "receipt_outcome",
    "session_dir",
]

QUESTION = "How many schools are there in Alameda county?"


def make_kernel(
    root: Path,
    *,
    seed: int = 1,
    clock: FixedClock | None = None,
    workflow_cache: Path | None = None,
) -> WorkflowKernel:
    """A kernel whose sessions live under ``root/sessions`` and caches under ``root/.tht``
    (``workflow_cache`` may point elsewhere, to share the compiled workflow between kernels)."""
    store = FileSystemStore(root / "sessions", root / ".tht" / "cache")
    return WorkflowKernel(
        store,
        clock=clock or FixedClock(),
        ids=SeededIds(seed),
        workflow_cache=workflow_cache or root / ".tht" / "cache",
    )


def admitted_session(kernel: WorkflowKernel, question: str = QUESTION) -> str:
    """Create a session and complete its admission the way Question Admission does."""
    created = kernel.create_session(question, actor="agent")
    kernel.apply_outcome(
        created.session,
        "admission",
        ModuleOutcome(
            status="completed",
            events=(ProposedEvent(type="question_admitted", payload={"checks": ["usable"]}),),
        ),
        actor="module:disambiguation",
    )
    return created.session


def advance_to(kernel: WorkflowKernel, session: str, target: str) -> None:
    """Close every stage before ``target`` the shortest legal way: skip it where a human may,
    else propose a confirm review and approve it (automatic stages complete on an empty auto)."""
    while True:
        state = kernel.load(session).state
        stage = state.current_stage
        if stage is None or stage == target:
            return
        step = kernel.session_workflow(session).step(stage)
        if step.skip == "human":
            kernel.skip(session, stage, actor="human:tester", reason="not needed here")
        elif step.completion == "automatic":
            kernel.apply_outcome(session, stage, ModuleOutcome(status="completed"), actor="agent")
        else:
            review = kernel.apply_outcome(
                session,
                stage,
                ModuleOutcome(
                    status="awaiting_review",
                    review=ReviewRequest(kind="confirm", prompt=f"Approve {stage}?"),
                ),
                actor="agent",
            )
            kernel.answer(session, review.events[-1].seq, actor="human:tester", approve=True)


def receipt_outcome(*subjects: str, returned: int = 2) -> ModuleOutcome:
    """Receipts (``evidence_consulted``) are accepted in any open stage without review: the
    cheapest well-formed outcome to append many times."""
    return ModuleOutcome(
        status="applied",
        events=tuple(
            ProposedEvent(
                type="evidence_consulted",
                subject=subject,
                payload={
                    "purpose": "disambiguation",
                    "generation": "g1",
                    "returned": [f"evidence:{subject}-{i}" for i in range(returned)],
                },
            )
            for subject in subjects
        ),
    )


def session_dir(root: Path, session: str) -> Path:
    return root / "sessions" / session
