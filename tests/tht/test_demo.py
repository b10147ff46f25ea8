"""``make demo`` works end to end: question to a finalized, verified session."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(folder / "home")
    env["THT_DEMO_DIR"] = "demo"  # relative to the run's folder: the same text in both runs
    return env


def _run_demo(folder: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tht.demo"],
        env=_env(folder),
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("demo-run")
    return folder, _run_demo(folder)


# random by design: the reviewer key (tht reviewer add), and the hashes that chain over the
# signatures made with it (a head, a report's head)
_RANDOM = (
    re.compile(r"^(  key id: +)\S+$", re.M),
    re.compile(r"^(  public key: +)\S+$", re.M),
    re.compile(r"(head `?)[0-9a-f]{64}"),
    # a measurement: F7's elapsed time running the SQL on the demo database
    re.compile(r"(row\(s\) in )[0-9.]+(?= ms)"),
    re.compile(r"(elapsed ms: )[0-9.]+"),
)


def _masked(text: str) -> str:
    for pattern in _RANDOM:
        text = pattern.sub(r"\1<random>", text)
    return text


def test_two_demo_runs_print_the_same_output(
    demo: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    first = demo[1]
    second = _run_demo(tmp_path)
    assert "key id:" in first.stdout and "head " in first.stdout  # the masks apply
    assert "generation g1-" in first.stdout and "/tmp" not in first.stdout
    assert _masked(first.stdout).splitlines() == _masked(second.stdout).splitlines()
    assert _masked(first.stderr).splitlines() == _masked(second.stderr).splitlines()
    assert first.stdout.rstrip().endswith("the workspace is kept in THT_DEMO_DIR=demo")


def test_demo_without_demo_dir_does_not_name_the_folder_it_removed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tht import demo as module

    used: list[Path] = []

    def fake_run(self: module.Demo) -> None:  # the session itself is covered above
        self.workspace.mkdir()
        used.append(self.workspace)

    monkeypatch.delenv("THT_DEMO_DIR", raising=False)
    monkeypatch.setattr(module.Demo, "run", fake_run)
    module.main()
    out = capsys.readouterr().out
    assert not used[0].exists()
    assert str(used[0].parent) not in out and "temporary workspace was removed" in out


def test_demo_drives_a_session_to_a_verified_finalization(
    demo: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    folder, done = demo
    target = folder / "demo"
    env = _env(folder)
    out = done.stdout
    assert "decision retract" in out
    assert "(review" in out and "--approve" in out
    assert "finalized at seq" in out
    assert "activated: generation" in out  # evidence published
    assert "tht search pack --stage schema_linking" in out
    assert "mcp-technical-analyst" in out  # the routing hook's hint
    assert "memory_promotion" in out.split("$ tht analytics sessions")[1]
    assert "\n$ tht ledger verify\nok: " in out
    # every ledger the demo writes verifies, so no command warns that one does not
    assert "does not verify" not in out + done.stderr
    assert "warning:" not in out + done.stderr
    # the second session recalls the first one's promoted clarification and solved question
    second = out.split("# a second session on the same workspace")[1]
    assert "memory_recall: review" in second
    assert "option [m:mem-" in second and "option [q:sq-" in second
    assert "promoted by human:reviewer" in second
    sessions = sorted(
        (p for p in (target / "sessions").iterdir() if p.is_dir()), key=lambda p: p.name
    )
    assert len(sessions) == 2
    status = subprocess.run(
        [sys.executable, "-m", "tht", "session", "status", sessions[0].name, "--json"],
        env={**env, "THT_WORKSPACE": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    body = json.loads(status.stdout)
    assert body["lifecycle"] == "finalized"
    states = {s["id"]: s["state"] for s in body["stages"]}
    assert states["datamart"] == "skipped"
    assert states["memory_recall"] == "completed"  # nothing to recall: the memory was empty
    assert states["cte"] == states["sql"] == states["memory_promotion"] == "completed"
    types = [d["type"] for d in body["effective_decisions"]]
    assert "memory_nothing_recalled" in types and "memory_promoted" in types
    later = subprocess.run(
        [sys.executable, "-m", "tht", "session", "status", sessions[1].name, "--json"],
        env={**env, "THT_WORKSPACE": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    applied = [
        d for d in json.loads(later.stdout)["effective_decisions"] if d["type"] == "memory_applied"
    ]
    assert len(applied) == 1 and applied[0]["subject"] == "ablazione"
    log = subprocess.run(
        [sys.executable, "-m", "tht", "session", "log", sessions[0].name, "--json"],
        env={**env, "THT_WORKSPACE": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    types = [e["type"] for e in json.loads(log.stdout)]
    assert "decision_retracted" in types
    assert types.count("evidence_consulted") == 2
    assert "revision_requested" in types and "stage_reopened" in types
