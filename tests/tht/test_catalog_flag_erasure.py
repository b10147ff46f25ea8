"""An agent cannot erase a human's Sensitive Data Flag with syncs (docs/catalog.md, "Sensitive
data"; modules/catalog/flag_decisions.py).

The attack, through the real CLI on a real SQLite file, every step as the agent
(``THT_ACTOR=agent``): copy the Workspace Database, change the flagged column in the copy (drop
it, rename it, change its case, drop or rename its table), point ``workspace.yaml``'s database
url at the copy, ``tht catalog sync``, put the url back, sync again. The column left the catalog
and came back; before the fix it came back unflagged, so ``tht sql run``, ``tht catalog sample``
and the value index showed its real values with no human step. Now it comes back with the
human's decision, and nothing reads its values."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.sensitive_data import leaks
from tests.support.synced_catalog import ok, replace_workspace, synced_workspace
from tests.tht.conftest import Result, run_tht

Tht = Callable[..., Result]
ANN = ("--as", "human:ann")
URL = "sqlite:///data/clienti.db"
COPY_URL = "sqlite:///data/copia.db"

#: what the agent does to the copy of the database
ATTACKS = {
    "drop_column": "ALTER TABLE clienti DROP COLUMN nome",
    "rename_column": "ALTER TABLE clienti RENAME COLUMN nome TO nome_2",
    "rename_case": "ALTER TABLE clienti RENAME COLUMN nome TO NOME",
    "drop_table": "DROP TABLE clienti",
    "rename_table": "ALTER TABLE clienti RENAME TO clienti_vecchi",
    "table_case": "ALTER TABLE clienti RENAME TO c_tmp; ALTER TABLE c_tmp RENAME TO CLIENTI",
}


def _flag() -> None:
    """The human's decisions: ``nome`` on; ``citta`` on, then explicitly off."""
    for ref, how in (
        ("clienti.nome", "--on"),
        ("clienti.citta", "--on"),
        ("clienti.citta", "--off"),
    ):
        ok(run_tht("catalog", "sensitive", "set", ref, how, "--reason", "r", *ANN, "--json"))


@pytest.fixture(scope="module")
def flagged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synced_workspace(tmp_path_factory, "erasure", then=_flag)


@pytest.fixture
def ws(flagged: Path, workspace: Path) -> Path:
    return replace_workspace(flagged, workspace)


def _real_names(ws: Path) -> list[str]:
    with sqlite3.connect(ws / "data" / "clienti.db") as conn:
        return [row[0] for row in conn.execute("SELECT nome FROM clienti")]


def _columns(ws: Path) -> dict[str, bool]:
    """Every column of every table, ``table.column`` → its flag, as ``catalog show`` says."""
    shown = ok(run_tht("catalog", "show", "--json"))
    return {
        f"{t['name']}.{c['name']}": c["sensitive"] for t in shown["tables"] for c in t["columns"]
    }


def _set_url(ws: Path, old: str, new: str) -> None:
    settings = ws / "workspace.yaml"
    text = settings.read_text(encoding="utf-8")
    assert old in text
    settings.write_text(text.replace(old, new), encoding="utf-8")


def _agent_erases(ws: Path, attack: str) -> dict[str, bool]:
    """The two syncs; returns the catalog's columns as the first one left them."""
    copy = ws / "data" / "copia.db"
    shutil.copyfile(ws / "data" / "clienti.db", copy)
    with sqlite3.connect(copy) as conn:
        conn.executescript(ATTACKS[attack])
    _set_url(ws, URL, COPY_URL)
    ok(run_tht("catalog", "sync", "--json"))
    during = _columns(ws)
    _set_url(ws, COPY_URL, URL)
    ok(run_tht("catalog", "sync", "--json"))
    return during


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_two_syncs_by_an_agent_do_not_erase_a_humans_flag(
    ws: Path, attack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _columns(ws)["clienti.nome"] is True
    ledger = ws / "catalog" / "ledger.jsonl"
    humans_before = ledger.read_bytes().count(b'"actor":"human:')
    monkeypatch.setenv("THT_ACTOR", "agent")
    during = _agent_erases(ws, attack)
    assert "clienti.nome" not in during  # the column did leave the catalog …
    # … and a column of the same identity was flagged while the copy was bound
    assert all(on for ref, on in during.items() if ref.lower() == "clienti.nome")
    after = _columns(ws)
    assert after["clienti.nome"] is True  # back, with the human's decision
    assert after["clienti.citta"] is False  # the human's explicit off stays off too
    assert ledger.read_bytes().count(b'"actor":"human:') == humans_before  # no human step
    names = _real_names(ws)
    query = tmp_path / "q.sql"
    query.write_text("SELECT nome FROM clienti", encoding="utf-8")
    run = run_tht("sql", "run", str(query), "--json")
    assert run.code == 0, run.stderr
    assert run.json()["masked"] == [0]
    sample = run_tht("catalog", "sample", "clienti", "--json")
    assert sample.code == 0, sample.stderr
    assert "nome" in sample.json()["synthetic"]
    assert leaks([run.stdout, run.stderr, sample.stdout, sample.stderr], names) == []
    found = ok(run_tht("catalog", "values", "find", names[0], "--json"))
    assert "clienti.nome" not in found["columns"]
    assert all("clienti.nome" not in m["columns"] for m in found["matches"])
    check = run_tht("sql", "check", str(query), "--json")
    assert check.code == 0 and check.json()["sensitive"] == ["clienti.nome"]
    assert ok(run_tht("catalog", "verify", "--json"))["ok"] is True
