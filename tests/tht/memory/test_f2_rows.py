"""F2 memory recall through the CLI (spec 003 §14.2, the Memory rows): a later session recalls
the promoted clarification and the solved question in a closing ``decide``; applied, rejected,
and nothing found (an empty memory; a near miss on a memory that is not empty).

F2 runs by itself when F1 closes (``tht review answer`` of F1's confirm).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from modules.memory.search import DEFAULT_FLOOR
from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import UNRELATED_QUESTION, H, Ws, stage_lines


def _of_type(ws: Ws, session: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in ws.events(session) if e["type"] == kind]


def _stage_types(ws: Ws, session: str, stage: str) -> list[str]:
    return [json.loads(line)["type"] for line in stage_lines(ws, session, stage)]


def test_the_recall_review_lists_the_memory_and_the_solved_question(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.at_f2.copy(tmp_path / "ws")
    shown = ws.review(prepared.b, prepared.recall_review)
    assert shown["stage"] == "memory_recall" and shown["kind"] == "decide"
    memory, solved, none = shown["options"]
    assert memory["id"] == f"m:{prepared.memory_id}"
    assert memory["label"] == (
        "ablazione = procedure.flag_ablazione = 1 → procedure "
        f"(from session {prepared.a} seq {prepared.candidate_seq}, promoted by {H}; "
        "recalled because the question names its subject)"
    )
    (applied,) = memory["events"]
    assert applied["type"] == "memory_applied" and applied["subject"] == "ablazione"
    assert applied["payload"] == {
        "memory_id": prepared.memory_id,
        "content": "ablazione = procedure.flag_ablazione = 1 → procedure",
        "kind": "memory",
        "subject": "ablazione",
        "meaning": "procedure.flag_ablazione = 1",
        "target": "procedure",
        "source_session": prepared.a,
        "source_seq": prepared.candidate_seq,
    }
    assert solved["id"] == f"q:{prepared.solved_id}"
    assert solved["label"].startswith(
        "Quanti ricoveri con ablazione per ospedale nel 2024? → SELECT"
    )
    assert solved["events"][0]["payload"]["kind"] == "solved_question"
    assert none["id"] == "none" and none["events"] == []
    requested = _of_type(ws, prepared.b, "review_requested")[-1]
    assert requested["actor"] == "module:memory" and requested["payload"]["closes"] is True
    assert [
        [e["type"] for e in o.get("unchosen", [])] for o in requested["payload"]["options"]
    ] == [["memory_rejected"], ["memory_rejected"], []]
    human = ws.tht("review", "show", str(prepared.recall_review), prepared.b)
    assert (
        f"(from session {prepared.a} seq {prepared.candidate_seq}, promoted by {H}; recalled "
        "because the question names its subject)"
    ) in " ".join(human.stdout.split())


@pytest.mark.parametrize(
    ("chosen", "applied", "rejected"),
    [
        pytest.param(("m",), ("m",), ("q",), id="memory"),
        pytest.param(("q",), ("q",), ("m",), id="solved"),
        pytest.param(("m", "q"), ("m", "q"), (), id="both"),
        pytest.param(("none",), (), ("m", "q"), id="none"),
    ],
)
def test_answering_applies_the_chosen_and_rejects_the_others(
    prepared: Prepared,
    tmp_path: Path,
    chosen: tuple[str, ...],
    applied: tuple[str, ...],
    rejected: tuple[str, ...],
) -> None:
    ws = prepared.at_f2.copy(tmp_path / "ws")
    ids = {"m": prepared.memory_id, "q": prepared.solved_id}
    option = {"m": f"m:{prepared.memory_id}", "q": f"q:{prepared.solved_id}", "none": "none"}
    body = ws.answer(
        prepared.b, prepared.recall_review, "--choose", ",".join(option[c] for c in chosen)
    )
    assert body["current_stage"] == "rewriting"
    assert "memory" not in body  # F2 writes nothing to the registry
    got_applied = _of_type(ws, prepared.b, "memory_applied")
    got_rejected = _of_type(ws, prepared.b, "memory_rejected")
    assert sorted(e["payload"]["memory_id"] for e in got_applied) == sorted(ids[c] for c in applied)
    assert sorted(e["payload"]["memory_id"] for e in got_rejected) == sorted(
        ids[c] for c in rejected
    )
    for event in got_applied + got_rejected:
        assert event["actor"] == H and event["stage"] == "memory_recall"
        assert event["causation"] == prepared.recall_review
    for event in got_applied:
        if event["payload"]["memory_id"] == prepared.memory_id:
            assert event["payload"]["kind"] == "memory"
            assert (event["subject"], event["payload"]["meaning"], event["payload"]["target"]) == (
                "ablazione",
                "procedure.flag_ablazione = 1",
                "procedure",
            )
            assert (event["payload"]["source_session"], event["payload"]["source_seq"]) == (
                prepared.a,
                prepared.candidate_seq,
            )
        else:
            assert event["payload"]["kind"] == "solved_question"
    assert _stage_types(ws, prepared.b, "memory_recall")[-1] == "stage_completed"
    effective = {d["type"] for d in ws.status(prepared.b)["effective_decisions"]}
    assert ("memory_applied" in effective) == bool(applied)
    assert ws.ok("ledger", "verify", prepared.b)["ok"] is True


def test_an_applied_memory_is_an_effective_clarification_and_is_not_promoted_again(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.at_f2.copy(tmp_path / "ws")
    ws.answer(prepared.b, prepared.recall_review, "--choose", f"m:{prepared.memory_id}")
    decisions = ws.status(prepared.b)["effective_decisions"]
    assert {"type": "memory_applied", "subject": "ablazione"}.items() <= next(
        d for d in decisions if d["type"] == "memory_applied"
    ).items()
    preview = ws.ok("memory", "promote", prepared.b, "--preview")
    assert preview["candidates"] == []


def test_none_found_on_an_empty_memory(prepared: Prepared) -> None:
    ws = prepared.at_datamart  # read only: its files, not a command
    assert _stage_types(ws, prepared.a, "memory_recall") == [
        "stage_started",
        "memory_nothing_recalled",
        "stage_completed",
    ]
    (nothing,) = _of_type(ws, prepared.a, "memory_nothing_recalled")
    assert nothing["actor"] == "module:memory"
    assert nothing["payload"]["reason"] == "the workspace memory is empty"
    assert nothing["payload"]["considered"] == 0


def test_a_near_miss_on_a_memory_that_is_not_empty_recalls_nothing(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    assert ws.ok("memory", "list")["memories"]  # the memory is not empty
    assert ws.ok("memory", "search", UNRELATED_QUESTION)["results"] == []
    session = ws.new_session(UNRELATED_QUESTION)
    ran = ws.close_f1(session)["ran"]
    assert ran["stage"] == "memory_recall" and ran["status"] == "completed", ran
    floor = min(DEFAULT_FLOOR.values())
    assert ran["reason"].startswith("nothing relevant in memory: 1 text searched, ")
    assert ran["reason"].endswith(f"none shown above the relevance floor {floor:g}")
    (nothing,) = _of_type(ws, session, "memory_nothing_recalled")
    assert nothing["actor"] == "module:memory"
    assert nothing["payload"]["floor"] == floor
    assert nothing["payload"]["searched"] == 1
    assert nothing["payload"]["considered"] >= 1  # the index answered; the floor kept it out
    assert all(e["stage"] != "memory_recall" for e in _of_type(ws, session, "review_requested"))
    assert ws.status(session)["current_stage"] == "rewriting"


def test_what_the_session_already_decided_is_not_recalled(
    prepared: Prepared, tmp_path: Path
) -> None:
    """A session that clarifies 'ablazione' exactly as the memory does is not shown it again
    (the solved question, still relevant, is)."""
    ws = prepared.promoted.copy(tmp_path / "ws")
    session = ws.new_session("Quante ablazioni per ospedale nel 2023?")
    ws.step(session, "disambiguation", "01-f1-ablazione.json", "--choose", "flag")
    ran = ws.close_f1(session)["ran"]
    assert ran["status"] == "review", ran
    assert ran["prompt"].startswith("Recalled from the workspace memory: 1 solved question.")
    options = [o["id"] for o in ws.review(session, int(ran["review"]))["options"]]
    assert options == [f"q:{prepared.solved_id}", "none"]
