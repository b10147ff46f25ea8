"""The value index through the real command line, on the demo database: built by `tht catalog
sync`, used by F1 (`tht stage run disambiguation`), never an authority — a crafted or stale index
adds nothing — and a column flagged sensitive leaves it at once."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from modules.catalog.value_index import ColumnValues, ValueIndex
from tests.tht.memory.support import Ws, make_workspace

QUESTION = "Quanti ricoveri con ablazione per ospedale nel 2024?"


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Ws:
    return make_workspace(tmp_path_factory.mktemp("values") / "ws")


@pytest.fixture
def ws(synced: Ws, tmp_path: Path) -> Ws:
    return synced.copy(tmp_path / "ws")


def index_file(ws: Ws) -> Path:
    return ws.root / ".tht" / "value_index" / "value_index.json"


def test_the_sync_builds_it_and_find_lists_every_column(ws: Ws) -> None:
    assert index_file(ws).is_file()
    found = ws.ok("catalog", "values", "find", "ablazione")
    assert found["columns"] == ["procedure.descrizione", "procedure.patologia"]
    assert {m["kind"] for m in found["matches"]} == {"contained"}
    assert ws.ok("catalog", "values", "find", "Milan")["columns"] == ["ospedali.citta"]


def test_f1_offers_the_flag_and_both_text_columns_for_ablazione(ws: Ws) -> None:
    session = ws.new_session(QUESTION)
    ran = ws.ok("stage", "run", "disambiguation", session)
    assert ran["status"] == "review" and "'ablazione'" in ran["prompt"]
    review = ws.review(session, int(ran["review"]))
    labels = [o["label"] for o in review["options"]]
    assert any("procedure.flag_ablazione" in label for label in labels)
    assert any("procedure.patologia" in label for label in labels)
    assert any("procedure.descrizione" in label for label in labels)
    assert review["options"][-1]["id"] == "open"


def test_a_crafted_index_adds_no_column_the_database_does_not_confirm(ws: Ws) -> None:
    index = msgspec.json.decode(index_file(ws).read_bytes(), type=ValueIndex)
    forged = ColumnValues(column="ospedali.nome", values=("ablazione",))
    crafted = msgspec.structs.replace(index, columns=(*index.columns, forged))
    index_file(ws).write_bytes(msgspec.json.encode(crafted))
    found = ws.ok("catalog", "values", "find", "ablazione")
    assert any("ospedali.nome" in m["columns"] for m in found["matches"])  # the file says so
    assert "ospedali.nome" not in found["columns"]  # the database does not
    session = ws.new_session(QUESTION)
    ran = ws.ok("stage", "run", "disambiguation", session)
    review = ws.review(session, int(ran["review"]))
    assert not any("ospedali.nome" in o["label"] for o in review["options"])


def test_a_stale_index_is_not_used(ws: Ws) -> None:
    index = msgspec.json.decode(index_file(ws).read_bytes(), type=ValueIndex)
    index_file(ws).write_bytes(msgspec.json.encode(msgspec.structs.replace(index, fingerprint="x")))
    done = ws.tht("catalog", "values", "find", "ablazione", "--json")
    assert done.code == 6 and "no fresh value index" in done.stderr
    session = ws.new_session(QUESTION)
    ran = ws.ok("stage", "run", "disambiguation", session)
    review = ws.review(session, int(ran["review"])) if ran.get("review") else {"options": []}
    assert not any("procedure.patologia" in o["label"] for o in review["options"])
    rebuilt = ws.ok("catalog", "values", "rebuild")
    assert rebuilt["columns"] >= 3 and rebuilt["skipped_sensitive"] == []
    assert ws.ok("catalog", "values", "find", "ablazione")["columns"]


def test_a_column_flagged_sensitive_leaves_the_index_at_once(ws: Ws) -> None:
    assert "pregressa ablazione" in index_file(ws).read_text()
    ws.ok("catalog", "sensitive", "set", "procedure.patologia", "--on", "--reason", "clinical",
          "--as", "human:ann")  # fmt: skip
    text = index_file(ws).read_text()
    assert "pregressa ablazione" not in text
    body = json.loads(text)
    assert "procedure.patologia" in body["skipped_sensitive"]
    assert ws.ok("catalog", "values", "find", "ablazione")["columns"] == ["procedure.descrizione"]


def test_without_a_bound_database_rebuild_is_a_clear_error(tmp_path: Path) -> None:
    ws = Ws(tmp_path / "bare")
    assert ws.tht("workspace", "init", str(ws.root)).code == 0
    done = ws.tht("catalog", "values", "rebuild")
    assert done.code == 2 and "Traceback" not in done.stderr
    assert not index_file(ws).exists()
