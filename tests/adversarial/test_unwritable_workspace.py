"""A workspace whose files the operating system will not let tht write: the filesystem store is
an unavailable dependency (exit 6), reported in one line naming the path and the OS reason, with
nothing written — no session folder left behind, no torn tail or unanchored line in a ledger.

Through the real CLI, on the real filesystem, as root (CI) and as a user alike:

- an immutable folder or file: ``chattr +i`` as root (root ignores permission bits), read-only
  permission bits otherwise;
- a file size limit (``RLIMIT_FSIZE``, which binds root too): the kernel writes up to the limit
  and refuses the rest with ``EFBIG``, so an append is cut short half-way through its batch —
  what a full disk does — and must be taken back.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_tht
from tests.support.store_errors import assert_unavailable, workspace_files

QUESTION = "Quanti ricoveri nel 2024?"
REASONS = {"EPERM", "EACCES"}  # chattr +i: EPERM; permission bits: EACCES
_NOT_INHERITED = ("THT_WORKSPACE", "THT_SESSION", "THT_ACTOR")  # as tests.support.cli


def _run_limited(root: Path, *args: str, file_size: int) -> subprocess.CompletedProcess[str]:
    """``tht ARGS --workspace ROOT --json`` as ``run_tht`` runs it, with ``RLIMIT_FSIZE`` set in
    the child (Python ignores ``SIGXFSZ``: a write past the limit fails with ``EFBIG``)."""
    cwd = root.parent
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env["THT_HOME"] = str(cwd / ".home")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return subprocess.run(
        [sys.executable, "-m", "tht", *args, "--workspace", str(root), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        preexec_fn=limit,
        timeout=120,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    done = run_tht("workspace", "init", "ws", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "ws"


def _tht(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tht(*args, "--workspace", str(root), cwd=root.parent)


def _new_session(root: Path) -> str:
    done = _tht(root, "session", "new", QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["session"])


@contextlib.contextmanager
def _immutable(path: Path) -> Iterator[None]:
    """``path`` cannot be written (nor, for a folder, anything created in it) until the end."""
    if os.geteuid() != 0:
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], check=False).returncode:
        pytest.skip("root ignores permission bits, and this file system has no chattr +i")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def _verified(root: Path, session: str) -> int:
    """``tht ledger verify`` is ok; the number of events."""
    done = _tht(root, "ledger", "verify", session)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.startswith("ok: "), done.stdout
    return int(done.stdout.split()[1])


def _no_sessions(root: Path) -> None:
    listed = _tht(root, "session", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    assert list((root / "sessions").iterdir()) == []


# ---------------------------------------------------------------------------- session new


def test_session_new_in_an_immutable_sessions_folder_exits_6_and_writes_nothing(
    root: Path,
) -> None:
    before = workspace_files(root)
    with _immutable(root / "sessions"):
        done = _tht(root, "session", "new", QUESTION, "--json")
        plain = _tht(root, "session", "new", QUESTION)
    assert done.stderr.startswith(f"error: cannot create session folder {root}/sessions/")
    folder = Path(json.loads(done.stdout)["error"]["details"]["path"])
    assert folder.parent == root / "sessions"
    assert_unavailable(done, folder, REASONS)
    assert plain.returncode == 6 and plain.stdout == ""
    assert len(plain.stderr.strip().splitlines()) == 1
    assert workspace_files(root) == before
    _no_sessions(root)
    assert _verified(root, _new_session(root)) > 0  # writable again: it works


def test_a_session_folder_whose_workflow_cannot_be_written_is_removed_again(root: Path) -> None:
    before = workspace_files(root)
    done = _run_limited(root, "session", "new", QUESTION, file_size=512)  # < workflow.yaml
    details = json.loads(done.stdout)["error"]["details"]
    assert details["path"].endswith("/workflow.yaml")
    assert_unavailable(done, Path(details["path"]), {"EFBIG"})
    assert workspace_files(root) == before
    _no_sessions(root)


def test_a_session_whose_first_batch_is_cut_short_is_removed_again(root: Path) -> None:
    """The workflow snapshot is written, the first ledger batch is not (half of it reached the
    file): the ledger is cut back and the folder removed, so ``session list`` still works."""
    first = _new_session(root)
    folder = root / "sessions" / first
    limit = (folder / "workflow.yaml").stat().st_size + 64
    question = ("Ricoveri da 1 € a 2 € o da 3 € a 4 €? " * 105).strip()  # < 4000 characters
    assert len(question.encode()) > limit  # the session_created line alone passes the limit
    before = workspace_files(root)
    done = _run_limited(root, "session", "new", question, file_size=limit)
    details = json.loads(done.stdout)["error"]["details"]
    assert details["path"].endswith("/ledger.jsonl")
    assert_unavailable(done, Path(details["path"]), {"EFBIG"})
    assert not Path(details["path"]).parent.exists()
    assert workspace_files(root) == before
    listed = _tht(root, "session", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [s["session"] for s in json.loads(listed.stdout)] == [first]


# ---------------------------------------------------------------------------- appends


@pytest.mark.parametrize("name", ["ledger.jsonl", "ledger.head"])
def test_an_append_to_an_immutable_ledger_or_anchor_exits_6_and_writes_nothing(
    root: Path, name: str
) -> None:
    session = _new_session(root)
    folder = root / "sessions" / session
    events = _verified(root, session)
    before = workspace_files(root)
    with _immutable(folder / name):
        done = _tht(root, "session", "pause", session, "--as", "human:ann", "--json")
    assert_unavailable(done, folder / name, REASONS)
    assert workspace_files(root) == before
    assert _verified(root, session) == events
    again = _tht(root, "session", "pause", session, "--as", "human:ann")
    assert again.returncode == 0, again.stderr
    assert _verified(root, session) == events + 1


def test_an_append_cut_short_half_way_is_taken_back_and_the_ledger_verifies(
    root: Path,
) -> None:
    """``EFBIG`` after part of the batch reached the file (as a full disk would): the error
    path cuts the ledger back, so no torn tail is introduced and the count is unchanged."""
    session = _new_session(root)
    folder = root / "sessions" / session
    events = _verified(root, session)
    ledger = folder / "ledger.jsonl"
    before = workspace_files(root)
    # 40 bytes of the new line fit under the limit, the rest of it does not
    limit = ledger.stat().st_size + 40
    done = _run_limited(root, "session", "pause", session, "--as", "human:ann", file_size=limit)
    assert_unavailable(done, ledger, {"EFBIG"})
    after = workspace_files(root)
    caches = {k for k in set(before) | set(after) if k.startswith(".tht/cache")}
    assert {k: v for k, v in after.items() if k not in caches} == {
        k: v for k, v in before.items() if k not in caches
    }
    assert _verified(root, session) == events
    logged = _tht(root, "session", "log", session, "--json")
    assert len(json.loads(logged.stdout)) == events
    again = _tht(root, "session", "pause", session, "--as", "human:ann")
    assert again.returncode == 0, again.stderr
    assert _verified(root, session) == events + 1


def test_caches_that_cannot_be_written_stay_silent(root: Path) -> None:
    """The status cache and the compiled workflow cache are optimisations: a cache folder that
    cannot be written changes nothing a command reports."""
    cache = root / ".tht" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(cache)
    cache.mkdir()
    with _immutable(cache):
        session = _new_session(root)
        paused = _tht(root, "session", "pause", session, "--as", "human:ann")
        status = _tht(root, "session", "status", session, "--json")
    assert (paused.returncode, paused.stderr) == (0, ""), paused.stderr
    assert status.returncode == 0 and status.stderr == "", status.stderr
    assert json.loads(status.stdout)["lifecycle"] == "paused"
    assert list(cache.iterdir()) == []
