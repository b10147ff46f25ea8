"""F8's memory promotion through the CLI (spec 003 §14.2, the Memory rows): candidates
promoted, declined, none (already in memory; no clarification) — and the answers that must
save nothing.

The contribution runs by itself when F8 datamart is skipped (``tht stage skip``); the reviewer
answers its pre-selected checklist with ``tht review answer SEQ --choose …``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import H, Ws, stage_lines


def _types(ws: Ws, session: str, stage: str) -> list[str]:
    import json

    return [json.loads(line)["type"] for line in stage_lines(ws, session, stage)]


def _of_type(ws: Ws, session: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in ws.events(session) if e["type"] == kind]


def test_preview_lists_the_candidate_computed_from_the_ledger(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    before = ws.session_bytes(prepared.a)
    body = ws.ok("memory", "promote", prepared.a, "--preview")
    assert body == {
        "session": prepared.a,
        "candidates": [
            {
                "seq": prepared.candidate_seq,
                "subject": "ablazione",
                "meaning": "procedure.flag_ablazione = 1",
                "target": "procedure",
                "memory_id": prepared.memory_id,
            }
        ],
        "excluded": {},
    }
    human = ws.tht("memory", "promote", prepared.a, "--preview")
    assert human.code == 0
    assert f"seq {prepared.candidate_seq}: ablazione = procedure.flag_ablazione = 1" in human.stdout
    # a preview changes nothing; without --preview the command refuses to promote
    refused = ws.tht("memory", "promote", prepared.a, "--json")
    assert refused.code == 2 and "--preview" in refused.json()["error"]["message"]
    assert ws.session_bytes(prepared.a) == before
    assert ws.registry_events() == []


def test_the_promotion_review_is_a_closing_preselected_checklist(
    prepared: Prepared, tmp_path: Path
) -> None:
    import json

    ws = prepared.at_f8.copy(tmp_path / "ws")
    shown = ws.review(prepared.a, prepared.promotion_review)
    assert shown["stage"] == "memory_promotion" and shown["kind"] == "decide"
    assert [o["id"] for o in shown["options"]] == [f"c{prepared.candidate_seq}", "none"]
    (event,) = shown["options"][0]["events"]
    assert event["type"] == "memory_promoted"
    assert event["payload"]["source_seq"] == prepared.candidate_seq
    assert event["payload"]["memory_id"] == prepared.memory_id
    requested = next(
        json.loads(line)
        for line in stage_lines(ws, prepared.a, "memory_promotion")
        if json.loads(line)["type"] == "review_requested"
    )
    assert requested["actor"] == "module:memory"
    payload = requested["payload"]
    assert payload["closes"] is True
    first = payload["options"][0]
    assert first["selected"] is True
    assert [e["type"] for e in first["unchosen"]] == ["memory_promotion_declined"]


def test_promoted_saves_the_memory_with_its_provenance_then_records_it(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    seq = prepared.candidate_seq
    body = ws.answer(prepared.a, prepared.promotion_review, "--choose", f"c{seq}")
    assert body["memory"] == {"saved": [prepared.memory_id], "already": []}
    assert body["current_stage"] == "finalize"
    (saved,) = [e for e in ws.registry_events() if e["type"] == "memory_saved"]
    assert saved["actor"] == H
    assert saved["payload"]["source"] == {"session": prepared.a, "seq": seq}
    assert saved["payload"]["reviewer"] == H
    assert saved["payload"]["memory_id"] == prepared.memory_id
    assert (saved["payload"]["subject"], saved["payload"]["target"]) == ("ablazione", "procedure")
    (promoted,) = _of_type(ws, prepared.a, "memory_promoted")
    assert promoted["actor"] == H and promoted["stage"] == "memory_promotion"
    assert promoted["payload"]["source_seq"] == seq
    assert promoted["payload"]["memory_id"] == prepared.memory_id
    assert _of_type(ws, prepared.a, "memory_promotion_declined") == []
    stages = {s["id"]: s["state"] for s in ws.status(prepared.a)["stages"]}
    assert stages["memory_promotion"] == "completed"

    listed = ws.ok("memory", "list")
    (memory,) = listed["memories"]
    assert memory["id"] == prepared.memory_id and memory["status"] == "live"
    assert memory["source"] == {"session": prepared.a, "seq": seq}
    assert memory["reviewer"] == H
    human = ws.tht("memory", "list")
    provenance = f"from session {prepared.a} seq {seq}, promoted by {H}"
    # the table folds its prose columns into each other's lines: look for the pieces
    compact = "".join(human.stdout.split())
    assert prepared.a in compact and f"seq{seq},promotedby{H}" in compact
    assert f"  {provenance}\n" in ws.tht("memory", "show", prepared.memory_id).stdout
    shown = ws.ok("memory", "show", prepared.memory_id)
    assert shown["source"] == {"session": prepared.a, "seq": seq} and shown["history"] == [1]
    assert ws.ok("memory", "verify")["ok"] is True
    assert ws.ok("ledger", "verify", prepared.a)["ok"] is True


def test_declined_records_the_decline_and_saves_nothing(prepared: Prepared, tmp_path: Path) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    body = ws.answer(prepared.a, prepared.promotion_review, "--choose", "none")
    assert body.get("memory", {}).get("saved", []) == []
    (declined,) = _of_type(ws, prepared.a, "memory_promotion_declined")
    assert declined["actor"] == H and declined["stage"] == "memory_promotion"
    assert declined["payload"]["source_seq"] == prepared.candidate_seq
    assert _of_type(ws, prepared.a, "memory_promoted") == []
    assert [e for e in ws.registry_events() if e["type"] == "memory_saved"] == []
    assert ws.ok("memory", "list")["memories"] == []
    stages = {s["id"]: s["state"] for s in ws.status(prepared.a)["stages"]}
    assert stages["memory_promotion"] == "completed"
    # declined in this session: never a candidate of it again
    preview = ws.ok("memory", "promote", prepared.a, "--preview")
    assert preview["candidates"] == [] and preview["excluded"] == {"decided": 1}


def test_none_when_the_clarification_is_already_in_memory(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    a2 = prepared.a2
    assert ws.ok("memory", "promote", a2, "--preview")["excluded"] == {"in_memory": 1}
    before = len(ws.registry_events())
    ran = ws.skip_datamart(a2)["ran"]
    assert ran["stage"] == "memory_promotion" and ran["status"] == "completed"
    assert ran["reason"] == "no clarification to promote: 1 already in memory"
    assert ran["review"] is None
    assert _types(ws, a2, "memory_promotion") == [
        "stage_started",
        "memory_nothing_to_promote",
        "stage_completed",
    ]
    (nothing,) = _of_type(ws, a2, "memory_nothing_to_promote")
    assert nothing["actor"] == "module:memory"
    assert nothing["payload"]["excluded"] == {"in_memory": 1}
    assert ws.ok("review", "list", a2) == []
    assert len(ws.registry_events()) == before  # nothing saved


def test_none_when_the_session_clarified_no_concept(prepared: Prepared, tmp_path: Path) -> None:
    ws = prepared.at_f2.copy(tmp_path / "ws")
    b = prepared.b
    ws.answer(b, prepared.recall_review, "--choose", f"m:{prepared.memory_id}")
    ws.drive_f3_to_f7(b)
    ran = ws.skip_datamart(b)["ran"]
    assert ran["status"] == "completed", ran
    assert ran["reason"] == "no clarification to promote: the session clarified no concept"
    (nothing,) = _of_type(ws, b, "memory_nothing_to_promote")
    assert nothing["payload"]["excluded"] == {}
    assert _of_type(ws, b, "review_requested")[-1]["stage"] != "memory_promotion"


@pytest.mark.parametrize(
    "how",
    [
        pytest.param(("--choose", "{c},bogus"), id="unknown-option"),
        pytest.param(("--choose", "{c}", "--approve"), id="choose-and-approve"),
    ],
)
def test_a_refused_answer_saves_nothing(
    prepared: Prepared, tmp_path: Path, how: tuple[str, ...]
) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    argv = [part.replace("{c}", f"c{prepared.candidate_seq}") for part in how]
    before = ws.session_bytes(prepared.a)
    done = ws.tht(
        "review", "answer", str(prepared.promotion_review), prepared.a, *argv, "--as", H, "--json"
    )
    assert done.code == 2, done.stdout
    assert ws.session_bytes(prepared.a) == before
    assert ws.registry_events() == []


def test_answering_a_paused_session_saves_nothing(prepared: Prepared, tmp_path: Path) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    ws.ok("session", "pause", prepared.a, "--as", H)
    done = ws.tht(
        "review",
        "answer",
        str(prepared.promotion_review),
        prepared.a,
        "--choose",
        f"c{prepared.candidate_seq}",
        "--as",
        H,
        "--json",
    )
    assert done.code == 5, done.stdout
    assert ws.registry_events() == []


def test_none_with_a_candidate_is_a_contradictory_answer(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    done = ws.tht(
        "review",
        "answer",
        str(prepared.promotion_review),
        prepared.a,
        "--choose",
        f"none,c{prepared.candidate_seq}",
        "--as",
        H,
        "--json",
    )
    assert done.code == 2, done.stdout
    assert ws.registry_events() == []
