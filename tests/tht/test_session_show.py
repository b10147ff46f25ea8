"""``tht session show``: the session document before finalization, byte for byte (golden)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.tht.conftest import Result
from tests.tht.test_cli_golden import SELECT

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "cli" / "session_show"


def _session(tht: Callable[..., Result], tmp_path: Path) -> str:
    """A fixed session: F1 answered then a decision retracted, F1 skipped, F2 skipped, an F3
    rewriting chosen and its question.md (rendered by tht) awaiting a confirm (an open review)."""
    select = tmp_path / "select.json"
    select.write_text(json.dumps(SELECT))
    session = str(tht("session", "new", "Quante ablazioni nel 2023?", "--json").json()["session"])
    review = tht("propose", "disambiguation", "--file", str(select), session, "--json").json()
    human = ("--as", "human:ann")
    for argv in (
        ("review", "answer", str(review["review"]), session, "--choose", "flag", *human),
        ("decision", "retract", "8", session, "--reason", "wrong", *human),
        ("stage", "skip", "disambiguation", session, "--reason", "clear", *human),
    ):
        assert tht(*argv).code == 0, argv
    rewrite = tmp_path / "rewrite.json"
    event = {"type": "question_rewritten", "payload": {"question": "Ablazioni 2023 per ospedale"}}
    rewrite.write_text(
        json.dumps(
            {
                "kind": "select",
                "prompt": "?",
                "options": [{"id": "q", "label": "q", "events": [event]}],
            }
        )
    )
    chosen = tht("propose", "rewriting", "--file", str(rewrite), session, "--json").json()
    assert (
        tht("review", "answer", str(chosen["review"]), session, "--choose", "q", *human).code == 0
    )
    confirm = tmp_path / "confirm.json"
    confirm.write_text(json.dumps({"kind": "confirm", "prompt": "Approve the rewritten question?"}))
    assert tht("propose", "rewriting", "--file", str(confirm), session).code == 0  # + question.md
    return session


def test_session_show_renders_the_document_golden(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path, update_golden: bool
) -> None:
    session = _session(tht, tmp_path)
    done = tht("session", "show", session)
    assert done.code == 0, done.stderr
    path = GOLDEN / "session_show.md"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(done.stdout)
    assert done.stdout == path.read_text(), "session show changed (see golden/cli/session_show/)"
    body = tht("session", "show", session, "--json").json()
    assert body == {"session": session, "markdown": done.stdout}
    assert "- [8] concept_clarified `ablazione` (disambiguation) by human:ann — **retracted**" in (
        done.stdout
    )
    assert "Ablazioni 2023 per ospedale" in done.stdout


def test_session_show_fences_sql_and_never_shows_a_tampered_artifact() -> None:
    from kernel.fold import ArtifactRecord
    from tests.tht.test_session_show import _state_with_artifacts
    from tht.session_document import render_session_document

    state = _state_with_artifacts(
        ArtifactRecord(
            name="sql_final.sql", stage="sql", seq=9, sha256="a" * 64, size=9, status="effective"
        ),
        ArtifactRecord(
            name="cte/1.sql", stage="cte", seq=8, sha256="b" * 64, size=3, status="effective"
        ),
    )
    text = render_session_document(
        state, "h" * 64, {"sql_final.sql": b"SELECT 1;"}, {"cte/1.sql": "sha256 mismatch"}
    )
    assert "```sql\nSELECT 1;\n```" in text
    assert "**Not verified:** sha256 mismatch" in text


def _state_with_artifacts(*records: object) -> object:
    import msgspec

    from kernel.fold import empty_state
    from kernel.workflow import load_workflow

    return msgspec.structs.replace(empty_state(load_workflow()), artifacts=records)
