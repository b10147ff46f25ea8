"""F7 is tht's own work (ARCHITECTURE §3.8): only ``module:core`` records ``result_verified``,
the stage completes only with a verification that is ok, and a failed one fails the stage and
blocks finalization (kernel/verification.py, kernel/outcomes.py, kernel/replay.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel.database.types import QueryResult, ResultColumn
from kernel.errors import PolicyError
from kernel.events import ProposedEvent
from kernel.outcomes import ModuleOutcome
from kernel.reviewer_tools import parse_proposal
from kernel.verification import (
    RESULT_SAMPLE,
    VERIFIER,
    plan_verification,
    plan_verification_failure,
)
from tests.golden import scenarios as sc
from tht.ownership import policy_for

SQL = b"SELECT 1;\n"


def _at_f7(tmp_path: Path) -> sc.Run:
    run = sc.make_kernel(tmp_path / "ws")
    sc.start(run)
    sc.through_f6(run)
    assert run.kernel.load(run.session).state.current_stage == "verification"
    return run


def _result(rows: int = 3, truncated: bool = False) -> QueryResult:
    return QueryResult(
        columns=(
            ResultColumn(name="hospital", type="TEXT"),
            ResultColumn(name="n", type="INTEGER"),
        ),
        rows=tuple((f"H{i}", i) for i in range(rows)),
        row_count=rows,
        truncated=truncated,
        elapsed_ms=12.3456,
        sha256="ab" * 32,
    )


def _files(run: sc.Run) -> dict[str, bytes]:
    folder = run.workspace.sessions_dir / run.session
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_tht_own_verification_completes_f7_with_the_sample(tmp_path: Path) -> None:
    run = _at_f7(tmp_path)
    outcome = plan_verification(SQL, _result(), limit=1000, sample_rows=2)
    applied = run.kernel.apply_outcome(run.session, "verification", outcome, actor=VERIFIER)
    assert applied.state.current_stage == "datamart"
    (verified,) = [d for d in applied.state.effective_decisions() if d.type == "result_verified"]
    payload = verified.event.payload
    assert verified.event.actor == "module:core"
    assert (payload.ok, payload.rows, payload.result_sha256) == (True, 3, "ab" * 32)  # type: ignore[attr-defined]
    sample = json.loads(run.kernel.artifact(run.session, RESULT_SAMPLE))
    assert sample["rows"] == [["H0", 0], ["H1", 1]]  # the first rows only
    assert sample["row_count"] == 3 and sample["columns"][1] == {"name": "n", "type": "INTEGER"}
    assert sample["sql_sha256"] == payload.sql_sha256  # type: ignore[attr-defined]


@pytest.mark.parametrize("actor", ["agent", "module:memory", "module:disambiguation"])
def test_nobody_but_the_verifier_records_result_verified(tmp_path: Path, actor: str) -> None:
    run = _at_f7(tmp_path)
    before = _files(run)
    forged = ModuleOutcome(
        status="completed",
        events=(ProposedEvent(type="result_verified", payload={"rows": 1, "ok": True}),),
    )
    with pytest.raises(PolicyError, match="tht stage run verification"):
        run.kernel.apply_outcome(run.session, "verification", forged, actor=actor)
    assert _files(run) == before


@pytest.mark.parametrize("actor", ["agent", VERIFIER])
def test_f7_never_completes_without_a_verification(tmp_path: Path, actor: str) -> None:
    run = _at_f7(tmp_path)
    before = _files(run)
    with pytest.raises(PolicyError, match="completes only with result_verified"):
        run.kernel.apply_outcome(
            run.session, "verification", ModuleOutcome(status="completed"), actor=actor
        )
    assert _files(run) == before


def test_a_failed_verification_cannot_complete_the_stage(tmp_path: Path) -> None:
    run = _at_f7(tmp_path)
    lie = ModuleOutcome(
        status="completed",
        events=(ProposedEvent(type="result_verified", payload={"rows": 0, "ok": False}),),
    )
    with pytest.raises(PolicyError, match="ok false"):
        run.kernel.apply_outcome(run.session, "verification", lie, actor=VERIFIER)


def test_a_failed_verification_fails_f7_and_blocks_finalization_until_it_runs_again(
    tmp_path: Path,
) -> None:
    run = _at_f7(tmp_path)
    failed = plan_verification_failure(SQL, code="timeout", reason="timed out after 50 ms")
    state = run.kernel.apply_outcome(run.session, "verification", failed, actor=VERIFIER).state
    assert state.stage("verification").state == "failed"  # type: ignore[union-attr]
    assert state.blocked
    (verified,) = [d for d in state.decisions if d.type == "result_verified"]
    assert verified.event.payload.ok is False  # type: ignore[attr-defined]
    assert "timed out" in verified.event.payload.reason  # type: ignore[attr-defined]
    with pytest.raises(PolicyError):
        run.kernel.finalize(run.session, actor=sc.H)
    again = plan_verification(SQL, _result(), limit=1000)
    state = run.kernel.apply_outcome(run.session, "verification", again, actor=VERIFIER).state
    assert state.stage("verification").state == "completed" and not state.blocked  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", ["auto", "confirm", "select"])
def test_an_agent_proposal_cannot_record_or_close_f7(tmp_path: Path, kind: str) -> None:
    run = _at_f7(tmp_path)
    loaded = run.kernel.load(run.session)
    step = loaded.workflow.step("verification")
    body: dict[str, object] = {"kind": kind}
    if kind == "auto":
        body["events"] = [{"type": "result_verified", "payload": {"rows": 1}}]
    if kind == "select":
        body["prompt"] = "ok?"
        body["options"] = [{"id": "ok", "label": "ok", "events": []}]
    proposal = parse_proposal(json.dumps(body).encode(), "p.json")
    with pytest.raises(PolicyError, match="tht's own work"):
        policy_for(step)(proposal, step, loaded.state)


def test_an_agent_may_still_ask_to_revise_the_sql_from_f7(tmp_path: Path) -> None:
    run = _at_f7(tmp_path)
    failed = plan_verification_failure(SQL, code="error", reason="no such column: x")
    run.kernel.apply_outcome(run.session, "verification", failed, actor=VERIFIER)
    loaded = run.kernel.load(run.session)
    step = loaded.workflow.step("verification")
    body = {"kind": "revision", "target": "sql", "reason": "the SQL fails: no such column x"}
    proposal = parse_proposal(json.dumps(body).encode(), "p.json")
    outcome = policy_for(step)(proposal, step, loaded.state)
    applied = run.kernel.apply_outcome(
        run.session, "verification", outcome, actor="agent", loaded=loaded
    )
    assert any(type(e).__name__ == "RevisionRequested" for e in applied.events)


def test_a_workflow_whose_step_records_another_modules_decision_is_refused(tmp_path: Path) -> None:
    from kernel.errors import UsageError
    from kernel.workflow import default_workflow_path, load_workflow_bytes

    text = default_workflow_path().read_text()
    tampered = text.replace(
        "  - id: verification\n    display: F7\n    owner: core",
        "  - id: verification\n    display: F7\n    owner: datamart",
    )
    assert tampered != text
    with pytest.raises(UsageError, match="must be owned by that module"):
        load_workflow_bytes(tampered.encode(), "workflow.yaml")


def test_result_verified_is_never_a_review_option(tmp_path: Path) -> None:
    from kernel.events import ReviewOptionPayload
    from kernel.outcomes import ReviewRequest

    run = _at_f7(tmp_path)
    option = ReviewOptionPayload(
        id="ok",
        label="it is verified",
        events=(ProposedEvent(type="result_verified", payload={"rows": 1}),),
    )
    outcome = ModuleOutcome(
        status="awaiting_review",
        review=ReviewRequest(kind="select", prompt="Verified?", options=(option,)),
    )
    before = _files(run)
    with pytest.raises(PolicyError, match="only module:core asks its reviews"):
        run.kernel.apply_outcome(run.session, "verification", outcome, actor="agent")
    with pytest.raises(PolicyError, match="not offered for review"):
        run.kernel.apply_outcome(run.session, "verification", outcome, actor="module:core")
    assert _files(run) == before
