"""A workspace whose store the operating system will not let tht read: a ledger, its anchor, a
workflow snapshot, a session folder or the sessions folder that exists but cannot be read is an
unavailable dependency (exit 6), reported in one line naming the path and the OS reason — never
"internal error" (exit 1, a bug) — with nothing written. What the docs define for a file that is
*missing* stays as it is: a missing ledger or anchor is an integrity problem (exit 7), a missing
session is not found (exit 3).

Through the real CLI, on the real filesystem, as root (CI) and as a user alike:

- permission bits (``chmod 000``): as a user they bind directly; root ignores them, so as root the
  CLI runs under ``setpriv`` without ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` (still uid
  0, so the interpreter under ``/root`` stays reachable, but a mode-000 file or folder is not);
- a file replaced by a folder (``EISDIR``), which binds root and users alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.errors import IntegrityError, UnavailableError
from kernel.ledger import Ledger
from kernel.store.fs import FileSystemStore
from tests.support.cli import run_tht
from tests.support.store_errors import assert_unavailable, workspace_files

QUESTION = "Quanti ricoveri nel 2024?"
_NOT_INHERITED = ("THT_WORKSPACE", "THT_SESSION", "THT_ACTOR")  # as tests.support.cli
_DAC = "-dac_override,-dac_read_search"
#: the commands every unreadable store must refuse with exit 6 (``{s}``: the session)
COMMANDS = (
    ("session", "status", "{s}"),
    ("session", "list"),
    ("ledger", "verify", "{s}"),
    ("review", "list", "{s}"),
    ("session", "pause", "{s}", "--as", "human:ann"),
)


def _blind_prefix() -> list[str]:
    """What makes a command subject to permission bits: nothing for a user; for root,
    ``setpriv`` dropping the capabilities that override them (skip where that is impossible)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root ignores permission bits, and there is no setpriv to drop that")
    prefix = [setpriv, "--bounding-set", _DAC, "--inh-caps", _DAC, "--"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode:
        pytest.skip(f"setpriv cannot drop CAP_DAC_OVERRIDE here: {probe.stderr!r}")
    return prefix


def _run(root: Path, *args: str, blind: bool = False) -> subprocess.CompletedProcess[str]:
    """``tht ARGS --workspace ROOT`` as ``run_tht`` runs it; ``blind``: subject to permission
    bits even as root."""
    cwd = root.parent
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env["THT_HOME"] = str(cwd / ".home")
    prefix = _blind_prefix() if blind else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "tht", *args, "--workspace", str(root)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    done = run_tht("workspace", "init", "ws", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "ws"


def _new_session(root: Path) -> str:
    done = _run(root, "session", "new", QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["session"])


@contextlib.contextmanager
def _unreadable(path: Path) -> Iterator[None]:
    """``path`` (a file or folder) has no permission bits until the end."""
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(0)
    try:
        yield
    finally:
        path.chmod(mode)


@contextlib.contextmanager
def _a_folder_instead(path: Path) -> Iterator[None]:
    """``path`` (a file) is replaced by an empty folder until the end."""
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    path.mkdir()
    try:
        yield
    finally:
        path.rmdir()
        aside.rename(path)


def _verified(root: Path, session: str) -> int:
    """``tht ledger verify`` is ok; the number of events."""
    done = _run(root, "ledger", "verify", session)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.startswith("ok: "), done.stdout
    return int(done.stdout.split()[1])


def _args(command: tuple[str, ...], session: str) -> list[str]:
    return [a.format(s=session) for a in command]


# ---------------------------------------------------------------------------- permission denied


@pytest.mark.parametrize(
    "target",
    ["ledger.jsonl", "ledger.head", "workflow.yaml", "session folder", "sessions folder"],
)
def test_a_store_that_cannot_be_read_exits_6_naming_the_path_for_every_command(
    root: Path, target: str
) -> None:
    session = _new_session(root)
    folder = root / "sessions" / session
    blocked = {
        "session folder": folder,
        "sessions folder": root / "sessions",
    }.get(target, folder / target)
    events = _verified(root, session)
    before = workspace_files(root)
    with _unreadable(blocked):
        results = {
            command: (
                _run(root, *_args(command, session), "--json", blind=True),
                _run(root, *_args(command, session), blind=True),
            )
            for command in COMMANDS
        }
    for command, (done, plain) in results.items():
        assert done.returncode == 6, (command, done.stdout, done.stderr)
        assert_unavailable(done, blocked, {"EACCES"})
        assert plain.returncode == 6 and plain.stdout == "", (command, plain.stderr)
        assert plain.stderr == done.stderr, command
    assert workspace_files(root) == before
    assert _verified(root, session) == events  # readable again: nothing was changed
    again = _run(root, "session", "pause", session, "--as", "human:ann")
    assert again.returncode == 0, again.stderr
    assert _verified(root, session) == events + 1


# ---------------------------------------------------------------------------- a folder in the way


@pytest.mark.parametrize("name", ["ledger.jsonl", "ledger.head"])
def test_a_ledger_or_anchor_that_became_a_folder_exits_6(root: Path, name: str) -> None:
    session = _new_session(root)
    path = root / "sessions" / session / name
    events = _verified(root, session)
    with _a_folder_instead(path):
        before = workspace_files(root)
        results = [_run(root, *_args(c, session), "--json") for c in COMMANDS]
        after = workspace_files(root)
    for done in results:
        assert_unavailable(done, path, {"EISDIR"})
    assert after == before
    assert _verified(root, session) == events


# ---------------------------------------------------------------------------- missing stays missing


def test_a_missing_ledger_or_anchor_is_still_an_integrity_problem(root: Path) -> None:
    """Missing is not unreadable (docs/security.md rule 3): exit 7, as before."""
    session = _new_session(root)
    folder = root / "sessions" / session
    (folder / "ledger.head").unlink()
    done = _run(root, "ledger", "verify", session, "--json")
    assert done.returncode == 7, (done.stdout, done.stderr)
    assert "head_anchor" in {p["code"] for p in json.loads(done.stdout)["problems"]}
    (folder / "ledger.jsonl").unlink()
    (folder / "ledger.jsonl").symlink_to(folder / "nowhere.jsonl")  # dangling: missing too
    for command in COMMANDS[2:]:
        done = _run(root, *_args(command, session), "--json")
        assert done.returncode == 7, (command, done.stdout, done.stderr)
        assert "missing_ledger" in done.stdout, done.stdout


def test_a_missing_session_is_still_not_found(root: Path) -> None:
    _new_session(root)
    absent = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    for command in (COMMANDS[0], COMMANDS[2], COMMANDS[3], COMMANDS[4]):
        done = _run(root, *_args(command, absent), "--json")
        assert done.returncode == 3, (command, done.stdout, done.stderr)


# ---------------------------------------------------------------------------- the store itself


@pytest.fixture
def store(tmp_path: Path) -> FileSystemStore:
    return FileSystemStore(tmp_path / "sessions", tmp_path / ".tht" / "cache")


def test_store_reads_of_a_path_that_is_a_folder_are_unavailable(
    store: FileSystemStore,
) -> None:
    """Objects, the workflow snapshot and the object listing: a folder where a file belongs is
    exit 6 naming it; an artifact copy (restored from ``objects/``) reads as absent."""
    session = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    store.create_session(session, b"name: w\n")
    folder = store.sessions_dir / session
    digest = store.put_object(session, b"content")
    obj = folder / "objects" / digest[:2] / digest
    with _a_folder_instead(obj):
        with pytest.raises(UnavailableError) as caught:
            store.get_object(session, digest)
        assert caught.value.details["path"] == str(obj)
        assert caught.value.details["errno"] == "EISDIR"
    assert store.get_object(session, digest) == b"content"
    (folder / "artifacts").mkdir()
    (folder / "artifacts" / "a.sql").mkdir()
    assert store.read_artifact(session, "a.sql") is None
    ledger = Ledger(folder / "ledger.jsonl", session)
    (folder / "ledger.jsonl").mkdir()
    for read in (ledger.read, ledger.tail, ledger.verify, ledger.first_event):
        with pytest.raises(UnavailableError) as caught:
            read()
        assert caught.value.details["path"] == str(folder / "ledger.jsonl"), read
    assert not isinstance(caught.value, IntegrityError)


def test_store_listing_an_unreadable_objects_folder_is_unavailable(
    store: FileSystemStore,
) -> None:
    """Copying a session must never silently miss objects it cannot list (``glob`` would skip
    a folder it may not read)."""
    session = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    store.create_session(session, b"name: w\n")
    store.put_object(session, b"content")
    objects = store.sessions_dir / session / "objects"
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from kernel.errors import UnavailableError\n"
        "from kernel.store.fs import FileSystemStore\n"
        "store = FileSystemStore(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "try:\n"
        "    print(json.dumps({'ids': store.object_ids(sys.argv[3])}))\n"
        "except UnavailableError as err:\n"
        "    print(json.dumps(err.to_json()))\n"
    )
    argv = [sys.executable, "-c", code, str(store.sessions_dir), str(store.cache_dir), session]
    with _unreadable(objects):
        done = subprocess.run(
            [*_blind_prefix(), *argv],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parents[2],
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    details = json.loads(done.stdout)["error"]["details"]
    assert (details["path"], details["errno"]) == (str(objects), "EACCES")
