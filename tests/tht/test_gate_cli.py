"""``tht gate check QUESTION``: the SecurityGate alone, through the CLI (ARCHITECTURE §6)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result

Tht = Callable[..., Result]

DOMAIN = """
domain:
  home_entity: {display: "Ospedale San Carlo", aliases: ["San Carlo", "OSC"]}
  external_entities:
    - {display: "Clinica Rivale", aliases: ["Rivale", "Clinica Rivale SpA"], kind: competitor}
    - {display: "Mario Rossi", aliases: ["M. Rossi"], kind: out_of_scope}
  restricted: {keywords: ["stipendi", "salaries"], patterns: ['\\bIBAN\\b']}
"""


@pytest.fixture
def ws(workspace: Path) -> Path:
    path = workspace / "workspace.yaml"
    path.write_text(path.read_text(encoding="utf-8") + DOMAIN, encoding="utf-8")
    return workspace


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_refused_question_is_reported_with_exit_0(ws: Path, tht: Tht) -> None:
    question = "Stipendi della R.i.v.a.l.e"
    done = tht("gate", "check", question, "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert list(body) == ["verdict", "masked", "entities", "reason", "narrowing"]
    assert body["verdict"] == "refuse"
    assert body["masked"] == "[restricted] della [competitor]"
    assert body["entities"] == [
        {"kind": "restricted", "display": "stipendi", "span": [0, 8]},
        {"kind": "competitor", "display": "Clinica Rivale", "span": [15, 26]},
    ]
    assert [question[a:b] for a, b in (e["span"] for e in body["entities"])] == [
        "Stipendi",
        "R.i.v.a.l.e",
    ]
    assert "restricted subject" in body["reason"] and "competitor" in body["reason"]
    assert "Ospedale San Carlo" in body["narrowing"]
    assert done.stderr == ""


def test_an_allowed_question_is_returned_unchanged(ws: Path, tht: Tht) -> None:
    done = tht("gate", "check", "Ricoveri al San Carlo nel 2023", "--json")
    assert done.code == 0
    assert done.json() == {
        "verdict": "allow",
        "masked": "Ricoveri al San Carlo nel 2023",
        "entities": [],
        "reason": "the question names nothing refused",
        "narrowing": "",
    }


def test_human_output_names_the_verdict_the_entities_and_what_to_ask(ws: Path, tht: Tht) -> None:
    done = tht("gate", "check", "Visite di M. Rossi")
    assert done.code == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("refuse: the question names an entity outside")
    assert "  out_of_scope: Mario Rossi (at 10–18)" in lines
    assert "masked: Visite di [out_of_scope]" in lines
    assert lines[-1].startswith("instead: ")
    allowed = tht("gate", "check", "Visite per reparto")
    assert allowed.code == 0 and allowed.stdout.startswith("allow")


def test_the_check_writes_nothing(ws: Path, tht: Tht) -> None:
    before = _files(ws)
    assert tht("gate", "check", "Stipendi della Rivale", "--json").code == 0
    assert tht("gate", "check", "Stipendi della Rivale", "--debug").code == 0
    assert _files(ws) == before


def test_a_bad_domain_section_is_exit_2_naming_the_field(ws: Path, tht: Tht) -> None:
    path = ws / "workspace.yaml"
    path.write_text(path.read_text().replace("'\\bIBAN\\b'", "'(IBAN'"), encoding="utf-8")
    done = tht("gate", "check", "anything", "--json")
    assert done.code == 2
    assert "domain.restricted.patterns[0]" in done.json()["error"]["message"]
    assert "domain.restricted.patterns[0]" in done.stderr


def test_outside_a_workspace_it_is_exit_3(tmp_path: Path, tht: Tht) -> None:
    done = tht("gate", "check", "anything", "--workspace", str(tmp_path / "nowhere"))
    assert done.code == 3


def test_a_workspace_without_domain_allows_everything(workspace: Path, tht: Tht) -> None:
    done = tht("gate", "check", "Stipendi della Rivale", "--json")
    assert done.code == 0 and done.json()["verdict"] == "allow"


def test_session_new_with_a_refused_question_reports_the_refusal_masked(ws: Path, tht: Tht) -> None:
    done = tht("session", "new", "Ricoveri della Clinica Rivale nel 2023", "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert body["admitted"] is False
    assert body["refusal"]["code"] == "refused:competitor"
    assert "rivale" not in (done.stdout + done.stderr).casefold()
    log = tht("session", "log", body["session"], "--json").json()
    assert log[0]["payload"]["question"] == "Ricoveri della [competitor] nel 2023"
    refused = next(e for e in log if e["type"] == "question_refused")
    assert refused["payload"]["masked_spans"] == [{"kind": "competitor", "start": 15, "end": 27}]
    assert refused["payload"]["code"] == "competitor"
    assert refused["payload"]["narrowing"]


def test_session_new_with_an_allowed_question_is_unchanged(ws: Path, tht: Tht) -> None:
    done = tht("session", "new", "Quanti ricoveri al San Carlo nel 2023?", "--json")
    assert done.code == 0 and done.json()["admitted"] is True
    log = tht("session", "log", done.json()["session"], "--json").json()
    assert log[0]["payload"]["question"] == "Quanti ricoveri al San Carlo nel 2023?"
    admitted = next(e for e in log if e["type"] == "question_admitted")
    assert "masked_spans" not in admitted["payload"]
