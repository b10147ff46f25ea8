"""README.md's "A 60-second tour" runs as written: pasted at the repository root, every command
succeeds up to the last one, which is refused as its comment says (F7 is not the current stage)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tour() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```sh\n", text.index("## A 60-second tour")) + len("```sh\n")
    return text[start : text.index("```\n", start)]


@pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "activate").is_file(), reason="the tour sources .venv (make)"
)
def test_the_readme_tour_runs_from_the_repository_root(tmp_path: Path) -> None:
    # a stand-in for the checkout (what the tour reads from it), so nothing lands in the real one
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in (".venv", "golden"):
        (checkout / name).symlink_to(ROOT / name)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(TMPDIR=str(scratch), THT_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        ["bash", "-e", "-c", _tour()],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # the last command alone is refused (exit 5); `set -e` stops at any earlier failure
    assert done.returncode == 5, done.stderr
    assert "ok (sqlite): 2 table(s)" in done.stdout  # my.sql exists and checks
    assert "awaiting_human (review 6)" in done.stdout  # the proposal file was found
    assert "ok: 10 events" in done.stdout  # ledger verify, the command before the last
    assert "stage verification is pending, not the current stage" in done.stderr
    assert sorted(p.name for p in checkout.iterdir()) == [".venv", "golden"]  # all in scratch
