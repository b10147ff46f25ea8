"""Finalization says what happened (issue 10, item 7): failed after-finalize hooks are reported
(human output and JSON) while finalization stands; ``report.md`` states the event count the
finalized ledger verifies at, renders decisions as Markdown and quotes the SQL artifacts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.golden import scenarios
from tht.commands.session import _finalized_text


def _hooks(root: Path) -> None:
    ok = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    bad = [sys.executable, "-c", "import sys; sys.exit(3)"]
    settings = root / "workspace.yaml"
    hooks = "".join(
        f"\n  - name: {name}\n    command: {json.dumps(cmd)}"
        for name, cmd in (("index", ok), ("notify", bad), ("mail", bad))
    )
    settings.write_text(
        settings.read_text().replace("after_finalize: []", f"after_finalize:{hooks}")
    )


@pytest.fixture
def finalized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, dict]:
    from tht.composition import open_app

    root = tmp_path / "ws"
    run = scenarios.make_kernel(root)
    _hooks(root)
    monkeypatch.delenv("THT_CLOCK", raising=False)
    run.kernel = open_app(root).kernel
    scenarios.start(run)
    scenarios.to_finalize(run)
    env = {k: v for k, v in os.environ.items() if k not in ("THT_ACTOR", "THT_CLOCK")}
    env.update(THT_WORKSPACE=str(root), THT_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tht",
            "session",
            "finalize",
            run.session,
            "--as",
            "human:ann",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return root, run.session, json.loads(done.stdout)


def test_finalize_reports_the_hooks_that_failed(finalized: tuple[Path, str, dict]) -> None:
    _, _, body = finalized
    assert body["lifecycle"] == "finalized"
    hooks = {h["task"]: h for h in body["after_finalize"]}
    # Memory's solved question first (always), then the workspace's hooks
    assert set(hooks) == {"memory:solved_question", "index", "notify", "mail"}
    assert hooks["memory:solved_question"]["status"] == "done"
    assert hooks["index"] == {"task": "index", "status": "done", "error": None}
    for name in ("notify", "mail"):
        assert hooks[name]["status"] == "retrying"
        assert "exited 3" in hooks[name]["error"]


def test_the_human_output_names_failures_and_the_retry() -> None:
    text = _finalized_text(
        "S1",
        9,
        [
            {"task": "index", "status": "done", "error": None},
            {"task": "notify", "status": "retrying", "error": "RuntimeError: sh exited 3"},
        ],
    )
    assert "finalized at seq 9" in text
    assert "1 of 2 done" in text
    assert "notify retrying: RuntimeError: sh exited 3" in text
    assert "tht outbox run" in text
    assert "outbox" not in _finalized_text("S1", 9, [])


def test_report_counts_the_verified_events_and_quotes_the_sql(
    finalized: tuple[Path, str, dict],
) -> None:
    from tht.composition import open_app

    root, session, _ = finalized
    app = open_app(root)
    report = app.kernel.artifact(session, "report.md").decode()
    verified = app.kernel.verify(session)
    assert verified.ok
    assert f"- Ledger: {verified.events} events" in report
    assert "```sql\nSELECT 1;\n```" in report
    assert "### `cte/1.sql`" in report and "a2023 AS (SELECT 1)" in report
    assert report.index("### `cte/1.sql`") < report.index("### `sql_final.sql`")
    decisions = report[report.index("## Decisions") : report.index("## Artifacts")]
    assert "{" not in decisions  # no raw JSON
    assert "- [" in decisions and "concept_clarified `ablazione`" in decisions
    assert "\n  - meaning: " in decisions
