"""Loggers cost nothing until --debug; with it, what I/O code swallowed reaches stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _tht(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env["THT_HOME"] = str(cwd / "home")
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_swallowed_cache_failure_is_shown_under_debug_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert _tht("workspace", "init", str(ws), cwd=tmp_path).returncode == 0
    created = _tht(
        "session", "new", "How many hospitals?", "--json", "--workspace", str(ws), cwd=tmp_path
    )
    assert created.returncode == 0, created.stderr
    status_dir = ws / ".tht" / "cache" / "status"
    for child in status_dir.iterdir():
        child.unlink()
    status_dir.rmdir()
    status_dir.write_text("a file where the cache folder was")  # every cache write now fails
    session = created.stdout.split('"session":"')[1].split('"')[0]
    quiet = _tht("session", "status", session, "--workspace", str(ws), cwd=tmp_path)
    assert quiet.returncode == 0 and "debug" not in quiet.stderr
    loud = _tht("session", "status", session, "--debug", "--workspace", str(ws), cwd=tmp_path)
    assert loud.returncode == 0
    assert "debug kernel.store.fs: status cache of" in loud.stderr


def test_logging_is_not_imported_on_the_status_path() -> None:
    modules = "tht.cli, kernel.store.fs, kernel.workflow_kernel"
    code = f"import sys, {modules}; print('logging' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
