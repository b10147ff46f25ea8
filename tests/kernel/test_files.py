"""kernel.files.read_regular: the one bounded, non-blocking read every reader of a named file
uses (sources, catalog pack, routing config, --file inputs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel.files import FileRefused, read_regular


def _reason(path: Path | str, **kw: object) -> str:
    with pytest.raises(FileRefused) as refused:
        read_regular(path, **kw)  # type: ignore[arg-type]
    return refused.value.reason


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular(path, limit=10) == b"x" * 10
    assert _reason(path, limit=9) == "too_large"


def test_fifos_devices_folders_and_missing_files_are_refused_without_blocking(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _reason(fifo, limit=100) == "not_regular"
    assert _reason("/dev/zero", limit=100) == "not_regular"
    assert _reason(tmp_path, limit=100) == "not_regular"
    assert _reason(tmp_path / "nope", limit=100) == "missing"


def test_a_symlink_is_refused_when_asked_and_followed_otherwise(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"secret")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert _reason(link, limit=100, follow_symlinks=False) == "symlink"
    assert read_regular(link, limit=100) == b"secret"
