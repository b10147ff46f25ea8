"""What a refused command on a workspace store the OS will not let tht read or write looks like
(tests/adversarial/test_unwritable_workspace.py, test_unreadable_workspace.py): exit 6, one line
naming the path and the OS reason, the ``--json`` error object, nothing changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

__all__ = ["assert_unavailable", "workspace_files"]


def workspace_files(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) of the workspace."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def assert_unavailable(
    done: subprocess.CompletedProcess[str], path: Path, errnos: set[str]
) -> None:
    """Exit 6, one line on stderr naming ``path`` and the OS reason, and the ``--json`` error
    object with ``details.path``, ``details.reason`` and ``details.errno``."""
    assert done.returncode == 6, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot "), done.stderr
    assert str(path) in lines[0] and "nothing was changed" in lines[0], lines[0]
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    body = json.loads(done.stdout)["error"]
    assert set(body) == {"code", "exit_code", "message", "details"}
    assert (body["code"], body["exit_code"]) == ("unavailable", 6)
    assert lines[0] == f"error: {body['message']}"
    assert body["details"]["path"] == str(path)
    assert body["details"]["errno"] in errnos and body["details"]["reason"] in body["message"]
