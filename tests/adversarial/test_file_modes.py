"""Session files hold questions and SQL in clear: created private to the user (0600 / 0700)."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.golden import scenarios


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_session_folders_are_0700_and_their_files_0600(tmp_path: Path) -> None:
    run = scenarios.make_kernel(tmp_path / "ws")
    scenarios.happy_path(run)
    folder = run.workspace.sessions_dir / run.session
    assert _mode(run.workspace.sessions_dir) == 0o700
    assert _mode(folder) == 0o700
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert any(p.name == "ledger.jsonl" for p in files)
    assert any("objects" in p.parts for p in files)
    loose = {str(p.relative_to(folder)): oct(_mode(p)) for p in files if _mode(p) & 0o077}
    assert loose == {}
