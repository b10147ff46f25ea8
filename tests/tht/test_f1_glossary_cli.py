"""F1 reads the published Evidence glossary (issue 14 item 5): ``tht stage run disambiguation``
asks which definition a question means when two glossary units define its term differently,
never calls a term the glossary defines unanswerable, and refuses (exit 6, nothing written) when
the published glossary cannot be read — a broken index is never taken for "no glossary"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_tht
from tests.support.singer_workspace import singer_workspace

SALES = """# Sales glossary

## Glossary

- **Revenue**: the sum of singer.sales over the year, in euros.
- **Hit singer**: a singer whose sales exceed 15.
"""
FINANCE = """# Finance glossary

## Glossary

- **Revenue**: the sales net of the label's share, that is singer.sales times 0.7.
"""


def _workspace(root: Path, *, publish: bool) -> Path:
    ws = singer_workspace(root, hashing=True)
    steps: list[tuple[str, ...]] = [("catalog", "sync")]
    if publish:
        (ws / "evidence" / "sources" / "sales.md").write_text(SALES, encoding="utf-8")
        (ws / "evidence" / "sources" / "finance.md").write_text(FINANCE, encoding="utf-8")
        steps += [("evidence", "prepare"), ("evidence", "publish")]
    for step in steps:
        done = run_tht(*step, cwd=ws)
        assert done.returncode == 0, done.stderr
    return ws


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _workspace(tmp_path_factory.mktemp("glossary") / "ws", publish=True)


def _run_f1(root: Path, question: str) -> tuple[str, dict]:
    created = run_tht("session", "new", question, "--json", cwd=root)
    assert created.returncode == 0, created.stderr
    session = json.loads(created.stdout)["session"]
    ran = run_tht("stage", "run", "disambiguation", session, "--json", cwd=root)
    assert ran.returncode == 0, ran.stderr
    review = json.loads(ran.stdout)["review"]
    shown = run_tht("review", "show", str(review), session, "--json", cwd=root)
    assert shown.returncode == 0, shown.stderr
    return session, json.loads(shown.stdout)


def test_two_glossary_definitions_of_the_question_s_term_are_asked_with_their_units(
    published: Path,
) -> None:
    _, review = _run_f1(published, "What is the revenue of each singer?")
    assert review["kind"] == "select"
    assert "glossary defines 'revenue' in more than one way" in review["prompt"]
    meanings = {
        e["payload"]["meaning"]
        for o in review["options"]
        for e in o["events"]
        if e["type"] == "concept_clarified"
    }
    assert meanings == {
        "the sum of singer.sales over the year, in euros.",
        "the sales net of the label's share, that is singer.sales times 0.7.",
    }
    labels = " ".join(o["label"] for o in review["options"])
    assert "evidence:revenue" in labels and "evidence:revenue-2" in labels
    assert review["options"][-1]["id"] == "open"  # the explicit "leave open", last


def test_a_term_the_glossary_defines_once_is_neither_asked_nor_unanswerable(
    published: Path,
) -> None:
    _, review = _run_f1(published, "Which hit singer has the most sales?")
    assert review["kind"] == "confirm"  # nothing to ask: F1 closes


def test_without_a_published_glossary_the_same_term_is_unanswerable(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", publish=False)
    _, review = _run_f1(root, "What is the revenue of each singer?")
    assert "'revenue' names nothing" in review["prompt"]


def test_an_unreadable_published_glossary_is_exit_6_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path / "ws", publish=True)
    created = run_tht("session", "new", "What is the revenue of each singer?", "--json", cwd=root)
    session = json.loads(created.stdout)["session"]
    ledger = root / "sessions" / session / "ledger.jsonl"
    before = ledger.read_bytes()
    (root / ".tht" / "evidence" / "generations.json").write_text("{not json", encoding="utf-8")
    ran = run_tht("stage", "run", "disambiguation", session, "--json", cwd=root)
    assert ran.returncode == 6, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["error"]["details"]["reason"] == "evidence"
    assert "glossary" in ran.stderr
    assert ledger.read_bytes() == before
