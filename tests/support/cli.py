"""The real ``tht`` CLI as a subprocess, for the tests that exercise it end to end.

Each call runs ``python -m tht`` in ``cwd`` with its own ``THT_HOME`` under that folder (no
user config of the machine leaks in) and without ``THT_WORKSPACE``, ``THT_SESSION`` or
``THT_ACTOR`` from the environment the tests run in (the workspace is the one ``cwd`` or
``--workspace`` names; a session or actor is the test's to give); ``env`` adds or overrides
variables, these three included; ``timeout`` (seconds) bounds a call that must not hang.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["run_tht"]


_NOT_INHERITED = ("THT_WORKSPACE", "THT_SESSION", "THT_ACTOR")


def run_tht(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    full.update({"THT_HOME": str(cwd / ".home"), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=full,
        timeout=timeout,
    )
