"""``CachedEmbedder``: vectors cached on disk by embedder identity, role and text hash.

The cache is a SQLite file, by default ``<workspace>/.tht/cache/embeddings.sqlite3``: one row per
``sha256(identity, role, text)`` holding the float32 vector. An unchanged text is never embedded
twice, across runs and processes; a new model (another identity) or another role misses cleanly.
The cache is rebuildable state: an unreadable file is set aside (``*.corrupt``) and a new one is
started; if even that fails the embedder works uncached.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from kernel.vectors.embedder import Embedder, EmbeddingRole

if TYPE_CHECKING:
    from kernel.vectors.embedder import Vectors

__all__ = ["CACHE_FILENAME", "CachedEmbedder", "EmbeddingCache"]

CACHE_FILENAME: Final = "embeddings.sqlite3"
_CHUNK: Final = 500
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dim INTEGER NOT NULL, "
    "vector BLOB NOT NULL) WITHOUT ROWID"
)


def cache_key(identity: str, role: EmbeddingRole, text: str) -> bytes:
    """``sha256(identity NUL role NUL text)``: the text itself is never stored."""
    return hashlib.sha256(f"{identity}\0{role}\0{text}".encode()).digest()


class EmbeddingCache:
    """The SQLite file: ``get`` many keys, ``put`` many vectors. Safe across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self._broken:
            return self._db
        for attempt in range(2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                db.execute("SELECT count(*) FROM vectors LIMIT 1").fetchone()
                self._db = db
                return db
            except sqlite3.DatabaseError:
                if attempt == 0 and self.path.exists():
                    self._set_aside()
                    continue
                break
            except OSError:
                break
        self._broken = True
        return None

    def _set_aside(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                with contextlib.suppress(OSError):
                    source.replace(source.with_name(source.name + ".corrupt"))

    def get(self, keys: Sequence[bytes]) -> dict[bytes, Vectors]:
        """The cached vectors of ``keys`` that exist (rows of another length are skipped)."""
        db = self._connect()
        found: dict[bytes, Vectors] = {}
        if db is None:
            return found
        try:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, dim, vector FROM vectors WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, row_dim, blob in rows:
                    if row_dim > 0 and len(blob) == 4 * row_dim:
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.DatabaseError:
            self._broken = True
            return {}
        return found

    def put(self, items: Iterable[tuple[bytes, Vectors]]) -> None:
        db = self._connect()
        if db is None:
            return
        rows = [
            (key, int(vector.shape[0]), np.ascontiguousarray(vector, np.float32).tobytes())
            for key, vector in items
        ]
        try:
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            db.execute("COMMIT")
        except sqlite3.DatabaseError:
            self._broken = True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class CachedEmbedder:
    """Any :class:`Embedder`, with vectors cached in an :class:`EmbeddingCache`.

    ``hits`` and ``misses`` count texts served from the cache and texts sent to the model.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0

    @classmethod
    def in_folder(cls, inner: Embedder, folder: Path) -> CachedEmbedder:
        """Cache in ``folder/embeddings.sqlite3`` (a workspace's ``.tht/cache/``)."""
        return cls(inner, EmbeddingCache(folder / CACHE_FILENAME))

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "passage")

    def _embed(self, texts: Sequence[str], role: EmbeddingRole) -> Vectors:
        if not texts:
            return np.zeros((0, self.inner.dimension), dtype=np.float32)
        identity = self.inner.identity
        keys = [cache_key(identity, role, t) for t in texts]
        text_of = dict(zip(keys, texts, strict=True))
        found = self.cache.get(list(text_of))
        missing = [key for key in text_of if key not in found]
        fresh: dict[bytes, Vectors] = {}
        if missing:
            fresh = self._fresh(missing, text_of, role)
            dim = len(next(iter(fresh.values())))
        else:
            dim = len(next(iter(found.values())))
        stale = [key for key, vector in found.items() if len(vector) != dim]
        if stale:  # the endpoint changed its model under the same name: embed those again
            fresh.update(self._fresh(stale, text_of, role))
        found.update(fresh)
        self.misses += len(fresh)
        self.hits += len(texts) - len(fresh)
        out = np.empty((len(texts), dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _fresh(
        self, keys: list[bytes], text_of: dict[bytes, str], role: EmbeddingRole
    ) -> dict[bytes, Vectors]:
        todo = [text_of[key] for key in keys]
        vectors = (
            self.inner.embed_queries(todo) if role == "query" else self.inner.embed_passages(todo)
        )
        new = dict(zip(keys, vectors, strict=True))
        self.cache.put(new.items())
        return new

    def close(self) -> None:
        self.cache.close()
