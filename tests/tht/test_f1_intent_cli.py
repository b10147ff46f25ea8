"""F1 through the CLI reads the question's intent under the workspace's DomainProfile: a
required ``ask_first`` dimension the question does not name is asked (unless a value the value
index finds names it), and the confirm that closes F1 lists the assumptions, dated by the
workspace clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_tht
from tests.support.singer_workspace import singer_workspace

DOMAIN = """
domain:
  dimensions:
    - {name: country, kind: categorical, synonyms: {en: [country, nation]}, required: true,
       clarify: ask_first, column: singer.country}
    - {name: period, kind: temporal, default: "last 12 months", required: true, clarify: assume}
"""
ENV = {"THT_CLOCK": "fixed:2026-12-07T12:00:00Z"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _workspace(tmp_path_factory.mktemp("intent") / "ws")


def _workspace(folder: Path) -> Path:
    root = singer_workspace(folder, settings=DOMAIN)
    done = run_tht("catalog", "sync", cwd=root, env=ENV)
    assert done.returncode == 0, done.stderr
    return root


def _f1(root: Path, question: str) -> tuple[str, dict]:
    created = run_tht("session", "new", question, "--json", cwd=root, env=ENV)
    assert created.returncode == 0, created.stderr
    session = json.loads(created.stdout)["session"]
    ran = run_tht("stage", "run", "disambiguation", session, "--json", cwd=root, env=ENV)
    assert ran.returncode == 0, ran.stderr
    seq = str(json.loads(ran.stdout)["review"])
    shown = run_tht("review", "show", seq, session, "--json", cwd=root, env=ENV)
    return session, json.loads(shown.stdout)


def test_the_missing_dimension_is_asked_then_f1_closes_listing_the_assumption(root: Path) -> None:
    session, review = _f1(root, "Which singer has the most sales?")
    assert review["kind"] == "select" and "which country" in review["prompt"]
    # the bound column's values (from the value index), then "every", then "leave open"
    assert [o["id"] for o in review["options"]] == ["v1", "v2", "every", "open"]
    italy = review["options"][1]["events"][0]
    assert italy["type"] == "value_grounded" and italy["subject"] == "country"
    assert italy["payload"]["value"] == "Italy" and italy["payload"]["column"] == "singer.country"
    answered = run_tht(
        "review", "answer", str(review["seq"]), session, "--choose", "v2", "--as", "human:ann",
        cwd=root, env=ENV,
    )  # fmt: skip
    assert answered.returncode == 0, answered.stderr
    status = json.loads(run_tht("session", "status", session, "--json", cwd=root).stdout)
    assert any(
        d["type"] == "value_grounded" and d["subject"] == "country"
        for d in status["effective_decisions"]
    )
    ran = run_tht("stage", "run", "disambiguation", session, "--json", cwd=root, env=ENV)
    closing = run_tht(
        "review", "show", str(json.loads(ran.stdout)["review"]), session, "--json",
        cwd=root, env=ENV,
    )  # fmt: skip
    body = json.loads(closing.stdout)
    assert body["kind"] == "confirm"
    assert '"last 12 months" (2025-12-08 to 2026-12-07)' in body["prompt"]


def test_a_value_of_the_dimension_s_column_names_it(root: Path) -> None:
    _, review = _f1(root, "Which singer has the most sales in Italy?")
    assert review["kind"] == "confirm", review["prompt"]


def test_offered_values_are_confirmed_by_the_database_and_never_a_sensitive_column_s(
    tmp_path: Path,
) -> None:
    """The value index is a cache the agent can write: a value planted in it is never offered
    (the database does not hold it), and a flagged column's values are never offered at all."""
    root = _workspace(tmp_path / "ws")
    index = root / ".tht" / "value_index" / "value_index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    for column in data["columns"]:
        if column["column"] == "singer.country":
            column["values"] = [*column["values"], "Atlantis"]
    index.write_text(json.dumps(data), encoding="utf-8")
    _, review = _f1(root, "Which singer has the most sales?")
    values = [
        e["payload"]["value"]
        for o in review["options"]
        for e in o["events"]
        if e["type"] == "value_grounded"
    ]
    assert values == ["France", "Italy"]

    flagged = run_tht(
        "catalog", "sensitive", "set", "singer.country", "--on", "--reason", "personal",
        "--as", "human:ann", cwd=root, env=ENV,
    )  # fmt: skip
    assert flagged.returncode == 0, flagged.stderr
    # the rebuilt index leaves the flagged column out; plant it back, real values and all
    data = json.loads(index.read_text(encoding="utf-8"))
    assert all(c["column"] != "singer.country" for c in data["columns"])
    data["columns"].append({"column": "singer.country", "values": ["France", "Italy"]})
    index.write_text(json.dumps(data), encoding="utf-8")
    _, review = _f1(root, "Which singer has the most sales?")
    assert [o["id"] for o in review["options"]] == ["every", "open"]
    assert "France" not in json.dumps(review) and "Italy" not in json.dumps(review)
