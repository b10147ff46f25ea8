"""CLI JSON contracts: each command's ``--json`` output, byte for byte (golden/cli/).

A deterministic workspace (THT_CLOCK, THT_SEED) drives one short session; every output is
compared with its golden file. Regenerate with ``pytest --update-golden`` and explain the diff.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.tht.conftest import Result

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "cli"

SELECT = {
    "kind": "select",
    "prompt": "What does 'ablazione' mean here?",
    "options": [
        {
            "id": "flag",
            "label": "the flag_ablazione column",
            "events": [
                {
                    "type": "concept_clarified",
                    "subject": "ablazione",
                    "payload": {"meaning": "flag"},
                }
            ],
        },
        {"id": "text", "label": "the free-text pathology", "events": []},
    ],
    "artifacts": [],
}


def test_cli_json_outputs_match_their_golden_files(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path, update_golden: bool
) -> None:
    proposal = tmp_path / "select.json"
    proposal.write_text(json.dumps(SELECT))
    revision = tmp_path / "revision.json"
    revision.write_text(
        json.dumps({"kind": "revision", "target": "disambiguation", "reason": "again"})
    )
    outputs: dict[str, Result] = {}

    def step(name: str, *argv: str) -> Result:
        done = tht(*argv, "--json")
        outputs[name] = done
        return done

    session = step("session_new", "session", "new", "Quante ablazioni nel 2023?").json()["session"]
    review = step("propose_select", "propose", "disambiguation", "--file", str(proposal), session)
    seq = str(review.json()["review"])
    step("review_list", "review", "list", session)
    step("review_show", "review", "show", seq, session)
    step("review_answer", "review", "answer", seq, session, "--choose", "flag", "--as", "human:ann")
    step(
        "decision_retract",
        "decision",
        "retract",
        "8",
        session,
        "--reason",
        "wrong",
        "--as",
        "human:ann",
    )
    step("propose_revision", "propose", "disambiguation", "--file", str(revision), session)
    step(
        "stage_reopen",
        "stage",
        "reopen",
        "disambiguation",
        session,
        "--reason",
        "r",
        "--as",
        "human:ann",
    )
    step(
        "stage_skip",
        "stage",
        "skip",
        "disambiguation",
        session,
        "--reason",
        "none",
        "--as",
        "human:ann",
    )
    step("session_pause", "session", "pause", session, "--as", "human:ann")
    step("session_resume", "session", "resume", session, "--as", "human:ann")
    step("session_status", "session", "status", session)
    step("session_status_at", "session", "status", session, "--at", "6")
    step("session_log", "session", "log", session, "--from", "12")
    step("session_list", "session", "list")
    step("ledger_verify", "ledger", "verify", session)
    step("error_not_found", "review", "answer", "999", session, "--approve", "--as", "human:ann")
    step("error_refused", "session", "resume", session, "--as", "human:ann")
    step("error_usage", "session", "status", session, "--at", "-1")

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, done in outputs.items():
        record = f"exit {done.code}\n{done.stdout}"
        path = GOLDEN / f"{name}.txt"
        if update_golden:
            path.write_text(record)
        assert record == path.read_text(), f"{name}: CLI JSON changed (see golden/cli/{name}.txt)"
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(outputs)


def test_every_json_output_is_pristine(workspace: Path, tht: Callable[..., Result]) -> None:
    """Under --json, stdout holds exactly one JSON document, errors included."""
    for argv in (
        ("session", "new", "Quante ablazioni nel 2023?"),
        ("session", "list"),
        ("session", "status", "NOPE"),
        ("ledger", "verify", "NOPE"),
        ("no-such-command",),
    ):
        done = tht(*argv, "--json")
        json.loads(done.stdout)
        assert done.stdout.count("\n") == 1
