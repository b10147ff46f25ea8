"""The two people in a signed workspace's shell, as the adversarial CLI tests run them.

- :func:`agent` — what an agent's shell runs: no controlling terminal, nothing on stdin, its
  own session (so ``/dev/tty`` cannot be opened), ``THT_*`` variables cleared;
- :func:`reviewer` — a person at a terminal (a pty), typing ``typed`` at the passphrase
  prompts: the only way a reviewer's key is unlocked (ARCHITECTURE §3.9).

Both run ``python -m tht`` from the repository, with the workspace, a home folder beside it for
the reviewer keys and a fixed clock (``THT_SEED`` too when ``seed`` is given).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tht.ptyrun import TerminalRun, run_in_terminal

__all__ = ["REPO", "agent", "env", "reviewer"]

REPO = Path(__file__).resolve().parents[2]


def env(ws: Path, *, seed: str | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    found = {
        **base,
        "THT_WORKSPACE": str(ws),
        "THT_HOME": str(ws.parent / "home"),
        "THT_CLOCK": "fixed:2026-01-01T00:00:00Z",
    }
    if seed is not None:
        found["THT_SEED"] = seed
    return found


def agent(
    ws: Path, *args: str, seed: str | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """What an agent's shell runs: no controlling terminal, nothing on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        env=env(ws, seed=seed),
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        timeout=timeout,
    )


def reviewer(
    ws: Path, *args: str, typed: tuple[str, ...], seed: str | None = None, timeout: float = 180
) -> TerminalRun:
    """A reviewer at a terminal, typing ``typed`` at its prompts."""
    return run_in_terminal(
        [sys.executable, "-m", "tht", *args],
        env=env(ws, seed=seed),
        cwd=REPO,
        typed=typed,
        timeout=timeout,
    )
