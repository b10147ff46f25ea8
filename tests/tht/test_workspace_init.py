"""``tht workspace init``: every OS error a user can cause exits 2 naming the path, and leaves
nothing half-created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _init(path: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(cwd / ".home")
    return subprocess.run(
        [sys.executable, "-m", "tht", "workspace", "init", path, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
        timeout=60,
    )


def _refused(done: subprocess.CompletedProcess[str], path: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and path in done.stderr
    assert json.loads(done.stdout)["error"]["exit_code"] == 2
    return done.stderr


def test_a_file_in_the_path_exits_2(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    for path in (str(tmp_path / "a-file" / "sub"), str(tmp_path / "a-file")):
        assert "not a folder" in _refused(_init(path, tmp_path), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.parametrize("path", ["/proc/x", "/proc/self/tht-ws", "/sys/tht-ws"])
def test_a_virtual_file_system_exits_2(tmp_path: Path, path: str) -> None:
    assert "virtual file system" in _refused(_init(path, tmp_path), path)


def test_a_failure_half_way_removes_what_was_created(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "evidence").write_text("a file where evidence/ belongs")  # sessions/ comes first
    message = _refused(_init(str(root), tmp_path), str(root))
    assert "evidence" in message
    assert sorted(p.name for p in root.iterdir()) == ["evidence"]
    fresh = tmp_path / "new" / "deeper" / "ws"
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "deeper").write_text("x")
    _refused(_init(str(fresh), tmp_path), str(fresh))
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["deeper"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_permission_denied_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        path = str(locked / "ws")
        assert "permission denied" in _refused(_init(path, tmp_path), path)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_init_still_succeeds_and_is_idempotent(tmp_path: Path) -> None:
    first = _init(str(tmp_path / "a" / "b" / "ws"), tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["created"] is True
    again = _init(str(tmp_path / "a" / "b" / "ws"), tmp_path)
    assert json.loads(again.stdout)["created"] is False
    assert (tmp_path / "a" / "b" / "ws" / "workspace.yaml").is_file()
    assert not list((tmp_path / "a" / "b" / "ws").glob(".workspace.yaml.*"))
