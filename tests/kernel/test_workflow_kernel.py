"""The kernel shell: artifacts, the status cache, outbox hooks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kernel.clock import FixedClock
from kernel.errors import IntegrityError
from kernel.outbox import Outbox
from tests.golden import scenarios


@pytest.fixture
def finished(tmp_path: Path) -> scenarios.Run:
    run = scenarios.make_kernel(tmp_path / "ws")
    scenarios.happy_path(run)
    return run


def test_artifacts_are_content_addressed_and_verified(finished: scenarios.Run) -> None:
    k, s = finished.kernel, finished.session
    assert k.artifact(s, "question.md") == b"# Ablations in 2023\n"
    current = finished.workspace.sessions_dir / s / "artifacts" / "question.md"
    current.write_bytes(b"tampered")
    assert k.artifact(s, "question.md") == b"# Ablations in 2023\n"  # restored from objects/
    assert current.read_bytes() == b"# Ablations in 2023\n"
    objects = list((finished.workspace.sessions_dir / s / "objects").rglob("*"))
    for obj in objects:
        if obj.is_file():
            obj.write_bytes(b"corrupt")
    current.unlink()
    with pytest.raises(IntegrityError, match="altered"):
        k.artifact(s, "question.md")


def test_report_is_deterministic_and_recorded(finished: scenarios.Run) -> None:
    report = finished.kernel.artifact(finished.session, "report.md").decode()
    assert report.startswith(f"# Session {finished.session}")
    assert "## Decisions" in report and "concept_clarified `ablazione`" in report
    state = finished.kernel.load(finished.session).state
    assert state.effective_artifact("report.md") is not None
    assert state.lifecycle == "finalized"


def test_status_cache_is_used_and_invalidated_by_a_changed_ledger(tmp_path: Path) -> None:
    run = scenarios.make_kernel(tmp_path / "ws")
    scenarios.start(run)
    scenarios.f1(run)
    k, s = run.kernel, run.session
    state = k.load(s).state
    cache = run.workspace.cache_dir / "status" / f"{s}.msgpack"
    assert cache.is_file()
    assert k.load(s).state == state
    ledger = run.workspace.sessions_dir / s / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines[:-2]))  # history rewritten under the cache
    shown, problems = k.load_for_display(s)
    assert shown.state.last_seq == state.last_seq - 2  # the cache is not trusted
    assert [p.code for p in problems] == ["head_anchor"]  # and status says so
    with pytest.raises(IntegrityError):  # policy refuses the rewritten history
        k.load(s)


def test_after_finalize_hooks_run_through_the_outbox_with_retry(tmp_path: Path) -> None:
    run = scenarios.make_kernel(tmp_path / "ws")
    outbox = Outbox(run.workspace.state_dir / "outbox")
    run.kernel.outbox = outbox
    run.kernel.after_finalize = ("notify",)
    scenarios.happy_path(run)
    ledger = (run.workspace.sessions_dir / run.session / "ledger.jsonl").read_bytes()
    calls: list[str] = []

    def flaky(item: object) -> None:
        calls.append("x")
        if len(calls) == 1:
            raise RuntimeError("webhook down")

    clock = FixedClock()
    first = outbox.run({"notify": flaky}, clock)
    assert first.retrying == (f"{run.session}.notify",)
    assert outbox.run({"notify": flaky}, clock).not_due == (f"{run.session}.notify",)
    second = outbox.run({"notify": flaky}, clock, force=True)
    assert second.done == (f"{run.session}.notify",)
    item = outbox.items()[0]
    assert item.status == "done" and item.attempts == 2
    assert (run.workspace.sessions_dir / run.session / "ledger.jsonl").read_bytes() == ledger


def test_outbox_gives_up_after_max_attempts(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox", max_attempts=2)
    outbox.enqueue("S1", ("notify",), FixedClock())

    def broken(item: object) -> None:
        raise OSError("nope")

    clock = FixedClock()
    outbox.run({"notify": broken}, clock, force=True)
    result = outbox.run({"notify": broken}, clock, force=True)
    assert result.failed == ("S1.notify",)
    assert outbox.items()[0].last_error == "OSError: nope"


def test_workspace_after_finalize_command_receives_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tht.composition import open_app

    root = tmp_path / "ws"
    run = scenarios.make_kernel(root)
    out = tmp_path / "hook.json"
    settings = root / "workspace.yaml"
    settings.write_text(
        settings.read_text().replace(
            "after_finalize: []",
            "after_finalize:\n  - name: notify\n    command: "
            + json.dumps(
                [
                    sys.executable,
                    "-c",
                    f"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())",
                ]
            ),
        )
    )
    monkeypatch.delenv("THT_CLOCK", raising=False)
    app = open_app(root)
    run.kernel = app.kernel
    scenarios.start(run)
    scenarios.to_finalize(run)
    app.finalize(run.session, actor="human:ann")
    result = app.run_outbox(session=run.session)
    # the workspace's hook and Memory's solved question
    assert sorted(result.done) == [  # type: ignore[attr-defined]
        f"{run.session}.command-notify",
        f"{run.session}.memory-solved_question",
    ]
    summary = json.loads(out.read_text())
    assert summary["session"] == run.session
    assert summary["report"].endswith("artifacts/report.md")


CUSTOM = """\
version: 1
name: with-best-effort
stages:
  - id: one
    display: F1
    owner: core
    emits: [concept_clarified]
    completion: review_required
  - id: two
    display: F2
    owner: core
    emits: [result_verified]
    completion: automatic
