"""``tht catalog sensitive suggest | set``, ``tht catalog sample`` and the sensitive columns in
``tht sql check`` / ``tht sql run``, through the real CLI on a real SQLite database; golden
catalog ledger lines for a flag story."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.sensitive_data import SENSITIVE, leaks
from tests.support.synced_catalog import ok, replace_workspace, synced_workspace
from tests.tht.conftest import Result

Tht = Callable[..., Result]
ANN = ("--as", "human:ann")
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "catalog"
FLAGGED = [f"clienti.{c}" for c in SENSITIVE]


def ledger(ws: Path) -> bytes:
    return (ws / "catalog" / "ledger.jsonl").read_bytes()


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workspace bound to the seeded database and synced, copied by each test."""
    return synced_workspace(tmp_path_factory, "sensitive")


@pytest.fixture
def ws(synced: Path, workspace: Path) -> Path:
    """The synced workspace in place of the test's own (same variables: THT_WORKSPACE …)."""
    return replace_workspace(synced, workspace)


def flag_all(tht: Tht) -> dict[str, Any]:
    body: dict[str, Any] = ok(
        tht("catalog", "sensitive", "set", *FLAGGED, "--on", "--reason", "personal", *ANN, "--json")
    )
    return body


# ----------------------------------------------------------------------------- suggest


def test_suggest_shows_the_whole_proposal_and_records_counts_only(ws: Path, tht: Tht) -> None:
    before = ledger(ws)
    done = tht("catalog", "sensitive", "suggest", "--offline", "--json")
    body = ok(done)
    assert list(body) == [
        "run",
        "mode",
        "scope",
        "considered",
        "already_flagged",
        "proposed",
        "proposals",
        "seq",
    ]
    assert (body["mode"], body["scope"], body["considered"], body["already_flagged"]) == (
        "offline",
        None,
        13,
        0,
    )
    refs = [f"{p['table']}.{p['column']}" for p in body["proposals"]]
    assert refs == FLAGGED  # every personal column, and nothing else
    assert body["proposed"] == len(refs)
    assert all(p["offline"] is True and p["rule"] and p["evidence"] for p in body["proposals"])
    added = ledger(ws)[len(before) :]
    (line,) = [json.loads(x) for x in added.splitlines()]
    assert line["type"] == "sensitive_suggestion_run" and line["actor"] == "module:catalog"
    assert line["payload"] == {
        "run": body["run"],
        "mode": "offline",
        "scope": None,
        "considered": 13,
        "proposed": 6,
    }
    assert b"codice_fiscale" not in added  # no per-column proposal in the ledger
    assert done.stderr == ""  # --offline: no note


