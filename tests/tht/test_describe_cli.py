"""``tht catalog describe | consolidate | runs`` through the real CLI on a real SQLite database:
a Description by hand (human-only), a Generated Description proposed by an agent, Description
Consolidation (human-only), the schema index following a Description, the guard's entries, and
the golden catalog ledger of a whole curation story."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.synced_catalog import ok, replace_workspace, synced_workspace
from tests.tht.conftest import Result

Tht = Callable[..., Result]
ANN = ("--as", "human:ann")
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "catalog"


def ledger(ws: Path) -> bytes:
    return (ws / "catalog" / "ledger.jsonl").read_bytes()


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workspace bound to the seeded database and synced, copied by each test."""
    return synced_workspace(tmp_path_factory, "describe")


@pytest.fixture
def ws(synced: Path, workspace: Path) -> Path:
    return replace_workspace(synced, workspace)


def propose(tht: Tht, target: str, text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setenv("THT_ACTOR", "agent")  # the agent's shell
        return ok(tht("catalog", "describe", target, "--propose", "--text", text, "--json"))


def column(tht: Tht, table: str, name: str) -> Any:
    shown = ok(tht("catalog", "show", table, "--json"))["tables"][0]
    return next(c for c in shown["columns"] if c["name"] == name)


# ----------------------------------------------------------------------------- describe


def test_a_human_describes_a_column_and_show_reports_it(ws: Path, tht: Tht) -> None:
    done = tht(
        "catalog", "describe", "ORDINI.Stato", "--text", "Lo stato", "--reason", "r", *ANN, "--json"
    )
    body = ok(done)
    assert list(body) == ["seq", "events", "head", "target"]
    assert body["target"] == "ordini.stato"
    assert body["events"] == [{"seq": 3, "type": "description_set"}]
    assert "tht catalog reindex" in done.stderr
    assert column(tht, "ordini", "stato")["description"] == "Lo stato"
    table = tht("catalog", "describe", "ordini", "--text", "Ordini", "--reason", "r", *ANN)
    assert table.code == 0 and table.stdout.strip() == "described ordini"
    human = tht("catalog", "show", "ordini")
    assert (
        human.code == 0 and "ordini (fresh): Ordini" in human.stdout and "Lo stato" in human.stdout
    )


def test_an_agent_proposes_a_generated_description_that_is_not_the_description(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = propose(tht, "clienti.citta", "La città di residenza", monkeypatch)
    assert body["target"] == "clienti.citta"
    line = json.loads(ledger(ws).splitlines()[-1])
    assert (line["type"], line["actor"]) == ("description_generated", "agent")
    assert line["payload"] == {
        "target": "clienti.citta",
        "text": "La città di residenza",
        "language": "it",  # the workspace's first language
        "source": "agent",
        "run": None,
        "non_generatable": False,
        "reason": "",
    }
    shown = column(tht, "clienti", "citta")
    assert shown["description"] == ""
    assert shown["generated"] == {
        "text": "La città di residenza",
        "language": "it",
        "source": "agent",
        "run": None,
        "non_generatable": False,
        "reason": None,
        "seq": 3,
        "pending": True,
    }
    human = tht("catalog", "describe", "clienti", "--propose", "--text", "t", "--language", "en")
    assert human.code == 0 and "tht catalog consolidate clienti" in human.stdout
    assert json.loads(ledger(ws).splitlines()[-1])["payload"]["language"] == "en"


# ----------------------------------------------------------------------------- consolidate


def test_consolidation_makes_the_pending_generated_descriptions_the_descriptions(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    propose(tht, "ordini", "Gli ordini dei clienti", monkeypatch)
    propose(tht, "ordini.totale", "Il totale in euro", monkeypatch)
    propose(tht, "clienti.punti", "Punti fedeltà", monkeypatch)
    ok(tht("catalog", "consolidate", "clienti.punti", "--reason", "ok", *ANN, "--json"))
    done = tht("catalog", "consolidate", "--all-generated", "--reason", "rivisti", *ANN, "--json")
    body = ok(done)
    assert list(body) == ["seq", "events", "head", "consolidated", "skipped"]
    assert body["consolidated"] == ["ordini", "ordini.totale"]
    assert body["skipped"] == [{"target": "clienti.punti", "why": "already_consolidated"}]
    assert body["events"] == [{"seq": body["seq"], "type": "descriptions_consolidated"}]
    totale = column(tht, "ordini", "totale")
    assert totale["description"] == "Il totale in euro"
    assert totale["generated"]["text"] == "Il totale in euro"  # kept
    assert totale["generated"]["pending"] is False
    line = json.loads(ledger(ws).splitlines()[-1])
    assert line["actor"] == "human:ann" and line["payload"]["reason"] == "rivisti"
    assert ok(tht("catalog", "verify", "--json"))["ok"] is True


def test_a_human_edit_after_consolidation_wins_and_is_not_undone(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    propose(tht, "ordini.stato", "Stato", monkeypatch)
    ok(tht("catalog", "consolidate", "ordini.stato", "--reason", "ok", *ANN, "--json"))
    describe = ("catalog", "describe", "ordini.stato", "--text", "Stato dell'ordine")
    ok(tht(*describe, "--reason", "più chiaro", *ANN, "--json"))
    before = ledger(ws)
    done = tht("catalog", "consolidate", "--all-generated", "--reason", "r", *ANN, "--json")
    assert done.code == 5 and "edited_after" in done.stderr
    assert done.json()["error"]["details"]["skipped"] == [
        {"target": "ordini.stato", "why": "edited_after"}
    ]
    assert ledger(ws) == before
    assert column(tht, "ordini", "stato")["description"] == "Stato dell'ordine"


@pytest.mark.parametrize(
    ("args", "env", "code", "message"),
    [
        # describe by hand: human-only
        (("describe", "ordini", "--text", "t", "--reason", "r", *ANN), "agent", 5, "human-only"),
        (("describe", "ordini", "--text", "t", "--reason", "r"), None, 2, "--as human"),
        (("describe", "ordini", "--text", "t", "--reason", "r", "--as", "agent"), None, 5, "human"),
        (("describe", "ordini", "--text", "", "--reason", "r", *ANN), None, 2, "empty"),
        (("describe", "ordini", "--text", "  ", "--reason", "r", *ANN), None, 2, "empty"),
        (("describe", "ordini", "--reason", "r", *ANN), None, 2, "--text"),
        (("describe", "ordini", "--text", "t", *ANN), None, 2, "--reason"),
        (("describe", "nope", "--text", "t", "--reason", "r", *ANN), None, 3, "not a Catalog"),
        (("describe", "ordini.nope", "--text", "t", "--reason", "r", *ANN), None, 3, "no column"),
        # a proposal: anyone, but never with --as, never empty, only on what exists
        (("describe", "ordini", "--propose", "--text", "t", *ANN), None, 2, "drop --as"),
        (("describe", "ordini", "--propose", "--text", " "), "agent", 2, "empty"),
        (("describe", "ordini", "--propose"), "agent", 2, "--text"),
        (("describe", "nope.x", "--propose", "--text", "t"), "agent", 3, "not a Catalog"),
        # consolidate: human-only, a selection, something pending
        (("consolidate", "ordini", "--reason", "r", *ANN), "agent", 5, "human-only"),
        (("consolidate", "ordini", "--reason", "r"), None, 2, "--as human"),
        (("consolidate", "--reason", "r", *ANN), None, 2, "--all-generated"),
        (("consolidate", "ordini", "--all-generated", "--reason", "r", *ANN), None, 2, "or pass"),
        (("consolidate", "ordini", *ANN), None, 2, "--reason"),
        (("consolidate", "nope", "--reason", "r", *ANN), None, 3, "not a Catalog"),
        (("consolidate", "ordini", "--reason", "r", *ANN), None, 5, "no_generated"),
        (("consolidate", "--all-generated", "--reason", "r", *ANN), None, 5, "nothing"),
        (("runs", "--kind", "nope"), None, 2, "expected one of"),
    ],
)
def test_a_refused_command_writes_nothing(
    ws: Path,
    tht: Tht,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: str | None,
    code: int,
    message: str,
) -> None:
    if env is not None:
        monkeypatch.setenv("THT_ACTOR", env)
    files = {p: p.read_bytes() for p in (ws / "catalog").rglob("*") if p.is_file()}
    done = tht("catalog", *args, "--json")
    assert done.code == code, done.stdout + done.stderr
    assert message in done.stderr
    assert json.loads(done.stdout)["error"]["exit_code"] == code  # --json stays pristine
    assert {p: p.read_bytes() for p in files} == files
    assert sorted(p for p in (ws / "catalog").rglob("*") if p.is_file()) == sorted(files)


def test_the_same_description_again_is_refused(ws: Path, tht: Tht) -> None:
    args = ("catalog", "describe", "ordini", "--text", "Ordini", "--reason", "r", *ANN, "--json")
    ok(tht(*args))
    before = ledger(ws)
    done = tht(*args)
    assert done.code == 5 and "already has that Description" in done.stderr
    assert ledger(ws) == before


def test_a_consolidation_forged_by_an_agent_fails_verification(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel import catalog_events as cev
    from kernel import events as ev
    from kernel.clock import FixedClock
    from tht import catalog_runtime
    from tht.composition import open_app

    body = propose(tht, "ordini", "Gli ordini", monkeypatch)
    ledger_ = catalog_runtime.open_catalog(open_app(ws)).caps.ledger
    forged = ev.EventDraft(
        type="descriptions_consolidated",
        actor="agent",
        payload=cev.DescriptionsConsolidatedPayload(
            targets=(cev.ConsolidatedTargetPayload(target="ordini", generated_seq=body["seq"]),),
            reason="trust me",
        ),
    )
    ledger_.append([forged], expected_last_seq=body["seq"], clock=FixedClock())
    done = tht("catalog", "verify", "--json")
    assert done.code == 7
    assert [p["code"] for p in done.json()["problems"]] == ["actor"]
    assert ok(tht("catalog", "show", "ordini", "--json"))["tables"][0]["description"] == ""
    refused = tht("catalog", "describe", "ordini", "--text", "t", "--reason", "r", *ANN)
    assert refused.code == 7  # no write is accepted on it


# ----------------------------------------------------------------------------- the schema index


def test_a_description_makes_the_schema_index_stale_until_reindexed(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = ("schema", "link", "quanti ordini", "--json")
    ok(tht(*question))
    propose(tht, "ordini.stato", "Lo stato di spedizione", monkeypatch)
    ok(tht(*question))  # a proposal is not in the index: still fresh
    ok(tht("catalog", "consolidate", "ordini.stato", "--reason", "ok", *ANN, "--json"))
    stale = tht(*question)
    assert stale.code == 6 and stale.json()["error"]["details"]["reason"] == "stale"
    body = ok(tht("catalog", "reindex", "--json"))
    assert (body["embedded"], body["deleted"]) == (1, 1)  # exactly the described column
    ok(tht(*question))


# ----------------------------------------------------------------------------- runs


def test_runs_lists_every_kind_with_its_log(ws: Path, tht: Tht) -> None:
    ok(tht("catalog", "sensitive", "suggest", "--offline", "--json"))
    body = ok(tht("catalog", "runs", "--json"))
    assert list(body) == ["runs", "active"]
    assert [r["kind"] for r in body["runs"]] == ["sync", "suggestion"]
    sync, suggestion = body["runs"]
    assert sync["status"] == "completed" and sync["log"] == f"catalog/runs/{sync['run']}.log"
    assert (ws / sync["log"]).is_file()
    assert (suggestion["status"], suggestion["log"], suggestion["proposed"]) == (
        "completed",
        None,
        6,
    )
    assert body["active"] == {"sync": None, "generation": None}
    only = ok(tht("catalog", "runs", "--kind", "suggestion", "--json"))
    assert [r["kind"] for r in only["runs"]] == ["suggestion"]
    assert ok(tht("catalog", "runs", "--kind", "generation", "--json"))["runs"] == []
    human = tht("catalog", "runs")
    assert human.code == 0 and "suggestion" in human.stdout and sync["log"] in human.stdout


# ----------------------------------------------------------------------------- the guard


@pytest.mark.parametrize(
    ("command", "denied"),
    [
        ("tht catalog describe ordini --text t --reason r --as human:x", True),
        ("tht catalog describe ordini --text t --reason r --as=human:x", True),
        ("tht --json catalog consolidate --all-generated --reason r", True),
        ("tht catalog consolidate ordini.stato --reason r --as human:x", True),
        ("tht catalog describe ordini --propose --text 'Gli ordini'", False),
        ("tht catalog runs --json", False),
    ],
)
def test_the_guard_refuses_the_human_only_forms(command: str, denied: bool) -> None:
    from tht.hooks.guard_hook import check_tool_call
    from tht.hooks.guard_rules import RAW_HUMAN

    call = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    reason = check_tool_call(call)
    assert (reason is not None and "human-only" in reason) is denied
    assert bool(RAW_HUMAN.search(command)) is denied  # the fail-closed fallback agrees


# ----------------------------------------------------------------------------- golden


def story(tht: Tht, monkeypatch: pytest.MonkeyPatch) -> None:
    propose(tht, "ordini", "Gli ordini dei clienti", monkeypatch)
    propose(tht, "ordini.totale", "L'importo dell'ordine", monkeypatch)
    propose(tht, "ordini.stato", "Lo stato", monkeypatch)
    ok(tht("catalog", "consolidate", "--all-generated", "--reason", "rivisti", *ANN, "--json"))
    ok(
        tht(
            "catalog",
            "describe",
            "ordini.stato",
            "--text",
            "Lo stato dell'ordine: aperto o chiuso",
            "--reason",
            "più preciso",
            *ANN,
            "--json",
        )
    )
    propose(tht, "ordini.stato", "Stato di lavorazione", monkeypatch)  # pending, not applied
    ok(tht("catalog", "sync", "--json"))  # an unchanged resync keeps all of it


def test_the_catalog_ledger_of_a_description_story_is_golden(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch, update_golden: bool
) -> None:
    start = len(ledger(ws))
    story(tht, monkeypatch)
    lines = ledger(ws)[start:]
    assert str(ws).encode() not in lines
    path = GOLDEN / "descriptions_ledger.jsonl"
    if update_golden:
        path.write_bytes(lines)
    assert path.read_bytes() == lines, "drifted (run with --update-golden and explain)"
    shown = ok(tht("catalog", "show", "ordini", "--json"))["tables"][0]
    assert shown["description"] == "Gli ordini dei clienti"
    described = {c["name"]: (c["description"], c["generated"]) for c in shown["columns"]}
    assert described["totale"][0] == "L'importo dell'ordine"
    stato, generated = described["stato"]
    assert stato == "Lo stato dell'ordine: aperto o chiuso"
    assert generated["text"] == "Stato di lavorazione" and generated["pending"] is True
    assert ok(tht("catalog", "verify", "--json"))["ok"] is True