extension_points:
  - id: after_one
    after: one
    contributions:
      - id: hints
        owner: routing
        policy: best_effort
        emits: [ambiguity_open]
        completion: automatic
      - id: checks
        owner: core
        policy: required
        emits: [result_verified]
        completion: automatic
        skip: human
"""


def _custom_kernel(tmp_path: Path):
    from kernel.clock import SeededIds
    from kernel.outcomes import Failure, ModuleOutcome
    from kernel.store.fs import FileSystemStore
    from kernel.workflow_kernel import WorkflowKernel
    from kernel.workspace import init_workspace

    ws, _ = init_workspace(tmp_path / "ws")
    (ws.root / "workflow.yaml").write_text(CUSTOM)
    kernel = WorkflowKernel(
        FileSystemStore(ws.sessions_dir, ws.cache_dir),
        clock=FixedClock(),
        ids=SeededIds(1),
        workflow_path=ws.root / "workflow.yaml",
    )
    session = kernel.create_session("q?", actor="agent").session
    scenarios_run = scenarios.Run(kernel, ws, session)
    scenarios.close(scenarios_run, "one")
    return kernel, session, ModuleOutcome, Failure


def test_failed_best_effort_contribution_warns_and_does_not_block(tmp_path: Path) -> None:
    kernel, session, ModuleOutcome, Failure = _custom_kernel(tmp_path)
    failed = kernel.apply_outcome(
        session,
        "hints",
        ModuleOutcome(status="failed", failure=Failure(code="timeout", message="no hints")),
        actor="module:routing",
    )
    state = failed.state
    assert not state.blocked
    assert [(w.stage, w.code) for w in state.warnings] == [("hints", "timeout")]
    assert state.stage("hints").state == "failed"  # type: ignore[union-attr]
    assert state.current_stage == "checks"
    assert [e.__struct_config__.tag for e in failed.events][-1] == "contribution_failed"


def test_failed_required_contribution_blocks_until_skipped_by_a_human(tmp_path: Path) -> None:
    kernel, session, ModuleOutcome, Failure = _custom_kernel(tmp_path)
    kernel.apply_outcome(
        session,
        "hints",
        ModuleOutcome(status="failed", failure=Failure(code="timeout", message="no hints")),
        actor="module:routing",
    )
    state = kernel.apply_outcome(
        session,
        "checks",
        ModuleOutcome(status="failed", failure=Failure(code="x", message="broken")),
        actor="agent",
    ).state
    assert state.blocked and state.current_stage == "checks"
    skipped = kernel.skip(session, "checks", actor="human:ann", reason="checked by hand").state
    assert not skipped.blocked
    assert skipped.current_stage == "two"
