"""One atomic write for the whole project (kernel/atomic.py), and no other."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from kernel.atomic import atomic_write

ROOT = Path(__file__).resolve().parents[2]


def test_the_file_is_replaced_whole_with_the_mode_asked(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "file.bin"
    atomic_write(target, b"one", mode=0o600, dir_mode=0o700)
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    atomic_write(target, b"two", durable=False)
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # None keeps the replaced file's mode
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.bin"]


def test_exclusive_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "key"
    atomic_write(target, b"first", exclusive=True)
    with pytest.raises(FileExistsError):
        atomic_write(target, b"second", exclusive=True)
    assert target.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["key"]


def test_a_failure_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"old")

    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_no_other_module_writes_its_own_temporary_and_renames_it() -> None:
    pattern = re.compile(r"os\.replace\(|\btmp\w*\.replace\(|\.tmp[\"']")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("kernel", "modules", "tht")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != ROOT / "kernel" / "atomic.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == [], "use kernel.atomic.atomic_write"
