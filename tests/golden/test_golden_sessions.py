"""Golden sessions: every scenario's ledger is byte-stable, and folding the committed ledger
reproduces the committed ``status.json`` byte for byte (regenerate: ``pytest --update-golden``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel.fold import fold
from kernel.ledger import Ledger
from kernel.workflow import load_workflow
from tests.golden.scenarios import SCENARIOS, make_kernel
from tht.projections import status_json

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sessions"


def _status_bytes(ledger_path: Path, session: str) -> bytes:
    read = Ledger(ledger_path, session).read()
    state = fold(load_workflow(), read.events)
    return (json.dumps(status_json(state, read.head), indent=2, ensure_ascii=False) + "\n").encode()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_ledger_is_byte_stable(name: str, tmp_path: Path, update_golden: bool) -> None:
    run = make_kernel(tmp_path / "ws")
    SCENARIOS[name](run)
    ledger = run.workspace.sessions_dir / run.session / "ledger.jsonl"
    folder = GOLDEN / name
    if update_golden:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "ledger.jsonl").write_bytes(ledger.read_bytes())
        (folder / "session.txt").write_text(run.session + "\n")
        (folder / "status.json").write_bytes(_status_bytes(ledger, run.session))
    assert ledger.read_bytes() == (folder / "ledger.jsonl").read_bytes()
    assert (folder / "session.txt").read_text().strip() == run.session


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_folding_the_golden_ledger_reproduces_its_status(name: str) -> None:
    folder = GOLDEN / name
    session = (folder / "session.txt").read_text().strip()
    assert _status_bytes(folder / "ledger.jsonl", session) == (folder / "status.json").read_bytes()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden_ledgers_verify(name: str, tmp_path: Path) -> None:
    folder = GOLDEN / name
    session = (folder / "session.txt").read_text().strip()
    copy = tmp_path / "ledger.jsonl"
    copy.write_bytes((folder / "ledger.jsonl").read_bytes())
    # the head anchor is per machine (not a golden file): acknowledge the committed end
    tail = Ledger(copy, session).tail()
    (tmp_path / "ledger.head").write_text(json.dumps({"seq": tail.last_seq, "head": tail.head}))
    report = Ledger(copy, session).verify()
    codes = [p.code for p in report.problems]
    if name == "torn_tail":
        assert codes == ["torn_tail"]
        assert report.problems[0].repairable
    else:
        assert report.ok, codes


def test_golden_statuses_show_what_each_scenario_is_about() -> None:
    def status(name: str) -> dict:
        return json.loads((GOLDEN / name / "status.json").read_text())

    def states(name: str) -> dict[str, str]:
        return {s["id"]: s["state"] for s in status(name)["stages"]}

    assert status("happy_path")["lifecycle"] == "finalized"
    assert all(s in ("completed", "skipped") for s in states("happy_path").values())
    retraction = status("retraction")
    meanings = [d for d in retraction["effective_decisions"] if d["type"] == "concept_clarified"]
    assert len(meanings) == 1  # the retracted one is not effective
    reopen = states("reopen_stale")
    assert reopen["rewriting"] == "ready"
    assert reopen["schema_linking"] == reopen["cte"] == reopen["sql"] == "pending"
    assert {d["type"] for d in status("reopen_stale")["effective_decisions"]} == {
        "question_admitted",
        "concept_clarified",
    }
    assert [a["name"] for a in status("reopen_stale")["artifacts"]] == []
    fail = status("skip_and_fail")
    assert fail["blocked"] and "rewriting failed" in fail["blocked_reason"]
    assert status("pause_resume")["lifecycle"] == "paused"
    derived = status("finalize_derive")
    assert derived["derived_from"] and derived["lifecycle"] == "active"
    assert status("torn_tail")["last_seq"] == 8
