"""The kernel's CLI: a session driven through the commands, with their JSON shapes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result

QUESTION = "How many ablation procedures were performed in 2023?"


def _proposal(tmp_path: Path, name: str, body: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return str(path)


SELECT = {
    "kind": "select",
    "prompt": "What does ablation mean?",
    "options": [
        {
            "id": "flag",
            "label": "the flag column",
            "events": [
                {"type": "concept_clarified", "subject": "ablation", "payload": {"meaning": "flag"}}
            ],
        },
        {"id": "text", "label": "free text", "events": []},
    ],
}


@pytest.fixture
def session(workspace: Path, tht: Callable[..., Result]) -> str:
    done = tht("session", "new", QUESTION, "--json")
    assert done.code == 0, done.stderr
    return str(done.json()["session"])


def test_session_new_runs_admission(workspace: Path, tht: Callable[..., Result]) -> None:
    body = tht("session", "new", QUESTION, "--json").json()
    assert body["admitted"] is True
    assert body["current_stage"] == "disambiguation"
    assert body["seq"] == 4
    assert [s["id"] for s in body["stages"]][:2] == ["admission", "disambiguation"]


def test_garbage_question_is_refused_and_blocks(
    workspace: Path, tht: Callable[..., Result]
) -> None:
    done = tht("session", "new", "??? !!! 123", "--json")
    assert done.code == 0
    body = done.json()
    assert body["admitted"] is False
    assert body["refusal"] == {
        "code": "refused:too_short",
        "reason": "the question has no words to work with",
    }
    status = tht("session", "status", body["session"], "--json").json()
    assert status["blocked"] is True
    assert status["stages"][0]["state"] == "failed"


def test_propose_answer_and_status(
    workspace: Path, tht: Callable[..., Result], session: str, tmp_path: Path
) -> None:
    proposed = tht(
        "propose",
        "disambiguation",
        "--file",
        _proposal(tmp_path, "p.json", SELECT),
        session,
        "--json",
    ).json()
    assert proposed["state"] == "awaiting_human"
    review = proposed["review"]
    listed = tht("review", "list", session, "--json").json()
    assert listed == [
        {
            "seq": review,
            "stage": "disambiguation",
            "kind": "select",
            "prompt": "What does ablation mean?",
            "options": [
                {"id": "flag", "label": "the flag column"},
                {"id": "text", "label": "free text"},
            ],
        }
    ]
    shown = tht("review", "show", str(review), session, "--json").json()
    assert shown["options"][0]["events"][0]["type"] == "concept_clarified"
    answered = tht(
        "review", "answer", str(review), session, "--choose", "flag", "--as", "human:ann", "--json"
    ).json()
    assert [e["type"] for e in answered["events"]] == ["review_answered", "concept_clarified"]
    status = tht("session", "status", session, "--json").json()
    assert set(status) >= {
        "session",
        "lifecycle",
        "current_stage",
        "stages",
        "open_reviews",
        "blocked",
        "last_seq",
        "head",
    }
    assert status["open_reviews"] == []
    assert status["effective_decisions"][-1]["type"] == "concept_clarified"
    log = tht("session", "log", session, "--from", "7", "--json").json()
    assert [e["seq"] for e in log] == list(range(7, status["last_seq"] + 1))
    assert all({"seq", "ts", "type", "v", "actor", "prev", "payload"} <= set(e) for e in log)


def test_status_at_folds_only_the_first_events(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    at1 = tht("session", "status", session, "--at", "1", "--json").json()
    assert at1["last_seq"] == 1
    assert at1["current_stage"] == "admission"
    assert tht("session", "status", session, "--at", "99", "--json").code == 3


def test_human_output_shows_the_stage_timeline(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    done = tht("session", "status", session)
    assert "F1" in done.stdout and "F8" in done.stdout
    assert "disambiguation ←" in done.stdout
    assert "does not verify" not in done.stderr  # a sound ledger gets no integrity warning
    assert tht("session", "status", session, "--json").json()["integrity"] == {
        "ok": True,
        "problems": [],
    }


def test_status_warns_when_the_ledger_does_not_verify(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    ledger = workspace / "sessions" / session / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    # the last event rewritten behind the kernel's back: it no longer hashes to its own hash
    # (status is the cheap display check: it reads what is new since its cache, and the anchor)
    lines[-1] = lines[-1].replace(b'"actor":"', b'"actor":"x', 1)
    ledger.write_bytes(b"".join(lines))
    done = tht("session", "status", session)
    assert done.code == 0  # display only
    assert "does not verify" in done.stderr
    body = tht("session", "status", session, "--json").json()
    assert body["integrity"]["ok"] is False
    assert body["integrity"]["problems"]


def test_session_id_defaults_to_env_and_accepts_a_unique_prefix(
    workspace: Path, tht: Callable[..., Result], session: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tht("session", "status", session[:10], "--json").json()["session"] == session
    monkeypatch.setenv("THT_SESSION", session)
    assert tht("session", "status", "--json").json()["session"] == session


def test_pause_resume_finalize_refusals(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    assert tht("session", "pause", session, "--as", "human:ann").code == 0
    assert tht("session", "pause", session, "--as", "human:ann").code == 5
    assert tht("review", "list", session, "--json").json() == []
    assert tht("session", "resume", session, "--as", "human:ann").code == 0
    refused = tht("session", "finalize", session, "--as", "human:ann", "--json")
    assert refused.code == 5
    assert "not reached finalization" in refused.json()["error"]["message"]


def test_global_options_are_accepted_before_the_command(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    done = tht("--json", "--workspace", str(workspace), "session", "status", session)
    assert done.code == 0
    assert done.json()["session"] == session


def test_session_list(workspace: Path, tht: Callable[..., Result], session: str) -> None:
    rows = tht("session", "list", "--json").json()
    assert rows == [
        {
            "session": session,
            "lifecycle": "active",
            "current_stage": "disambiguation",
            "blocked": False,
            "last_seq": 4,
            "derived_from": None,
            "question": QUESTION,
            "integrity_ok": True,
        }
    ]


def test_session_list_marks_a_ledger_that_does_not_verify(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    sound = tht("session", "list")
    assert "DOES NOT VERIFY" not in sound.stdout
    assert "does not verify" not in sound.stderr
    ledger = workspace / "sessions" / session / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"actor":"', b'"actor":"x', 1)  # tampered behind tht's back
    ledger.write_bytes(b"".join(lines))
    done = tht("session", "list")
    assert done.code == 0  # display only
    assert "active — DOES NOT VERIFY" in done.stdout
    assert "do not verify" in done.stderr and session in done.stderr
    rows = tht("session", "list", "--json").json()  # the JSON shape is unchanged
    assert rows[0]["lifecycle"] == "active"
    assert rows[0]["integrity_ok"] is False


def test_session_list_wraps_a_long_question_instead_of_cutting_it(
    workspace: Path, tht: Callable[..., Result]
) -> None:
    question = (
        "How many ablation procedures were performed in 2023 in the cardiology departments "
        "of every hospital, counted per quarter and per operator?"
    )
    assert tht("session", "new", question, "--json").code == 0
    done = tht("session", "list")
    assert done.code == 0
    # every other column is a single line, so the wrapped question reads back whole
    assert question in " ".join(done.stdout.split())
