"""A forged catalog fold cache is never what a reviewer reads, nor what feeds the schema index, in
a signed workspace (docs/catalog.md, "Trust and integrity").

The attack: the agent rewrites ``.tht/cache/workspace/catalog.msgpack`` with the ledger's real
``(last_seq, head)`` — so every cheap check passes — and a state of its own: every Sensitive Data
Flag cleared, a "human" Description forged on the table and on a column. Before the fix, ``tht
catalog show`` showed ``sensitive: false`` and the forged Description, ``tht sql check`` reported
no sensitive column, and ``tht catalog reindex`` embedded the forged Descriptions. In signed mode
(a reviewer registry exists) these now fold the verified ledger; ``catalog reindex`` always does.
The control: the same forgery does change an unsigned workspace's ``catalog show`` (documented:
unsigned, the cache serves display), which proves the forgery itself works."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from modules.catalog.cache import CatalogCache, decode_cache, encode_cache
from tests.support.synced_catalog import ok, replace_workspace, synced_workspace
from tests.tht.conftest import run_tht
from tht.ptyrun import run_in_terminal

ANN_PW = "ann's long catalog passphrase"
ANN = ("--as", "human:ann")
FORGED = "Forged-by-the-agent: public reference data, nothing personal"
TRUE_TABLE = "Customers of the shop (personal data)"
REPO = Path(__file__).resolve().parents[2]


def _at_terminal(*args: str, typed: tuple[str, ...] = ()) -> None:
    """A reviewer's command at a real terminal (the passphrase typed at its prompt)."""
    done = run_in_terminal(
        [sys.executable, "-m", "tht", *args], env=dict(os.environ), cwd=REPO, typed=typed
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)


def _curate(signed: bool) -> None:
    typed: tuple[str, ...] = (ANN_PW,) if signed else ()
    if signed:
        _at_terminal("reviewer", "add", "human:ann", "--json", typed=(ANN_PW, ANN_PW))
    for args in (
        ("catalog", "sensitive", "set", "clienti.nome", "clienti.email", "--on"),
        ("catalog", "describe", "clienti", "--text", TRUE_TABLE),
    ):
        if signed:
            _at_terminal(*args, "--reason", "r", *ANN, "--json", typed=typed)
        else:
            ok(run_tht(*args, "--reason", "r", *ANN, "--json"))
    ok(run_tht("catalog", "reindex", "--json"))  # the index follows the human's Description


@pytest.fixture(scope="module")
def signed_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synced_workspace(tmp_path_factory, "signed-cache", then=lambda: _curate(True))


@pytest.fixture(scope="module")
def unsigned_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synced_workspace(tmp_path_factory, "unsigned-cache", then=lambda: _curate(False))


def _home(base: Path, workspace: Path) -> None:
    """The reviewer's sealed key travels with the copy (THT_HOME beside the workspace)."""
    keys = base.parent / "home" / "keys"
    if keys.exists():
        shutil.copytree(keys, Path(os.environ["THT_HOME"]) / "keys", dirs_exist_ok=True)


@pytest.fixture
def signed_ws(signed_base: Path, workspace: Path) -> Path:
    ws = replace_workspace(signed_base, workspace)
    _home(signed_base, ws)
    return ws


@pytest.fixture
def unsigned_ws(unsigned_base: Path, workspace: Path) -> Path:
    return replace_workspace(unsigned_base, workspace)


def _forge_cache(ws: Path) -> None:
    """Decode the cache, clear every flag and forge Descriptions, re-encode with its real head."""
    ok(run_tht("catalog", "status", "--json"))  # the cache is current
    (path,) = (ws / ".tht").rglob("catalog.msgpack")
    cache = decode_cache(path.read_bytes())
    assert cache is not None
    tables = {}
    for name, table in cache.state.tables.items():
        columns = tuple(
            msgspec.structs.replace(
                c, sensitive=False, description=FORGED if c.name == "nome" else c.description
            )
            for c in table.columns
        )
        described = FORGED if name == "clienti" else table.description
        tables[name] = msgspec.structs.replace(table, columns=columns, description=described)
    forged = CatalogCache(
        hint=cache.hint,
        last_seq=cache.last_seq,
        head=cache.head,
        state=msgspec.structs.replace(cache.state, tables=tables),
    )
    data = encode_cache(forged)
    assert data is not None
    path.write_bytes(data)


def _shown(table: str = "clienti") -> dict[str, Any]:
    body = ok(run_tht("catalog", "show", table, "--json"))
    (found,) = body["tables"]
    shown: dict[str, Any] = found
    return shown


def _flags(shown: dict[str, Any]) -> list[str]:
    return [c["name"] for c in shown["columns"] if c["sensitive"]]


def _sql_check(tmp_path: Path) -> list[str]:
    query = tmp_path / "q.sql"
    query.write_text("SELECT nome, email, citta FROM clienti", encoding="utf-8")
    done = run_tht("sql", "check", str(query), "--json")
    assert done.code == 0, done.stderr
    sensitive: list[str] = done.json()["sensitive"]
    return sensitive


def test_a_signed_workspace_shows_the_verified_catalog_never_a_forged_cache(
    signed_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (signed_ws / "reviewers" / "ledger.jsonl").exists()
    monkeypatch.setenv("THT_ACTOR", "agent")
    _forge_cache(signed_ws)
    shown = _shown()
    assert _flags(shown) == ["nome", "email"]
    assert shown["description"] == TRUE_TABLE
    assert FORGED not in str(shown)
    assert sorted(_sql_check(tmp_path)) == ["clienti.email", "clienti.nome"]
    status = ok(run_tht("catalog", "status", "--json"))
    assert status["last_seq"] > 0
    reindexed = ok(run_tht("catalog", "reindex", "--json"))
    assert reindexed["embedded"] == 0  # the verified catalog: nothing changed since the sync
    everything = b"".join(
        p.read_bytes()
        for p in signed_ws.rglob("*")
        if p.is_file() and p.name != "catalog.msgpack" and ".home" not in p.parts
    )
    assert FORGED.encode() not in everything


def test_the_same_forgery_changes_an_unsigned_workspaces_display_only(
    unsigned_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unsigned, ``catalog show`` and ``sql check``'s warning read the cache (documented: the
    agent can write legal-looking curation there anyway); the masking decisions and the schema
    index still fold the verified ledger."""
    monkeypatch.setenv("THT_ACTOR", "agent")
    _forge_cache(unsigned_ws)
    shown = _shown()
    assert _flags(shown) == [] and shown["description"] == FORGED  # the forgery works
    assert _sql_check(tmp_path) == []
    reindexed = ok(run_tht("catalog", "reindex", "--json"))
    assert reindexed["embedded"] == 0  # a projection: always the verified ledger
    query = tmp_path / "run.sql"
    query.write_text("SELECT nome FROM clienti", encoding="utf-8")
    run = run_tht("sql", "run", str(query), "--json")
    assert run.code == 0 and run.json()["masked"] == [0]
