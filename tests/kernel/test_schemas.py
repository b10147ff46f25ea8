"""ledger_schemas/ and docs/ledger.md are generated from the code: a drift fails the build."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from kernel.events import EVENT_TYPES, encode_event
from kernel.schemas import render_ledger_doc, schema_documents
from tests.golden.scenarios import SCENARIOS, make_kernel

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schemas_equal_the_code() -> None:
    documents = schema_documents()
    folder = ROOT / "ledger_schemas"
    committed = {p.name for p in folder.glob("*.json")}
    assert committed == set(documents), "run `tht schemas export` and commit the result"
    for name, data in documents.items():
        assert (folder / name).read_bytes() == data, f"{name} drifted: run `tht schemas export`"


def test_committed_ledger_doc_equals_the_code() -> None:
    assert (ROOT / "docs" / "ledger.md").read_text(encoding="utf-8") == render_ledger_doc()


def test_index_lists_every_type_with_its_owner() -> None:
    index = json.loads(schema_documents()["index.json"])
    rows = {row["type"]: row for row in index["events"]}
    assert set(rows) == set(EVENT_TYPES)
    assert rows["concept_clarified"]["owner"] == "disambiguation"
    assert rows["memory_promoted"]["owner"] == "memory"
    assert rows["evidence_consulted"]["category"] == "receipt"
    assert rows["session_created"]["owner"] == "kernel"
    assert all(row["schema"] == f"{t}.v1.json" for t, row in rows.items())


def _validator(kind: str) -> Draft202012Validator:
    schema = json.loads((ROOT / "ledger_schemas" / f"{kind}.v1.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_every_scenario_event_validates_against_its_committed_schema(tmp_path: Path) -> None:
    seen = set()
    for name, scenario in SCENARIOS.items():
        run = make_kernel(tmp_path / name)
        scenario(run)
        for event in run.kernel.log(run.session):
            line = json.loads(encode_event(event))
            _validator(line["type"]).validate(line)
            seen.add(line["type"])
    assert len(seen) >= 20


def test_committed_schemas_reject_what_the_ledger_rejects() -> None:
    line = {
        "type": "concept_clarified",
        "seq": 1,
        "ts": "2026-01-01T00:00:00.000Z",
        "v": 1,
        "actor": "agent",
        "stage": None,
        "invocation": None,
        "attempt": None,
        "subject": None,
        "retracts": None,
        "causation": None,
        "batch_left": 0,
        "prev": "0" * 64,
        "payload": {"meaning": "m"},
    }
    validator = _validator("concept_clarified")
    validator.validate(line)
    assert not validator.is_valid({**line, "payload": {"meaning": 3}})
    assert not validator.is_valid({k: v for k, v in line.items() if k != "prev"})
