"""``tht evidence prepare / status / resolve``: JSON shapes and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_tht

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evidence" / "sources"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    from kernel.workspace import init_workspace

    workspace, _ = init_workspace(tmp_path / "ws")
    for source in FIXTURES.iterdir():
        shutil.copy(source, workspace.sources_dir / source.name)
    return workspace.root


def test_prepare_status_resolve_round_trip(ws: Path) -> None:
    done = run_tht("evidence", "prepare", "--json", cwd=ws)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert len(body["created"]) == 19
    assert "evidence/manifest.json" in body["written"]

    status = json.loads(run_tht("evidence", "status", "--json", cwd=ws).stdout)
    assert status["units"] == 19
    assert status["publishable"] == 19
    assert status["manifest"]["up_to_date"] is True

    resolved = run_tht(
        "evidence", "resolve", "evidence:drg#1", "--json", "--workspace", str(ws), cwd=ws.parent
    )
    assert resolved.returncode == 0, resolved.stderr
    assert json.loads(resolved.stdout)["fragment"]["id"] == "evidence:drg#1"


def test_unknown_id_exits_3_and_a_bad_id_exits_2(ws: Path) -> None:
    run_tht("evidence", "prepare", cwd=ws)
    missing = run_tht("evidence", "resolve", "evidence:nope", "--json", cwd=ws)
    assert missing.returncode == 3
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"
    bad = run_tht("evidence", "resolve", "nope", cwd=ws)
    assert bad.returncode == 2
    assert "not an evidence id" in bad.stderr


def test_retire_and_relink_exclude_each_other(ws: Path) -> None:
    done = run_tht("evidence", "resolve", "evidence:drg", "--retire", "--relink", "a.md", cwd=ws)
    assert done.returncode == 2


def test_a_folder_that_is_not_a_workspace_exits_3(tmp_path: Path) -> None:
    done = run_tht("evidence", "status", cwd=tmp_path)
    assert done.returncode == 3
    assert "not a tht workspace" in done.stderr


def _publish_in(root: Path, **env: str) -> dict[str, object]:
    from kernel.workspace import init_workspace

    workspace, _ = init_workspace(root)
    for source in FIXTURES.iterdir():
        shutil.copy(source, workspace.sources_dir / source.name)
    extra = {"THT_HOME": str(root / ".home"), **env}
    run = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    run.update(extra)
    for args in (("evidence", "prepare"), ("evidence", "publish", "--json")):
        done = subprocess.run(
            [sys.executable, "-m", "tht", *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=root,
            env=run,
        )
        assert done.returncode == 0, done.stderr
    generation = json.loads(done.stdout)["generation"]
    assert isinstance(generation, dict)
    return generation


def test_publish_under_tht_clock_repeats_its_generation_id_and_time(tmp_path: Path) -> None:
    fixed = {"THT_CLOCK": "fixed:2026-01-02T03:04:05Z", "THT_SEED": "7"}
    first = _publish_in(tmp_path / "a", **fixed)
    second = _publish_in(tmp_path / "b", **fixed)
    assert first["created_at"] == "2026-01-02T03:04:05Z"
    assert first["id"] == second["id"] and str(first["id"]).startswith("g1-")
    assert first["created_at"] == second["created_at"]
    real = _publish_in(tmp_path / "c")  # the real clock and a random nonce
    assert real["id"] != first["id"] and not str(real["created_at"]).startswith("2026-01-02")
