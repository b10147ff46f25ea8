"""The real ``tht`` CLI as a subprocess, for the tests that exercise it end to end.

Each call runs ``python -m tht`` in ``cwd`` with its own ``THT_HOME`` under that folder (no
user config of the machine leaks in) and without ``THT_WORKSPACE`` (the workspace is the one
``cwd`` or ``--workspace`` names); ``env`` adds or overrides variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["run_tht"]


def run_tht(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "THT_HOME": str(cwd / ".home"), **(env or {})}
    full.pop("THT_WORKSPACE", None)
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=full,
    )
