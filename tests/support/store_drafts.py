"""The two event drafts the store suites append: a session's first line and an agent's receipt.

Shared by the store contract suite and the PostgreSQL store tests (one session id for all)."""

from __future__ import annotations

from kernel import events as ev

__all__ = ["SESSION", "created", "receipt"]

SESSION = "01KDVDNA00V3RS3DTR98H6BCFN"


def created(session: str = SESSION) -> ev.EventDraft:
    """``session_created`` of ``session`` (the first line of a session ledger)."""
    return ev.EventDraft(
        type="session_created",
        actor="agent",
        subject=session,
        payload=ev.SessionCreatedPayload(
            question="How many schools?",
            workflow=ev.WorkflowRef(name="analytics-session", version=1, sha256="0" * 64),
        ),
    )


def receipt(subject: str, generation: str = "g1") -> ev.EventDraft:
    """An agent's ``evidence_consulted`` receipt in F1 (any later line)."""
    return ev.EventDraft(
        type="evidence_consulted",
        actor="agent",
        stage="disambiguation",
        subject=subject,
        payload=ev.EvidenceConsultedPayload(purpose="disambiguation", generation=generation),
    )
