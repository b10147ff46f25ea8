"""``tht catalog sensitive suggest`` with a model: the Sensitive Data Suggestion Run through the
real CLI, against a real OpenAI-compatible server on 127.0.0.1 (tests/support/openai_server.py)
and a real SQLite database with seeded personal data (tests/support/sensitive_data.py).

The merged proposal is shown whole and nothing is flagged; no request body carries a seeded
value (nor any value); the ledger line holds counts only (no column of the proposal, no prompt,
no raw answer); timeouts, 5xx, invalid JSON and fatal errors count their batches failed and the
run goes on (exit 6 only when nothing answered and the offline pre-pass proposed nothing); an
agent may suggest, never set. Plus the pure validation of an answer (Hypothesis).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modules.catalog.generation_run import GenerationBatch, GenerationTarget
from modules.catalog.sensitive_model import CATEGORIES, validate_answer
from tests.support.openai_server import (
    Answer,
    OpenAITestServer,
    Raw,
    RecordedRequest,
    Stall,
    Status,
    Step,
)
from tests.support.sensitive_data import SENSITIVE, leaks, workspace_files
from tests.support.synced_catalog import (
    ok,
    replace_workspace,
    synced_workspace,
    use_model_config,
    write_model_config,
)
from tests.tht.conftest import Result

Tht = Callable[..., Result]
FLAGGED = [f"clienti.{c}" for c in SENSITIVE]
#: clienti (9 columns: 4 + 4 + 1) and ordini (4), four columns per request
BATCHES = 4
#: a marker only the raw answers carry (an unknown column's name): it must never be stored
RAW_MARKER = "Rawmarkerxyzzy"
#: what only the prompt says
PROMPT_MARKER = "personal and sensitive data"
SUGGEST = ("catalog", "sensitive", "suggest")


def ledger_lines(ws: Path) -> list[dict[str, Any]]:
    raw = (ws / "catalog" / "ledger.jsonl").read_text(encoding="utf-8")
    return [json.loads(x) for x in raw.splitlines()]


def columns_of(request: RecordedRequest) -> list[str]:
    return [c["column"] for c in json.loads(request.user_message)["columns"]]


def judge(request: RecordedRequest) -> Step:
    """The model: the personal columns but ``telefono`` (the offline pre-pass has it), plus
    ``citta`` (only the model), and one item for a column nobody asked for (invalid)."""
    items: list[dict[str, Any]] = []
    for ref in columns_of(request):
        column = ref.partition(".")[2]
        personal = column in SENSITIVE and column != "telefono"
        if column == "citta":
            items.append(
                {"column": ref, "sensitive": True, "category": "address", "confidence": 0.4}
            )
            continue
        category = {"email": "email", "codice_fiscale": "fiscal_code"}.get(column, "name")
        items.append(
            {
                "column": ref,
                "sensitive": personal,
                "category": category if personal else "none",
                "confidence": 0.9 if personal else 0.1,
            }
        )
    items.append({"column": f"ghost.{RAW_MARKER}", "sensitive": True, "category": "other"})
    return Answer(content=json.dumps({"flags": items}))


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace bound to the seeded database and synced; nothing flagged."""
    return synced_workspace(tmp_path_factory, "sensitive-model")


@pytest.fixture
def server() -> Any:
    with OpenAITestServer(flavor="ollama") as s:
        s.responder = judge
        yield s


