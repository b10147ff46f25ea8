"""The SecurityGate also stands before an agent's proposals: a competitor's name or a restricted
subject in a prompt, a label, an event payload or an artifact — disguised or not — is refused
whole (exit 5), the ledger is byte-identical and the message never repeats the text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tht.conftest import Result

Tht = Callable[..., Result]

DOMAIN = """
domain:
  external_entities:
    - {display: "Clinica Rivale", aliases: ["Rivale"], kind: competitor}
  restricted: {keywords: ["stipendi"]}
"""


@pytest.fixture
def session(workspace: Path, tht: Tht) -> str:
    path = workspace / "workspace.yaml"
    path.write_text(path.read_text(encoding="utf-8") + DOMAIN, encoding="utf-8")
    return str(tht("session", "new", "Quante ablazioni nel 2024?", "--json").json()["session"])


def _event(meaning: str) -> dict[str, Any]:
    return {"type": "concept_clarified", "subject": "ablazione", "payload": {"meaning": meaning}}


@pytest.mark.parametrize(
    "proposal",
    [
        {
            "kind": "select",
            "prompt": "Come la Clinica Rivale?",
            "options": [{"id": "a", "label": "a"}],
        },
        {"kind": "select", "prompt": "?", "options": [{"id": "a", "label": "R.I.V.A.L.E"}]},
        {
            "kind": "select",
            "prompt": "?",
            "options": [
                {"id": "a", "label": "a", "events": [_event("come fa Rіvale")]}
            ],  # Cyrillic і
        },
        {"kind": "confirm", "prompt": "Gli s t i p e n d i?"},
    ],
    ids=["prompt", "spaced_label", "confusable_payload", "restricted_prompt"],
)
def test_a_proposal_naming_a_refused_entity_is_refused_whole(
    workspace: Path, tht: Tht, session: str, tmp_path: Path, proposal: dict[str, Any]
) -> None:
    ledger = workspace / "sessions" / session / "ledger.jsonl"
    before = ledger.read_bytes()
    path = tmp_path / "p.json"
    path.write_text(json.dumps(proposal), encoding="utf-8")
    done = tht("propose", "disambiguation", "--file", str(path), session, "--json")
    assert done.code == 5, done.stdout + done.stderr
    assert "SecurityGate" in done.stderr
    for text in ("Rivale", "RIVALE", "ivale", "stipend"):
        assert text.casefold() not in done.stderr.casefold()
    assert ledger.read_bytes() == before


def test_a_clean_proposal_goes_through(tht: Tht, session: str, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    proposal = {"kind": "select", "prompt": "?", "options": [{"id": "a", "label": "il flag"}]}
    path.write_text(json.dumps(proposal), encoding="utf-8")
    done = tht("propose", "disambiguation", "--file", str(path), session, "--json")
    assert done.code == 0, done.stderr
