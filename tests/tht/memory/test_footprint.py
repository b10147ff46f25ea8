"""Disk use of a workspace after a memory promotion and a reindex, and of the tests' copies of it.

Qdrant Edge preallocates ~200 MB of sparse files per shard; a copy that filled the holes made
every copied workspace ~220 MB (~20 GB per test run). Sizes are allocated blocks (``st_blocks``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.tht.memory.conftest import Prepared

MB = 1024 * 1024


def _allocated(root: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


@pytest.fixture
def sparse_files(tmp_path: Path) -> None:
    probe = tmp_path / "hole"
    with probe.open("wb") as handle:
        handle.truncate(8 * MB)
    if probe.stat().st_blocks * 512 >= MB:
        pytest.skip("this file system has no sparse files")


@pytest.mark.usefixtures("sparse_files")
def test_a_promoted_workspace_and_its_copy_stay_small_after_reindexes(
    prepared: Prepared, tmp_path: Path
) -> None:
    assert _allocated(prepared.promoted.root / ".tht" / "qdrant") < 5 * MB
    ws = prepared.promoted.copy(tmp_path / "ws")
    shard = ws.root / ".tht" / "qdrant"
    assert _allocated(shard) < 5 * MB  # the copy keeps the shard's holes
    assert ws.ok("memory", "reindex")["rebuilt"] is False
    shutil.rmtree(ws.root / ".tht" / "memory_index")  # the records gone: a full rebuild
    body = ws.ok("memory", "reindex")
    assert body["rebuilt"] is True and body["memories"] == 1 and body["solved"] == 1, body
    assert ws.ok("memory", "search", "ablazione")["results"], "the rebuilt index answers"
    assert _allocated(shard) < 5 * MB, _allocated(shard)
    assert _allocated(ws.root) < 10 * MB, _allocated(ws.root)