@pytest.fixture
def ws(
    synced: Path,
    workspace: Path,
    tmp_path: Path,
    server: OpenAITestServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    use_model_config(tmp_path, server, monkeypatch)
    return replace_workspace(synced, workspace)


def snapshot(ws: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in workspace_files(ws, database=ws / "data" / "clienti.db")}


def everything_leaked(
    ws: Path, before: dict[Path, bytes], server: OpenAITestServer, *outputs: Result
) -> list[str]:
    """Seeded values in a request body, an output, or a file the run wrote or changed (nothing
    is flagged here, so the value index built at sync holds real values: not the run's)."""
    bodies = [json.dumps(r.body) for r in server.requests]
    files = [b for p, b in snapshot(ws).items() if before.get(p) != b]
    texts = [t for o in outputs for t in (o.stdout, o.stderr)]
    return leaks([*bodies, *files, *texts])


def refs(body: dict[str, Any]) -> list[str]:
    return [f"{p['table']}.{p['column']}" for p in body["proposals"]]


def not_flagged(tht: Tht) -> bool:
    shown = ok(tht("catalog", "show", "--json"))
    return not any(c["sensitive"] for t in shown["tables"] for c in t["columns"])


# ----------------------------------------------------------------------------- a full run


def test_the_merged_proposal_is_shown_whole_and_nothing_is_flagged(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    before = (ws / "catalog" / "ledger.jsonl").read_bytes()
    files = snapshot(ws)
    done = tht(*SUGGEST, "--json")
    body = ok(done)
    assert done.stderr == ""
    assert list(body)[:8] == [
        "run",
        "mode",
        "scope",
        "considered",
        "already_flagged",
        "proposed",
        "proposals",
        "profile",
    ]
    assert (body["mode"], body["considered"], body["already_flagged"]) == ("model", 13, 0)
    assert (body["batches"], body["answered_batches"], body["failed_batches"]) == (BATCHES, 4, 0)
    assert (body["offline_proposed"], body["model_proposed"], body["invalid_items"]) == (6, 6, 4)
    # a column either flags: every personal column (telefono: offline only) and citta (model)
    assert refs(body) == [*FLAGGED, "clienti.citta"]
    assert body["proposed"] == 7
    by_ref = {f"{p['table']}.{p['column']}": p for p in body["proposals"]}
    email = by_ref["clienti.email"]
    assert [s["source"] for s in email["sources"]] == ["offline", "model:ollama-local"]
    assert (email["rule"], email["source"], email["offline"]) == ("email", "offline", True)
    assert [s["source"] for s in by_ref["clienti.telefono"]["sources"]] == ["offline"]
    citta = by_ref["clienti.citta"]
    assert (citta["rule"], citta["source"], citta["offline"]) == (
        "address",
        "model:ollama-local",
        False,
    )
    assert (citta["confidence"], citta["type"]) == (0.4, "TEXT")
    # the requests: bounded, structural metadata only
    requests = server.chat_requests()
    assert len(requests) == BATCHES
    assert all(1 <= len(columns_of(r)) <= 4 for r in requests)
    assert sorted(c for r in requests for c in columns_of(r)) == sorted(
        [*(f"clienti.{c}" for c in ("id", *SENSITIVE, "citta", "punti"))]
        + [f"ordini.{c}" for c in ("id", "cliente_id", "totale", "stato")]
    )
    assert all(r.body["response_format"] == {"type": "json_object"} for r in requests)
    bodies = "".join(json.dumps(r.body) for r in requests)
    assert leaks([bodies]) == [] and "Milano" not in bodies and "chiuso" not in bodies
    # the ledger: one line, counts only
    added = (ws / "catalog" / "ledger.jsonl").read_bytes()[len(before) :]
    (line,) = [json.loads(x) for x in added.splitlines()]
    assert (line["type"], line["actor"]) == ("sensitive_suggestion_run", "module:catalog")
    assert line["payload"] == {
        "run": body["run"],
        "mode": "model",
        "scope": None,
        "considered": 13,
        "proposed": 7,
        "profile": "ollama-local",
        "model": body["model"],
        "offline_proposed": 6,
        "model_proposed": 6,
        "batches": 4,
        "failed_batches": 0,
        "skipped_batches": 0,
        "invalid_items": 4,
        "failure": "",
    }
    for word in (*SENSITIVE, "citta", RAW_MARKER, PROMPT_MARKER, "address", '"flags"', "ghost"):
        assert word.encode() not in added, word
    assert not_flagged(tht)
    assert everything_leaked(ws, files, server, done) == []
    assert ok(tht("catalog", "verify", "--json"))["ok"] is True
    runs = ok(tht("catalog", "runs", "--kind", "suggestion", "--json"))["runs"]
    assert [(r["run"], r["mode"], r["proposed"]) for r in runs] == [(body["run"], "model", 7)]
    model_run = (runs[0]["profile"], runs[0]["batches"], runs[0]["failed_batches"])
    assert model_run == ("ollama-local", BATCHES, 0)


def test_the_human_output_shows_both_sources_and_the_command_that_saves(ws: Path, tht: Tht) -> None:
    done = tht(*SUGGEST, "--scope", "clienti")
    assert done.code == 0, done.stderr
    assert "offline pre-pass + model ollama-local, 3/3 batch(es) answered" in done.stdout
    assert "offline+model:ollama-local" in "".join(done.stdout.split())  # the table wraps
    assert (
        "tht catalog sensitive set clienti.nome" in done.stdout and "clienti.citta" in done.stdout
    )


def test_flagged_columns_are_not_asked_and_an_agent_may_suggest_but_never_set(
    ws: Path, tht: Tht, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(
        tht(
            "catalog", "sensitive", "set", *FLAGGED, "--on", "--reason", "personal",
            "--as", "human:ann", "--json",
        )
    )  # fmt: skip
    monkeypatch.setenv("THT_ACTOR", "agent")
    body = ok(tht(*SUGGEST, "--scope", "clienti", "--json"))
    asked = [c for r in server.chat_requests() for c in columns_of(r)]
    assert asked == ["clienti.id", "clienti.citta", "clienti.punti"]
    assert (body["already_flagged"], body["batches"], refs(body)) == (6, 1, ["clienti.citta"])
    before = (ws / "catalog" / "ledger.jsonl").read_bytes()
    refused = tht("catalog", "sensitive", "set", "clienti.citta", "--on", "--reason", "x", "--json")
    assert refused.code == 5
    assert (ws / "catalog" / "ledger.jsonl").read_bytes() == before


# ----------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (Stall(3.0), "timeout"),
        (Answer(content="this is not json"), "invalid-json"),
        (Answer(content='{"verdict": "sensitive"}'), "invalid-shape"),
        (Raw(200, b"<html>oops</html>", "text/html"), "invalid-response"),
        (Status(503), "http-error"),
    ],
)
def test_a_failed_batch_is_counted_and_the_run_goes_on(
    ws: Path, tht: Tht, server: OpenAITestServer, bad: Step, kind: str
) -> None:
    calls: list[int] = []

    def responder(request: RecordedRequest) -> Step:
        calls.append(1)
        return bad if len(calls) == 2 else judge(request)

    server.responder = responder
    done = tht(*SUGGEST, "--json")
    body = ok(done)
    assert (body["failed_batches"], body["answered_batches"], body["failure"]) == (1, 3, kind)
    assert f"1 of 4 model batch(es) failed ({kind})" in done.stderr
    # batch 2 (codice_fiscale, telefono, data_nascita, citta): the offline pre-pass only
    assert refs(body) == FLAGGED
    assert all(p["offline"] for p in body["proposals"])
    payload = ledger_lines(ws)[-1]["payload"]
    assert (payload["failed_batches"], payload["failure"], payload["model_proposed"]) == (
        1,
        kind,
        3,
    )
    assert "oops" not in (ws / "catalog" / "ledger.jsonl").read_text(encoding="utf-8")
    assert not_flagged(tht)


def test_failures_in_a_row_stop_the_model_and_the_offline_result_still_shows(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    server.responder = lambda request: Status(500)
    done = tht(*SUGGEST, "--json")
    body = ok(done)  # the offline result is there: exit 0 with a warning
    assert (body["failed_batches"], body["skipped_batches"], body["answered_batches"]) == (3, 1, 0)
    assert len(server.chat_requests()) == 3
    assert refs(body) == FLAGGED and body["model_proposed"] == 0
    assert "3 of 4 model batch(es) failed (http-error), 1 not asked" in done.stderr


def test_a_fatal_kind_stops_at_once(ws: Path, tht: Tht, server: OpenAITestServer) -> None:
    server.responder = lambda request: Status(401)
    body = ok(tht(*SUGGEST, "--json"))
    assert (body["failed_batches"], body["skipped_batches"], body["failure"]) == (
        1,
        3,
        "auth-error",
    )
    assert len(server.chat_requests()) == 1


def test_nothing_answered_and_nothing_offline_exits_6_with_the_run_recorded(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    server.responder = lambda request: Answer(content="[1, 2, 3]")  # no valid item at all
    done = tht(*SUGGEST, "--scope", "ordini", "--json")
    assert done.code == 6, done.stdout + done.stderr
    error = done.json()["error"]
    assert "no batch answered (invalid-answer)" in error["message"]
    details = error["details"]
    assert (details["proposed"], details["failed_batches"], details["invalid_items"]) == (0, 1, 3)
    last = ledger_lines(ws)[-1]
    assert (last["type"], last["payload"]["failed_batches"]) == ("sensitive_suggestion_run", 1)


# ----------------------------------------------------------------------------- the setup


def test_without_a_configured_model_or_with_offline_no_request_is_made(
    ws: Path, tht: Tht, server: OpenAITestServer, tmp_path: Path
) -> None:
    offline = tht(*SUGGEST, "--offline", "--json")
    assert ok(offline)["mode"] == "offline" and offline.stderr == ""
    assert all(p["source"] == "offline" for p in offline.json()["proposals"])
    (tmp_path / "config.yaml").write_text("catalog: {timeout_ms: 2000}\n", encoding="utf-8")
    none = tht(*SUGGEST, "--json")
    assert ok(none)["mode"] == "offline"
    assert "no generation model configured" in none.stderr and "offline pre-pass" in none.stderr
    assert server.chat_requests() == []
    write_model_config(tmp_path / "config.yaml", None)  # keyless, no explicit endpoint
    wrong = tht(*SUGGEST, "--json")
    assert wrong.code == 2 and "explicit endpoint" in wrong.stderr


# ----------------------------------------------------------------------------- the answer

BATCH = GenerationBatch(
    "t", (GenerationTarget("t", "a"), GenerationTarget("t", "b"), GenerationTarget("t", "c"))
)


def test_validation_refuses_bad_items_one_by_one() -> None:
    good = {"column": "t.a", "sensitive": True, "category": "email", "confidence": 0.8}
    items = [
        good,
        {**good},  # repeated
        {**good, "column": "t.zzz"},  # unknown
        {**good, "column": "T.B", "category": "secret"},  # not a category
        {**good, "column": "t.b", "confidence": 1.5},
        {**good, "column": "t.b", "confidence": True},
        {**good, "column": "t.b", "sensitive": "yes"},
        {**good, "column": "t.c", "sensitive": True, "category": "none"},  # none: not sensitive
        "t.c",
    ]
    outcome = validate_answer(json.dumps({"flags": items}), BATCH)
    assert [f.target.ref for f in outcome.flags] == ["t.a"]
    assert outcome.invalid_items == len(items) - 1
    folded = validate_answer(
        json.dumps([{"column": "T.B", "sensitive": False, "category": "none", "confidence": 0}]),
        BATCH,
    )
    assert [(f.target.ref, f.sensitive) for f in folded.flags] == [("t.b", False)]
    assert validate_answer("nope", BATCH).problem == "invalid-json"
    assert validate_answer('{"flags": 1}', BATCH).problem == "invalid-shape"


_json = st.recursive(
    st.none() | st.booleans() | st.floats(-2, 2) | st.sampled_from(["t.a", "t.b", "x", "email"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["column", "sensitive", "category", "confidence", "flags"]), inner, max_size=5),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(answer=_json)
def test_validation_never_raises_and_keeps_only_well_formed_items_of_the_batch(
    answer: Any,
) -> None:
    outcome = validate_answer(json.dumps(answer), BATCH)
    refs_seen = [f.target.ref for f in outcome.flags]
    assert len(refs_seen) == len(set(refs_seen))
    assert set(refs_seen) <= {t.ref for t in BATCH.targets}
    for flag in outcome.flags:
        assert 0 <= flag.confidence <= 1
        assert flag.category in CATEGORIES or (not flag.sensitive and flag.category == "none")