def test_suggest_without_offline_says_the_pre_pass_ran_and_an_agent_may_run_it(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THT_ACTOR", "agent")
    monkeypatch.setenv("THT_CONFIG", str(ws / "no-user-config.yaml"))  # no model configured
    done = tht("catalog", "sensitive", "suggest", "--scope", "ordini", "--json")
    body = ok(done)
    assert (body["scope"], body["proposed"], body["considered"]) == (["ordini"], 0, 4)
    assert "offline pre-pass" in done.stderr


def test_suggest_skips_what_is_flagged_and_refuses_an_unknown_table(ws: Path, tht: Tht) -> None:
    flag_all(tht)
    body = ok(tht("catalog", "sensitive", "suggest", "--offline", "--json"))
    assert (body["proposed"], body["already_flagged"]) == (0, 6)
    before = ledger(ws)
    done = tht("catalog", "sensitive", "suggest", "--scope", "nope", "--json")
    assert done.code == 3 and ledger(ws) == before


def test_suggest_human_output_names_the_command_that_saves(ws: Path, tht: Tht) -> None:
    done = tht("catalog", "sensitive", "suggest", "--offline")
    assert done.code == 0
    assert "6 proposed" in done.stdout
    assert "tht catalog sensitive set clienti.nome clienti.cognome" in done.stdout


# ----------------------------------------------------------------------------- set


def test_a_human_sets_flags_in_one_batch_and_show_reports_them(ws: Path, tht: Tht) -> None:
    body = flag_all(tht)
    assert list(body) == ["seq", "events", "head", "changed", "unchanged"]
    assert body["changed"] == FLAGGED and body["unchanged"] == []
    assert [e["type"] for e in body["events"]] == ["sensitive_flag_set"] * 6
    shown = ok(tht("catalog", "show", "clienti", "--json"))
    flags = {c["name"]: c["sensitive"] for c in shown["tables"][0]["columns"]}
    assert [n for n, s in flags.items() if s] == list(SENSITIVE)
    again = ok(
        tht(
            "catalog",
            "sensitive",
            "set",
            "clienti.email",
            "clienti.citta",
            "--on",
            "--reason",
            "r",
            *ANN,
            "--json",
        )
    )
    assert (again["changed"], again["unchanged"]) == (["clienti.citta"], ["clienti.email"])
    off = ok(
        tht(
            "catalog", "sensitive", "set", "clienti.citta", "--off", "--reason", "r", *ANN, "--json"
        )
    )
    assert off["changed"] == ["clienti.citta"]
    assert ok(tht("catalog", "verify", "--json"))["ok"] is True


@pytest.mark.parametrize(
    ("args", "env", "code", "message"),
    [
        (("clienti.email", "--on", "--reason", "r", *ANN), {"THT_ACTOR": "agent"}, 5, "human-only"),
        (("clienti.email", "--on", "--reason", "r"), {}, 2, "--as human"),
        (("clienti.email", "--reason", "r", *ANN), {}, 2, "--on"),
        (("clienti.email", "--on", *ANN), {}, 2, "--reason"),
        (("clienti.nope", "--on", "--reason", "r", *ANN), {}, 3, "no column nope"),
        (("nope.email", "--on", "--reason", "r", *ANN), {}, 3, "not a Catalog Table"),
        (("clienti", "--on", "--reason", "r", *ANN), {}, 2, "TABLE.COLUMN"),
        (("clienti.email", "--off", "--reason", "r", *ANN), {}, 5, "already not sensitive"),
        (("clienti.email", "--on", "--reason", "r", "--as", "agent"), {}, 5, "human-only"),
    ],
)
def test_a_refused_flag_writes_nothing(
    ws: Path,
    tht: Tht,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    code: int,
    message: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    before = ledger(ws)
    done = tht("catalog", "sensitive", "set", *args, "--json")
    assert done.code == code, done.stdout + done.stderr
    assert message in done.stderr
    assert ledger(ws) == before


# ----------------------------------------------------------------------------- sample


def test_a_sample_shows_real_values_until_the_column_is_flagged(ws: Path, tht: Tht) -> None:
    plain = ok(tht("catalog", "sample", "clienti", "--json"))
    assert list(plain) == ["table", "columns", "rows", "row_count", "truncated", "synthetic"]
    assert (plain["row_count"], plain["truncated"], plain["synthetic"]) == (5, True, [])
    assert plain["rows"][0][3] == "zq0.vantrobel@leakcheck.example"  # not flagged yet: real
    flag_all(tht)
    done = tht("catalog", "sample", "clienti", "--json")
    body = ok(done)
    assert body["synthetic"] == list(SENSITIVE)
    assert [c["values"] for c in body["columns"]] == [
        "real",
        *["synthetic"] * 6,
        "real",
        "real",
    ]
    assert [r[0] for r in body["rows"]] == [1, 2, 3, 4, 5]  # ids are real
    assert all(r[7] == "Milano" for r in body["rows"])
    assert all("@" in r[3] for r in body["rows"])  # the e-mail keeps its shape
    assert leaks([done.stdout, done.stderr]) == []
    assert ok(tht("catalog", "sample", "clienti", "--json")) == body  # deterministic
    human = tht("catalog", "sample", "clienti")
    assert human.code == 0 and "(synthetic)" in human.stdout and leaks([human.stdout]) == []


def test_a_sample_writes_nothing_and_refuses_an_unknown_table(ws: Path, tht: Tht) -> None:
    files = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and "cache" not in p.parts}
    ok(tht("catalog", "sample", "ordini", "--json"))
    assert {p: p.read_bytes() for p in files} == files
    assert tht("catalog", "sample", "nope", "--json").code == 3


# ----------------------------------------------------------------------------- sql check / run


def test_sql_check_reports_the_sensitive_columns_it_reads(
    ws: Path, tht: Tht, tmp_path: Path
) -> None:
    flag_all(tht)
    sql = tmp_path / "q.sql"
    sql.write_text("SELECT c.email, o.totale FROM clienti c JOIN ordini o ON o.cliente_id = c.id")
    done = tht("sql", "check", str(sql), "--json")
    body = ok(done)
    assert body["sensitive"] == ["clienti.email"]
    assert "warning: the SQL reads sensitive column(s): clienti.email" in done.stderr
    sql.write_text("SELECT * FROM ordini")
    quiet = tht("sql", "check", str(sql), "--json")
    assert ok(quiet)["sensitive"] == [] and "warning" not in quiet.stderr


def test_sql_run_masks_what_carries_a_sensitive_value(ws: Path, tht: Tht, tmp_path: Path) -> None:
    flag_all(tht)
    sql = tmp_path / "q.sql"
    sql.write_text(
        "SELECT upper(c.email) AS e, c.citta, o.totale "
        "FROM clienti c JOIN ordini o ON o.cliente_id = c.id"
    )
    done = tht("sql", "run", str(sql), "--json")
    body = ok(done)
    assert body["masked"] == [0]
    assert all(r[0] == "[sensitive]" and r[1] == "Milano" for r in body["rows"])
    assert body["row_count"] == 12
    assert leaks([done.stdout, done.stderr]) == []
    plain = tmp_path / "p.sql"
    plain.write_text("SELECT id, totale FROM ordini")
    assert "masked" not in ok(tht("sql", "run", str(plain), "--json"))


# ----------------------------------------------------------------------------- golden


def story(tht: Tht) -> None:
    ok(tht("catalog", "sensitive", "suggest", "--offline", "--json"))
    flag_all(tht)
    ok(
        tht(
            "catalog",
            "sensitive",
            "set",
            "clienti.nome",
            "--off",
            "--reason",
            "a pseudonym",
            *ANN,
            "--json",
        )
    )
    ok(
        tht(
            "catalog", "cleanup", "--column", "clienti.telefono", "--reason", "tidy", *ANN, "--json"
        )
    )
    ok(tht("catalog", "sync", "--json"))  # telefono comes back with the human's flag
    ok(tht("catalog", "sensitive", "suggest", "--scope", "clienti", "--offline", "--json"))


def test_the_catalog_ledger_of_a_flag_story_is_golden(
    ws: Path, tht: Tht, update_golden: bool
) -> None:
    start = len(ledger(ws))
    story(tht)
    lines = ledger(ws)[start:]
    assert str(ws).encode() not in lines and leaks([lines]) == []
    path = GOLDEN / "sensitive_ledger.jsonl"
    if update_golden:
        path.write_bytes(lines)
    assert path.read_bytes() == lines, "drifted (run with --update-golden and explain)"
    shown = ok(tht("catalog", "show", "clienti", "--json"))
    flags = [c["name"] for c in shown["tables"][0]["columns"] if c["sensitive"]]
    assert flags == ["cognome", "email", "codice_fiscale", "telefono", "data_nascita"]
    last = json.loads(lines.splitlines()[-1])
    assert last["payload"]["proposed"] == 1  # nome (cleared by a human) again; telefono flagged
