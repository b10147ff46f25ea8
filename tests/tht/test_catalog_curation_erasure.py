"""An agent cannot undo a human's Description, Relationship Deletion or Manual Relationship with
syncs (docs/catalog.md; modules/catalog/curation_memory.py, description_decisions.py,
relationship_decisions.py).

The attack, through the real CLI on a real SQLite file, every step as the agent
(``THT_ACTOR=agent``): copy the Workspace Database, remove the curated objects from the copy
(drop or rename the columns, drop or rename the table, change its case), point
``workspace.yaml``'s database url at the copy, ``tht catalog sync``, put the url back, sync
again. The objects left the catalog and came back; before the fix the table and columns came
back without their human Descriptions, and the generated relationships a human had deleted
(logically or permanently) came back Generated and active; a Manual Relationship whose endpoint
came back in another case did not come back at all. Now each comes back as the human left it
(under the database's new spelling), and an agent's proposal is not among what comes back."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.synced_catalog import ok, replace_workspace, synced_workspace
from tests.tht.conftest import run_tht

ANN = ("--as", "human:ann")
URL = "sqlite:///data/clienti.db"
COPY_URL = "sqlite:///data/copia.db"
#: three tables that the generation rules join to clienti.id (no declared foreign key)
JOINED = ("fatture", "resi", "note")

CURATED_COLUMNS = (("clienti", "citta"), ("clienti", "nome"), ("clienti", "cognome"))
JOINED_COLUMNS = tuple((t, "cliente_id") for t in JOINED)

#: what the agent does to the copy of the database
ATTACKS = {
    "drop_columns": "".join(
        f"ALTER TABLE {t} DROP COLUMN {c};" for t, c in (*CURATED_COLUMNS, *JOINED_COLUMNS)
    ),
    "rename_columns": "".join(
        f"ALTER TABLE {t} RENAME COLUMN {c} TO {c}_2;"
        for t, c in (*CURATED_COLUMNS, *JOINED_COLUMNS)
    ),
    "drop_table": "DROP TABLE clienti",
    "rename_table": "ALTER TABLE clienti RENAME TO clienti_vecchi",
    "table_case": "ALTER TABLE clienti RENAME TO c_tmp; ALTER TABLE c_tmp RENAME TO CLIENTI",
}


def _relationships() -> dict[str, dict[str, str]]:
    """The generated relationships to clienti.id, by their ``from``'s table."""
    shown = ok(run_tht("catalog", "relationships", "--include-deleted", "--json"))
    return {
        e["from"].partition(".")[0]: e
        for e in shown
        if e["origin"] == "generated" and e["to"].lower() == "clienti.id"
    }


def _curate() -> None:
    """The joined tables, a sync (their relationships are generated), then the curation: a
    human's Descriptions (by hand, and a consolidated proposal), an agent's pending proposal;
    a Logical Deletion, a Permanent Deletion, and a deletion the human restored."""
    with sqlite3.connect(Path(os.environ["THT_WORKSPACE"]) / "data" / "clienti.db") as conn:
        conn.executescript(
            "".join(
                f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, cliente_id INTEGER);" for t in JOINED
            )
        )
    ok(run_tht("catalog", "sync", "--json"))
    for target, text in (("clienti", "Anagrafica clienti"), ("clienti.citta", "Residenza")):
        ok(run_tht("catalog", "describe", target, "--text", text, "--reason", "r", *ANN, "--json"))
    for target, text in (("clienti.nome", "Nome di battesimo"), ("clienti.cognome", "Cognome")):
        ok(run_tht("catalog", "describe", target, "--propose", "--text", text, "--json"))
    ok(run_tht("catalog", "consolidate", "clienti.nome", "--reason", "ok", *ANN, "--json"))
    rid = {table: entry["id"] for table, entry in _relationships().items()}
    assert sorted(rid) == sorted(JOINED)
    for table, how in (("fatture", ()), ("resi", ("--permanent",)), ("note", ())):
        delete = ("catalog", "relationship", "delete", rid[table], *how, "--reason", "wrong")
        ok(run_tht(*delete, *ANN, "--json"))
    restore = ("catalog", "relationship", "restore", rid["note"], "--reason", "right after all")
    ok(run_tht(*restore, *ANN, "--json"))


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synced_workspace(tmp_path_factory, "curation_erasure", then=_curate)


@pytest.fixture
def ws(curated: Path, workspace: Path) -> Path:
    return replace_workspace(curated, workspace)


def _described() -> dict[str, Any]:
    """``table`` and ``table.column`` → (Description, Generated Description's text), as
    ``catalog show`` says."""
    shown = ok(run_tht("catalog", "show", "--json"))
    found: dict[str, Any] = {}
    for t in shown["tables"]:
        found[t["name"]] = (t["description"], t["generated"] and t["generated"]["text"])
        for c in t["columns"]:
            found[f"{t['name']}.{c['name']}"] = (
                c["description"],
                c["generated"] and c["generated"]["text"],
            )
    return found


def _set_url(ws: Path, old: str, new: str) -> None:
    settings = ws / "workspace.yaml"
    text = settings.read_text(encoding="utf-8")
    assert old in text
    settings.write_text(text.replace(old, new), encoding="utf-8")


