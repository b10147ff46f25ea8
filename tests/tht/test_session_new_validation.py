"""``session new`` checks everything it needs before it writes anything (issue 10, items 1, 2, 5):
a bad ``workspace.yaml``, an unavailable store or a question over the limit is exit 2 and
leaves the workspace exactly as it was — no session folder, no ledger, no cache file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel import transitions
from modules.disambiguation import admission

QUESTION = "How many ablation procedures were performed in 2023?"


def _env(root: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("THT_ACTOR", "THT_SESSION", "THT_STORE_URL")
    }
    env.update(
        THT_WORKSPACE=str(root),
        THT_CLOCK="fixed:2026-01-01T00:00:00Z",
        THT_SEED="7",
        THT_HOME=str(root.parent / "home"),
    )
    return env


def _tht(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        env=_env(root),
        capture_output=True,
        text=True,
        check=False,
    )


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    assert _tht(root, "workspace", "init", str(root)).returncode == 0
    return root


def _edit(root: Path, old: str | None, new: str) -> None:
    path = root / "workspace.yaml"
    text = path.read_text()
    if old is None:
        text += new
    else:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("languages: [it, en]", "languages: [it, fr]", "languages"),
        (None, "\nbogus_setting: 1\n", "bogus_setting"),
        ("version: 1", "version: 2", "version"),
        (None, "\nstore: {kind: bogus}\n", "store.kind"),
        (None, "\nstore:\n  kind: postgres\n", "store.kind"),
    ],
)
def test_a_bad_workspace_file_creates_no_session(
    ws: Path, old: str | None, new: str, field: str
) -> None:
    _edit(ws, old, new)
    before = _files(ws)
    done = _tht(ws, "session", "new", QUESTION, "--json")
    assert done.returncode == 2, done.stderr
    assert "workspace.yaml" in done.stderr and field in done.stderr
    assert _files(ws) == before
    assert list((ws / "sessions").iterdir()) == []


@pytest.mark.parametrize("store", ["store: {kind: postgres}", "store:\n  kind: 'postgres'  # pg"])
def test_the_postgres_store_without_its_url_variable_is_a_configuration_error_everywhere(
    ws: Path, store: str
) -> None:
    # a postgres store is selected, never a silent fs fallback: without $THT_STORE_URL every
    # command stops at exit 2 naming the variable (never a value), nothing written
    created = _tht(ws, "session", "new", QUESTION, "--json")
    assert created.returncode == 0, created.stderr
    session = json.loads(created.stdout)["session"]
    _edit(ws, None, f"\n{store}\n")
    before = _files(ws)
    for argv in (
        ("session", "new", QUESTION),
        ("session", "list"),
        ("session", "status", session),
        ("session", "log", session),
        ("session", "pause", session, "--as", "human:ann"),
    ):
        done = _tht(ws, *argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert "THT_STORE_URL" in done.stderr and "store.kind" in done.stderr
    assert _files(ws) == before


def test_an_unknown_store_kind_is_refused_by_status_too(ws: Path) -> None:
    _edit(ws, None, "\nstore: {kind: bogus, dsn_env: PG}\n")
    done = _tht(ws, "session", "list", "--json")
    assert done.returncode == 2
    assert "unknown store kind 'bogus'" in done.stderr


def test_store_kind_fs_is_accepted(ws: Path) -> None:
    _edit(ws, None, "\nstore:\n  kind: fs\n")
    assert _tht(ws, "session", "new", QUESTION).returncode == 0


def test_session_status_still_does_not_import_pydantic(ws: Path) -> None:
    session = json.loads(_tht(ws, "session", "new", QUESTION, "--json").stdout)["session"]
    probe = (
        "import sys\nfrom tht.cli import main\n"
        f"try:\n    main(['session', 'status', {session!r}, '--json'])\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n"
        "sys.stderr.write('PYDANTIC=' + str('pydantic' in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_env(ws), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "PYDANTIC=False" in done.stderr


def test_admission_and_the_kernel_share_one_question_limit() -> None:
    assert admission.MAX_QUESTION_CHARS is transitions.MAX_QUESTION_CHARS


@pytest.mark.parametrize("length", [transitions.MAX_QUESTION_CHARS + 1, 10_001])
def test_a_too_long_question_is_exit_2_with_nothing_written(ws: Path, length: int) -> None:
    question = ("ablazione " * (length // 10 + 1))[:length]
    assert len(question.strip()) == length
    before = _files(ws)
    done = _tht(ws, "session", "new", question, "--json")
    assert done.returncode == 2, done.stderr
    assert f"the limit is {transitions.MAX_QUESTION_CHARS}" in done.stderr
    assert _files(ws) == before


def test_a_question_at_the_limit_is_admitted(ws: Path) -> None:
    question = ("ablazione " * 401)[: transitions.MAX_QUESTION_CHARS - 1] + "x"
    assert len(question) == transitions.MAX_QUESTION_CHARS
    done = _tht(ws, "session", "new", question, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["admitted"] is True
