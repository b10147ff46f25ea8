"""``tht session rephrase QUESTION [SESSION] [--as human:ID]``: a refused question asked again
in the same session, through the SecurityGate and Question Admission, up to the workspace's
``admission: {attempts: N}``; the last refusal closes the session (spec 003 §17)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result

Tht = Callable[..., Result]
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "cli" / "rephrase"

DOMAIN = """
domain:
  home_entity: {display: "Ospedale San Carlo", aliases: ["San Carlo"]}
  external_entities:
    - {display: "Clinica Rivale", aliases: ["Rivale", "Clinica Rivale SpA"], kind: competitor}
  restricted: {keywords: ["stipendi"]}
"""
KEYS = ["session", "seq", "admitted", "attempt", "attempts_left", "current_stage", "stages"]


@pytest.fixture
def ws(workspace: Path) -> Path:
    path = workspace / "workspace.yaml"
    path.write_text(path.read_text(encoding="utf-8") + DOMAIN, encoding="utf-8")
    return workspace


def _set_attempts(ws: Path, n: object) -> None:
    path = ws / "workspace.yaml"
    text = path.read_text(encoding="utf-8")
    head, _, tail = text.partition("admission:\n  attempts: ")
    path.write_text(f"{head}admission:\n  attempts: {n}{tail[tail.index(chr(10)) :]}")


def _refused(tht: Tht, question: str = "xx") -> str:
    done = tht("session", "new", question, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["admitted"] is False
    return str(done.json()["session"])


def _ledger(ws: Path, session: str) -> bytes:
    return (ws / "sessions" / session / "ledger.jsonl").read_bytes()


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock") and "fake-clock" not in p.name
    }


def test_a_refused_question_rephrased_is_admitted_and_the_session_moves_on(
    ws: Path, tht: Tht
) -> None:
    session = _refused(tht)
    done = tht("session", "rephrase", "Quanti ricoveri nel 2023?", session, "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert list(body) == [*KEYS, "closed"]
    assert body["admitted"] is True and body["closed"] is False
    assert body["attempt"] == 2 and body["attempts_left"] == 1
    assert body["current_stage"] == "disambiguation"
    assert body["stages"][0] == {
        "id": "admission",
        "display": None,
        "kind": "preflight",
        "state": "completed",
    }
    status = tht("session", "status", session, "--json").json()
    assert status["current_stage"] == "disambiguation" and status["blocked"] is False
    log = tht("session", "log", session, "--json").json()
    rephrased = [e for e in log if e["type"] == "question_rephrased"]
    assert [e["payload"] for e in rephrased] == [
        {"question": "Quanti ricoveri nel 2023?", "attempt": 2}
    ]
    assert rephrased[0]["actor"] == "agent"
    assert tht("ledger", "verify", session, "--json").code == 0


def test_three_refusals_close_the_session_and_derive_starts_again(ws: Path, tht: Tht) -> None:
    session = _refused(tht)
    second = tht("session", "rephrase", "yy", session, "--json")
    assert second.code == 0
    assert second.json()["attempts_left"] == 1 and second.json()["closed"] is False
    assert second.json()["refusal"]["code"] == "refused:too_short"
    assert "question refused" in second.stderr
    third = tht("session", "rephrase", "zz", session, "--json", "--as", "human:ann")
    assert third.code == 0
    body = third.json()
    assert list(body) == [*KEYS, "refusal", "closed"]
    assert body["closed"] is True and body["attempt"] == 3 and body["attempts_left"] == 0
    last = tht("session", "log", session, "--json").json()[-1]
    assert last["type"] == "session_abandoned" and last["actor"] == "kernel"
    assert last["payload"] == {"reason": "refused 3 times"}
    status = tht("session", "status", session, "--json").json()
    assert status["lifecycle"] == "abandoned"
    before = _files(ws / "sessions")
    again = tht("session", "rephrase", "Quanti ricoveri?", session, "--json")
    assert again.code == 5
    assert "no attempts left" in again.json()["error"]["message"]
    assert _files(ws / "sessions") == before
    derived = tht("session", "derive", session, "--as", "human:ann", "--json")
    assert derived.code == 0, derived.stderr
    assert derived.json()["derived_from"] == session


def test_the_gate_masks_a_refused_entity_in_a_rephrase(ws: Path, tht: Tht) -> None:
    session = _refused(tht)
    done = tht("session", "rephrase", "Ricoveri della R.i.v.a.l.e nel 2023", session, "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert body["admitted"] is False and body["refusal"]["code"] == "refused:competitor"
    ledger = _ledger(ws, session)
    assert b"R.i.v.a.l.e" not in ledger and b"Rivale" not in ledger
    log = tht("session", "log", session, "--json").json()
    rephrased = next(e for e in log if e["type"] == "question_rephrased")
    assert rephrased["payload"]["question"] == "Ricoveri della [competitor] nel 2023"
    refusal = [e for e in log if e["type"] == "question_refused"][-1]["payload"]
    question = rephrased["payload"]["question"]
    spans = [question[s["start"] : s["end"]] for s in refusal["masked_spans"]]
    assert spans == ["[competitor]"]
    # nothing the session wrote (ledger, caches, objects) holds the refused text
    for name, data in _files(ws).items():
        if name != "workspace.yaml":
            assert b"R.i.v.a.l.e" not in data and b"Rivale" not in data, name
    status = tht("session", "status", session, "--json")
    assert "R.i.v.a.l.e" not in status.stdout


def test_rephrasing_an_admitted_question_is_refused_with_exit_5(ws: Path, tht: Tht) -> None:
    done = tht("session", "new", "Quanti ricoveri nel 2023?", "--json")
    session = done.json()["session"]
    before = _files(ws / "sessions")
    again = tht("session", "rephrase", "Altri ricoveri?", session, "--json")
    assert again.code == 5
    assert again.json()["error"]["message"] == "the question was admitted; nothing to rephrase"
    assert _files(ws / "sessions") == before
    plain = tht("session", "rephrase", "Altri ricoveri?", session)
    assert plain.code == 5 and plain.stdout == ""
    assert "nothing to rephrase" in plain.stderr and "Traceback" not in plain.stderr


@pytest.mark.parametrize("question", ["", "   ", "x" * 4001])
def test_an_empty_or_too_long_question_is_exit_2_and_writes_nothing(
    ws: Path, tht: Tht, question: str
) -> None:
    session = _refused(tht)
    before = _files(ws / "sessions")
    done = tht("session", "rephrase", question, session, "--json")
    assert done.code == 2
    assert done.json()["error"]["exit_code"] == 2
    assert _files(ws / "sessions") == before


def test_unknown_session_is_exit_3_and_an_agent_cannot_claim_a_human(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tht("session", "rephrase", "Quanti ricoveri?", "NOPE", "--json").code == 3
    session = _refused(tht)
    monkeypatch.setenv("THT_ACTOR", "agent")
    before = _files(ws / "sessions")
    done = tht("session", "rephrase", "Quanti ricoveri?", session, "--as", "human:ann")
    assert done.code == 5
    assert _files(ws / "sessions") == before
    monkeypatch.setenv("THT_SESSION", session)
    plain = tht("session", "rephrase", "Quanti ricoveri?", "--json")  # SESSION from the env
    assert plain.code == 0 and plain.json()["session"] == session


def test_the_limit_comes_from_workspace_yaml_and_stays_with_the_session(ws: Path, tht: Tht) -> None:
    _set_attempts(ws, 1)
    closed = tht("session", "new", "xx", "--json")
    assert closed.code == 0
    session = closed.json()["session"]
    status = tht("session", "status", session, "--json").json()
    assert status["lifecycle"] == "abandoned"  # a limit of 1: the first refusal closes it
    _set_attempts(ws, 2)
    kept = _refused(tht)
    _set_attempts(ws, 5)  # changing the file later does not change kept's rule
    assert tht("session", "rephrase", "yy", kept, "--json").json()["closed"] is True


@pytest.mark.parametrize("value", ["0", "11", "tre"])
def test_a_bad_attempts_setting_is_exit_2_naming_file_and_field(
    ws: Path, tht: Tht, value: str
) -> None:
    session = _refused(tht)
    _set_attempts(ws, value)
    before = _files(ws / "sessions")
    done = tht("session", "rephrase", "Quanti ricoveri?", session)
    assert done.code == 2
    assert "workspace.yaml" in done.stderr and "admission.attempts" in done.stderr
    assert _files(ws / "sessions") == before


def test_human_output_says_what_happened_and_what_is_left(ws: Path, tht: Tht) -> None:
    session = _refused(tht)
    second = tht("session", "rephrase", "yy", session)
    assert second.code == 0
    assert second.stdout.strip() == (
        f"session {session}: question 2 of 3 refused; 1 attempt left "
        "(`tht session rephrase QUESTION`)"
    )
    third = tht("session", "rephrase", "Quanti ricoveri?", session)
    assert third.stdout.strip() == (
        f"session {session}: question 3 of 3 admitted (current stage: disambiguation)"
    )


def test_rephrase_json_outputs_match_their_golden_files(
    ws: Path, tht: Tht, update_golden: bool
) -> None:
    session = _refused(tht)
    outputs = {
        "refused": tht("session", "rephrase", "Stipendi della Rivale", session, "--json"),
        "closed": tht("session", "rephrase", "zz", session, "--json", "--as", "human:ann"),
        "no_attempts_left": tht("session", "rephrase", "Quanti?", session, "--json"),
    }
    admitted = _refused(tht)
    outputs["admitted"] = tht("session", "rephrase", "Quanti ricoveri?", admitted, "--json")
    outputs["nothing_to_rephrase"] = tht("session", "rephrase", "Altro?", admitted, "--json")
    outputs["log"] = tht("session", "log", session, "--json", "--from", "4")
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, done in outputs.items():
        record = f"exit {done.code}\n{done.stdout}"
        path = GOLDEN / f"{name}.txt"
        if update_golden:
            path.write_text(record)
        assert record == path.read_text(), f"{name}: CLI JSON changed (golden/cli/rephrase/)"
        json.loads(done.stdout)
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(outputs)
