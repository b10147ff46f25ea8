"""Resume in F2 and in F8 (spec 003 §14.2): the session is paused while the memory review is
open, resumed later, and the review answered then works as if nothing had happened."""

from __future__ import annotations

from pathlib import Path

from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import H


def test_resume_in_f2(prepared: Prepared, tmp_path: Path) -> None:
    ws = prepared.at_f2.copy(tmp_path / "ws")
    b, review = prepared.b, prepared.recall_review
    assert ws.ok("session", "pause", b, "--as", H)["lifecycle"] == "paused"
    before = ws.session_bytes(b)
    refused = ws.tht(
        "review", "answer", str(review), b, "--choose", f"m:{prepared.memory_id}", "--as", H
    )
    assert refused.code == 5 and "paused" in refused.stderr
    assert ws.session_bytes(b) == before
    assert ws.ok("session", "resume", b, "--as", H)["lifecycle"] == "active"
    assert [r["seq"] for r in ws.ok("review", "list", b)] == [review]  # still open
    body = ws.answer(b, review, "--choose", f"m:{prepared.memory_id}")
    assert body["current_stage"] == "rewriting"
    types = [e["type"] for e in ws.events(b)]
    assert types[-6:] == [
        "session_paused",
        "session_resumed",
        "review_answered",
        "memory_applied",
        "memory_rejected",
        "stage_completed",
    ]
    assert ws.ok("ledger", "verify", b)["ok"] is True


def test_resume_in_f8(prepared: Prepared, tmp_path: Path) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    a, review = prepared.a, prepared.promotion_review
    ws.ok("session", "pause", a, "--as", H)
    status = ws.status(a)
    assert status["lifecycle"] == "paused" and status["current_stage"] == "memory_promotion"
    ws.ok("session", "resume", a, "--as", H)
    preview = ws.ok("memory", "promote", a, "--preview")
    assert [c["seq"] for c in preview["candidates"]] == [prepared.candidate_seq]
    body = ws.answer(a, review, "--choose", f"c{prepared.candidate_seq}")
    assert body["memory"] == {"saved": [prepared.memory_id], "already": []}
    assert body["current_stage"] == "finalize"
    types = [e["type"] for e in ws.events(a)]
    assert types[-5:] == [
        "session_paused",
        "session_resumed",
        "review_answered",
        "memory_promoted",
        "stage_completed",
    ]
    assert [e["type"] for e in ws.registry_events()] == ["memory_saved"]
    assert ws.ok("memory", "verify")["ok"] is True
    assert ws.ok("ledger", "verify", a)["ok"] is True