def _two_syncs(ws: Path, attack: str) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """The agent's two syncs; returns the catalog as the first one left it."""
    copy = ws / "data" / "copia.db"
    shutil.copyfile(ws / "data" / "clienti.db", copy)
    with sqlite3.connect(copy) as conn:
        conn.executescript(ATTACKS[attack])
    _set_url(ws, URL, COPY_URL)
    ok(run_tht("catalog", "sync", "--json"))
    during = _described(), _relationships()
    _set_url(ws, COPY_URL, URL)
    ok(run_tht("catalog", "sync", "--json"))
    return during


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_two_syncs_by_an_agent_undo_no_humans_description_or_deletion(
    ws: Path, attack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, kept = _described(), _relationships()
    assert before["clienti"] == ("Anagrafica clienti", None)
    assert before["clienti.nome"] == ("Nome di battesimo", "Nome di battesimo")
    assert before["clienti.cognome"] == ("", "Cognome")  # the agent's proposal, pending
    assert {t: e["state"] for t, e in kept.items()} == {"fatture": "deleted", "note": "active"}
    ledger = ws / "catalog" / "ledger.jsonl"
    humans_before = ledger.read_bytes().count(b'"actor":"human:')
    lines_before = ledger.read_bytes().count(b"\n")
    monkeypatch.setenv("THT_ACTOR", "agent")

    during, related = _two_syncs(ws, attack)
    assert not {f"{t}.{c}" for t, c in CURATED_COLUMNS} & set(during)  # they did leave …
    assert "fatture" not in related or related["fatture"]["to"] != "clienti.id"
    if attack in ("drop_table", "rename_table", "table_case"):
        assert "clienti" not in during

    after = _described()
    assert after["clienti"] == ("Anagrafica clienti", None)
    assert after["clienti.citta"] == ("Residenza", None)
    assert after["clienti.nome"] == ("Nome di battesimo", None)  # the consolidated one
    assert after["clienti.cognome"] == ("", None)  # a proposal is not a human's decision
    relationships = _relationships()
    assert {t: (e["state"], e["origin"]) for t, e in relationships.items()} == {
        "fatture": ("deleted", "generated"),  # the exclusion, as the human left it
        "note": ("active", "generated"),  # restored: the human's last decision
    }  # resi: permanently deleted, and not generated again
    new_lines = ledger.read_bytes().splitlines()[lines_before:]
    assert not [line for line in new_lines if b'"from_table":"resi"' in line]
    assert ledger.read_bytes().count(b'"actor":"human:') == humans_before  # no human step
    assert ok(run_tht("catalog", "verify", "--json"))["ok"] is True


#: the copy without an endpoint of the Manual Relationship, then the database with it re-cased;
#: and the relationship's ends as the database spells them then
CASE_ATTACKS = {
    "column_case": (
        "ALTER TABLE resi DROP COLUMN cliente_id",
        "ALTER TABLE resi RENAME COLUMN cliente_id TO c_tmp;"
        "ALTER TABLE resi RENAME COLUMN c_tmp TO CLIENTE_ID",
        ("resi.CLIENTE_ID", "clienti.id"),
    ),
    "table_case": (
        "DROP TABLE clienti",
        "ALTER TABLE clienti RENAME TO c_tmp; ALTER TABLE c_tmp RENAME TO CLIENTI",
        ("resi.cliente_id", "CLIENTI.id"),
    ),
}


@pytest.mark.parametrize("attack", sorted(CASE_ATTACKS))
def test_two_syncs_by_an_agent_undo_no_manual_relationship_whose_endpoint_changed_case(
    ws: Path, attack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The human deleted the generated ``resi.cliente_id → clienti.id`` permanently and added
    it by hand. The agent binds a copy of the database without the column (or its table),
    syncs, binds the database back with the column (or the table) renamed to upper case, and
    syncs: the Manual Relationship is back under the new spelling, as the human added it, and
    no candidate was generated in its place."""
    add = ("catalog", "relationship", "add", "resi.cliente_id", "clienti.id")
    added = ok(run_tht(*add, "--rationale", "resi per cliente", *ANN, "--json"))
    ledger = ws / "catalog" / "ledger.jsonl"
    humans_before = ledger.read_bytes().count(b'"actor":"human:')
    lines_before = ledger.read_bytes().count(b"\n")
    monkeypatch.setenv("THT_ACTOR", "agent")
    without, recased, ends = CASE_ATTACKS[attack]
    copy = ws / "data" / "copia.db"
    shutil.copyfile(ws / "data" / "clienti.db", copy)
    with sqlite3.connect(copy) as conn:
        conn.executescript(without)
    _set_url(ws, URL, COPY_URL)
    ok(run_tht("catalog", "sync", "--json"))
    shown = ok(run_tht("catalog", "relationships", "--json"))
    assert added["id"] not in {e["id"] for e in shown}  # it did leave
    with sqlite3.connect(ws / "data" / "clienti.db") as conn:
        conn.executescript(recased)
    _set_url(ws, COPY_URL, URL)
    ok(run_tht("catalog", "sync", "--json"))

    shown = ok(run_tht("catalog", "relationships", "--json"))
    manual = [e for e in shown if e["origin"] == "manual"]
    assert [(e["from"], e["to"], e["state"]) for e in manual] == [(*ends, "active")]
    assert [e["origin"] for e in shown if e["from"].lower() == "resi.cliente_id"] == ["manual"]
    new_lines = ledger.read_bytes().splitlines()[lines_before:]
    assert not [line for line in new_lines if b'"from_table":"resi"' in line]
    assert ledger.read_bytes().count(b'"actor":"human:') == humans_before  # no human step
    assert ok(run_tht("catalog", "verify", "--json"))["ok"] is True
