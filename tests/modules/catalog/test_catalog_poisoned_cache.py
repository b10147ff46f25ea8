"""A crafted catalog fold cache (``.tht/cache/workspace/…``, writable by anyone in the shell)
never reaches a decision (ARCHITECTURE §3.9 rule 4): the SQL check of a proposal and the
snapshot a session records fold the verified catalog ledger, and a write refreshes the cache."""

from __future__ import annotations

from pathlib import Path

import msgspec

from modules.catalog.cache import CatalogCache, decode_cache, encode_cache
from tests.tht.conftest import run_tht
from tht import catalog_runtime
from tht.composition import open_app


def _poison(workspace: Path) -> Path:
    """Add a table ``ghost`` to the cached state, keeping the cache's (last_seq, head) valid."""
    (path,) = (workspace / ".tht").rglob("catalog.msgpack")
    cache = decode_cache(path.read_bytes())
    assert cache is not None
    some = next(iter(cache.state.tables.values()))
    tables = {**cache.state.tables, "ghost": msgspec.structs.replace(some, name="ghost")}
    forged = CatalogCache(
        hint=cache.hint,
        last_seq=cache.last_seq,
        head=cache.head,
        state=msgspec.structs.replace(cache.state, tables=tables),
    )
    data = encode_cache(forged)
    assert data is not None
    path.write_bytes(data)
    return path


def test_a_crafted_fold_cache_never_reaches_a_decision(shop_workspace: Path) -> None:
    assert run_tht("catalog", "sync").code == 0
    _poison(shop_workspace)
    app = open_app(shop_workspace)
    shown = catalog_runtime.schema_view(app)  # display path: the cache is what it is
    assert shown is not None and shown.table("ghost") is not None  # the poison is in place
    decided = catalog_runtime.schema_view(app, verified=True)
    assert decided is not None and decided.table("ghost") is None
    # and deciding refreshed the cache from the verified ledger
    again = catalog_runtime.schema_view(open_app(shop_workspace))
    assert again is not None and again.table("ghost") is None
