"""``MemoryRegistry`` on a real store — the filesystem one and the in-memory one: appends at the
expected last seq, writes that decide only on the verified ledger, and a fold cache that is an
optimisation for display, never a source of truth."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kernel.clock import FixedClock
from kernel.errors import ConflictError, IntegrityError, UsageError
from kernel.ledger_verify import genesis_hash
from kernel.store.fs import FileSystemStore
from kernel.store.memory import MemoryStore
from modules.memory import MemoryRegistry, memory_id
from modules.memory.cache import MemoryCache, decode_cache, encode_cache
from tests.modules.memory.registry_support import (
    ANA,
    forgotten,
    make_store,
    registry_on,
    saved,
)

FLAG = memory_id("ablazione", "procedures.flag", "flag")
GHOST = memory_id("ghost", None, "boo")

Store = MemoryStore | FileSystemStore


@pytest.fixture(params=["memory", "fs"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


def _seeded(store: Store) -> MemoryRegistry:
    registry = registry_on(store)
    registry.append(registry.load_for_write(), [saved("ablazione", "flag", "procedures.flag")])
    return registry


def test_a_fresh_registry_is_empty_and_its_first_entry_starts_the_chain(store: Store) -> None:
    registry = registry_on(store)
    loaded = registry.load_for_write()
    assert loaded.state.last_seq == 0 and loaded.head == genesis_hash("workspace-memory")
    after = registry.append(loaded, [saved("ablazione", "flag", "procedures.flag")])
    assert after.state.last_seq == 1 and FLAG in after.state.memories
    assert store.workspace_ledger("memory").exists()
    assert registry.verify().ok
    # a new process sees the same: from the cache, and from the verified ledger
    again = registry_on(store)
    assert again.load().state == again.load_for_write().state == after.state


def test_nothing_to_append_writes_nothing(store: Store) -> None:
    registry = _seeded(store)
    loaded = registry.load_for_write()
    assert registry.append(loaded, []) is loaded
    assert store.workspace_ledger("memory").tail().last_seq == 1


def test_a_stale_writer_gets_a_conflict_and_writes_nothing(store: Store) -> None:
    registry = _seeded(store)
    first, second = registry.load_for_write(), registry_on(store).load_for_write()
    registry.append(first, [forgotten(FLAG, reason="wrong")])
    with pytest.raises(ConflictError) as err:
        registry_on(store).append(second, [saved("anno", "year")])
    assert err.value.exit_code == 4
    assert "the workspace memory changed while this command ran; run it again" in str(err.value)
    state = registry.load_for_write().state
    assert state.last_seq == 2 and memory_id("anno", None, "year") not in state.memories


def test_one_command_records_one_reviewers_decisions(store: Store) -> None:
    registry = registry_on(store)
    with pytest.raises(UsageError):
        registry.append(
            registry.load_for_write(),
            [saved("a", "m"), saved("b", "m", reviewer="human:bob")],
        )
    assert not store.workspace_ledger("memory").exists()


def test_a_fold_problem_refuses_every_write_naming_verify(store: Store) -> None:
    registry = _seeded(store)
    ledger = store.workspace_ledger("memory")
    forged = saved("ablazione", "flag", "procedures.note", forged_id=FLAG)
    ledger.append([forged], expected_last_seq=1, clock=FixedClock())  # behind the planners
    with pytest.raises(IntegrityError) as err:
        registry.load_for_write()
    assert err.value.exit_code == 7 and "tht memory verify" in str(err.value)
    assert [p["code"] for p in err.value.details["problems"]] == ["forged_id"]
    report = registry.verify()
    assert not report.ok and [p.code for p in report.problems] == ["forged_id"]
    assert ledger.tail().last_seq == 2  # nothing was written
    assert registry.load().state.problems[0].seq == 2  # display shows it


def test_an_altered_line_refuses_every_write(tmp_path: Path) -> None:
    store = FileSystemStore(tmp_path / "sessions", tmp_path / ".tht" / "cache")
    registry = _seeded(store)
    registry.append(registry.load_for_write(), [saved("anno", "year")])
    path = tmp_path / "memory" / "ledger.jsonl"
    data = path.read_bytes()
    assert b'"meaning":"flag"' in data
    path.write_bytes(data.replace(b'"meaning":"flag"', b'"meaning":"flop"'))
    fresh = registry_on(store)
    with pytest.raises(IntegrityError) as err:
        fresh.load_for_write()
    assert "tht memory verify" in str(err.value)
    assert not fresh.verify().ok


def _poison(store: Store) -> None:
    """A crafted cache: a memory nobody saved, with the cache's (last_seq, head) kept valid."""
    cache = decode_cache(store.read_workspace_cache("memory"))
    assert cache is not None
    real = cache.state.memories[FLAG]
    ghost = msgspec.structs.replace(
        real, memory_id=GHOST, subject="ghost", meaning="boo", target=None
    )
    forged = MemoryCache(
        hint=cache.hint,
        last_seq=cache.last_seq,
        head=cache.head,
        state=msgspec.structs.replace(cache.state, memories={**cache.state.memories, GHOST: ghost}),
    )
    data = encode_cache(forged)
    assert data is not None
    store.write_workspace_cache("memory", data)


def test_a_poisoned_cache_never_reaches_a_write(store: Store) -> None:
    _seeded(store)
    _poison(store)
    registry = registry_on(store)
    assert GHOST in registry.load().state.memories  # display: the cache is what it is
    report = registry.verify()
    assert [p.code for p in report.problems] == ["fold_cache"]
    _poison(store)
    decided = registry.load_for_write()
    assert GHOST not in decided.state.memories  # the verified ledger decides
    # and deciding refreshed the cache from the verified ledger
    assert GHOST not in registry_on(store).load().state.memories
    # a poisoned cache cannot make a write forget, supersede or duplicate anything either
    _poison(store)
    after = registry.append(registry.load_for_write(), [forgotten(FLAG, reason="gone")])
    assert GHOST not in after.state.memories and after.state.problems == ()


def test_a_cache_of_another_ledger_position_is_ignored(store: Store) -> None:
    registry = _seeded(store)
    stale = store.read_workspace_cache("memory")
    registry.append(registry.load_for_write(), [saved("anno", "year")])
    assert stale is not None
    store.write_workspace_cache("memory", stale)  # one entry behind: load folds the rest
    assert registry_on(store).load().state == registry.load_for_write().state
    store.write_workspace_cache("memory", b"not a cache")
    assert registry_on(store).load().state == registry.load_for_write().state


def test_a_filesystem_registry_lives_in_the_workspace_memory_folder(tmp_path: Path) -> None:
    store = FileSystemStore(tmp_path / "sessions", tmp_path / ".tht" / "cache")
    _seeded(store)
    first = (tmp_path / "memory" / "ledger.jsonl").read_bytes().splitlines()[0]
    assert b'"type":"memory_saved"' in first and f'"actor":"{ANA}"'.encode() in first
