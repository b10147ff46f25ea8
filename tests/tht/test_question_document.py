"""F3's ``question.md`` is rendered by tht from the session's decisions (issue 14 item 7): byte-
stable, refused from an agent's proposal, and never rendered without a rewritten question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel import events as ev
from kernel.errors import PolicyError
from modules.disambiguation.question_document import render_question_document
from tests.golden import scenarios as sc

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "disambiguation" / "question.md"


def _through_f3_decisions(tmp_path: Path) -> sc.Run:
    run = sc.make_kernel(tmp_path / "ws")
    sc.start(run)
    sc.stage_by_select(
        run,
        "disambiguation",
        "concept_clarified",
        "ablazione",
        meaning="procedure.flag_ablazione = 1",
        target="procedure.flag_ablazione",
    )
    sc.stage_by_select(
        run, "disambiguation", "value_grounded", "2023", value="2023", column="ricoveri.anno"
    )
    sc.stage_by_select(
        run,
        "disambiguation",
        "ambiguity_open",
        None,
        question="per ospedale: admitting or discharging hospital?\nSECOND LINE",
        options=["ricoveri.ospedale_id", "dimissioni.ospedale_id"],
    )
    sc.close(run, "disambiguation")
    run.kernel.skip(run.session, "memory_recall", actor=sc.H, reason="no memory")
    sc.stage_by_select(
        run,
        "rewriting",
        "question_rewritten",
        None,
        question="Ablation procedures (flag) in 2023 per hospital",
        assumptions=["per hospital = the admitting hospital"],
    )
    return run


def test_the_document_is_byte_stable_and_names_every_decision(
    tmp_path: Path, update_golden: bool
) -> None:
    run = _through_f3_decisions(tmp_path)
    state = run.kernel.load(run.session).state
    document = render_question_document(state)
    assert document == render_question_document(state)  # a pure function of the state
    text = document.decode("utf-8")
    assert text.startswith("# Question\n\n**Asked.** " + sc.QUESTION)
    assert "procedure.flag_ablazione = 1 → `procedure.flag_ablazione`" in text
    assert "**2023** → `ricoveri.anno`" in text
    assert "- per hospital = the admitting hospital" in text
    assert "admitting or discharging hospital? SECOND LINE (readings:" in text  # one line
    if update_golden:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_bytes(document)
    assert document == GOLDEN.read_bytes()


def test_a_retracted_clarification_is_not_in_the_document(tmp_path: Path) -> None:
    run = sc.make_kernel(tmp_path / "ws")
    sc.start(run)
    sc.stage_by_select(run, "disambiguation", "concept_clarified", "ablazione", meaning="flag")
    clarified = run.kernel.load(run.session).state.effective_decisions()[-1].seq
    run.kernel.retract(run.session, clarified, actor=sc.H, reason="not the flag")
    sc.close(run, "disambiguation")
    run.kernel.skip(run.session, "memory_recall", actor=sc.H, reason="no memory")
    sc.stage_by_select(run, "rewriting", "question_rewritten", None, question="q")
    text = render_question_document(run.kernel.load(run.session).state).decode()
    assert "ablazione" not in text and "## Clarified concepts\n\n- none" in text


def test_no_rewritten_question_no_document(tmp_path: Path) -> None:
    run = sc.make_kernel(tmp_path / "ws")
    sc.start(run)
    with pytest.raises(PolicyError, match="question_rewritten first"):
        render_question_document(run.kernel.load(run.session).state)


def test_an_applied_memory_is_a_clarified_concept(tmp_path: Path) -> None:
    run = sc.make_kernel(tmp_path / "ws")
    sc.start(run)
    sc.f1(run)
    option = ev.ReviewOptionPayload(
        id="m",
        label="ablazione",
        events=(
            ev.ProposedEvent(
                type="memory_applied",
                subject="ablazione",
                payload={
                    "memory_id": "mem-0123456789abcdef",
                    "kind": "memory",
                    "meaning": "the flag",
                    "target": "procedure.flag_ablazione",
                    "source_session": "S1",
                    "source_seq": 9,
                },
            ),
        ),
    )
    from kernel.outcomes import ModuleOutcome, ReviewRequest

    outcome = ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(kind="decide", prompt="Recalled", options=(option,), closes=True),
    )
    seq = sc._review_seq(
        run.kernel.apply_outcome(run.session, "memory_recall", outcome, actor="module:memory")
    )
    run.kernel.answer(run.session, seq, actor=sc.H, choose=("m",))
    sc.stage_by_select(run, "rewriting", "question_rewritten", None, question="q")
    text = render_question_document(run.kernel.load(run.session).state).decode()
    assert "memory mem-0123456789abcdef, from session S1 seq 9" in text


def test_the_agent_cannot_write_question_md(tmp_path: Path) -> None:
    """Through the CLI: a proposal carrying question.md is refused (exit 5), nothing written;
    the confirm gets the rendered document."""
    import os
    import subprocess
    import sys

    ws = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_WORKSPACE=str(ws), THT_HOME=str(tmp_path / "home"))

    def tht(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tht", *args, "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    def propose(body: dict[str, object]) -> subprocess.CompletedProcess[str]:
        path = tmp_path / "p.json"
        path.write_text(json.dumps(body))
        return tht("propose", "rewriting", "--file", str(path))

    assert tht("workspace", "init", str(ws)).returncode == 0
    env["THT_SESSION"] = json.loads(tht("session", "new", "Quante ablazioni nel 2023?").stdout)[
        "session"
    ]
    assert tht("stage", "skip", "disambiguation", "--reason", "x", "--as", sc.H).returncode == 0
    ledger = next((ws / "sessions").glob("*/ledger.jsonl"))
    before = ledger.read_bytes()
    forged = {"name": "question.md", "content": "# Everything was agreed\n"}
    for body in (
        {"kind": "confirm", "artifacts": [forged]},
        {
            "kind": "select",
            "prompt": "?",
            "options": [{"id": "a", "label": "a"}],
            "artifacts": [forged],
        },
    ):
        done = propose(body)
        assert done.returncode == 5, done.stdout + done.stderr
        assert "rendered by tht" in done.stderr
    done = propose({"kind": "confirm"})  # no rewritten question yet
    assert done.returncode == 5 and "question_rewritten first" in done.stderr
    assert ledger.read_bytes() == before
