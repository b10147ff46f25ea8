"""Qdrant Edge specifics: the folder, its lock, unreadable contents."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernel.vectors import (
    CollectionCorruptError,
    CollectionMissingError,
    CollectionSpec,
    VectorFilter,
    VectorStoreBusyError,
)
from kernel.vectors.edge import EdgeVectorStore
from kernel.workspace import init_workspace
from tests.contract import vector_corpus as corpus

SPEC = CollectionSpec(dense_size=corpus.DIM)
REPO = Path(__file__).resolve().parents[3]


def _built(path: Path) -> EdgeVectorStore:
    store = EdgeVectorStore(path)
    store.ensure_collection(SPEC)
    store.upsert(list(corpus.evidence_points())[:20])
    return store


def test_the_workspace_store_lives_in_tht_qdrant(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path / "ws")
    with EdgeVectorStore.for_workspace(workspace) as store:
        store.ensure_collection(SPEC)
    assert (workspace.state_dir / "qdrant" / "edge_config.json").is_file()


def test_a_second_opener_waits_then_gets_busy(tmp_path: Path) -> None:
    holder = _built(tmp_path / "q")
    waits: list[float] = []
    clock = iter(float(t) for t in range(100))
    other = EdgeVectorStore(
        tmp_path / "q", lock_timeout=3.0, sleep=waits.append, monotonic=lambda: next(clock)
    )
    with pytest.raises(VectorStoreBusyError) as caught:
        other.count(VectorFilter(kind="evidence"))
    assert caught.value.exit_code == 6 and caught.value.details["reason"] == "busy"
    assert len(waits) == 2
    holder.close()
    assert other.count(VectorFilter(kind="evidence")) == 20
    other.close()


def test_a_waiting_opener_proceeds_when_the_holder_closes(tmp_path: Path) -> None:
    holder = _built(tmp_path / "q")
    other = EdgeVectorStore(tmp_path / "q", lock_timeout=60.0, sleep=lambda _: holder.close())
    assert other.count(VectorFilter(kind="evidence")) == 20
    other.close()


def test_another_process_holding_the_store_makes_it_busy(tmp_path: Path) -> None:
    _built(tmp_path / "q").close()
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from kernel.vectors.edge import EdgeVectorStore
        store = EdgeVectorStore(Path({str(tmp_path / "q")!r}))
        store.describe()
        print("holding", flush=True)
        sys.stdin.readline()
        store.close()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
        with pytest.raises(VectorStoreBusyError):
            EdgeVectorStore(tmp_path / "q", lock_timeout=0.2).describe()
    finally:
        holder.communicate(b"\n", timeout=30)
    with EdgeVectorStore(tmp_path / "q") as store:
        assert store.describe().points == 20


def test_a_folder_that_is_not_a_collection_is_corrupt(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    with pytest.raises(CollectionCorruptError):
        EdgeVectorStore(folder).describe()
    with pytest.raises(CollectionCorruptError):
        EdgeVectorStore(folder).ensure_collection(SPEC)


def test_a_broken_segment_is_corrupt(tmp_path: Path) -> None:
    _built(tmp_path / "q").close()
    segment = next((tmp_path / "q" / "segments").iterdir())
    (segment / "segment.json").write_text("truncated")
    with pytest.raises(CollectionCorruptError) as caught:
        EdgeVectorStore(tmp_path / "q").count(VectorFilter(kind="evidence"))
    assert caught.value.details["reason"] == "corrupt"


def test_an_empty_or_absent_folder_is_missing_until_ensured(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "empty", tmp_path / "absent"):
        store = EdgeVectorStore(folder)
        with pytest.raises(CollectionMissingError):
            store.count(VectorFilter(kind="evidence"))
        assert store.ensure_collection(SPEC).points == 0
        store.close()


def test_an_upsert_that_returned_survives_a_killed_process(tmp_path: Path) -> None:
    """``upsert`` is durable when it returns: SIGKILL right after, then reopen, nothing lost."""
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from kernel.vectors import CollectionSpec
        from kernel.vectors.edge import EdgeVectorStore
        from tests.contract import vector_corpus as corpus
        store = EdgeVectorStore(Path({str(tmp_path / "q")!r}))
        store.ensure_collection(CollectionSpec(dense_size=corpus.DIM))
        store.upsert(list(corpus.evidence_points())[:25])
        print("upserted", flush=True)
        sys.stdin.readline()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"upserted\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    with EdgeVectorStore(tmp_path / "q") as store:
        assert store.count(VectorFilter(kind="evidence")) == 25
        dense, sparse = corpus.query_vectors(corpus.fragments()[3]["text"])
        hits = store.query_hybrid(dense=dense, sparse=sparse, where=VectorFilter(kind="evidence"))
        assert hits[0].payload["text"] == corpus.fragments()[3]["text"]
