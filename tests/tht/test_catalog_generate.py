"""``tht catalog generate``: Description Generation Runs through the real CLI, against a real
OpenAI-compatible server on 127.0.0.1 (tests/support/openai_server.py) and a real SQLite
database with seeded personal data (tests/support/sensitive_data.py).

Full runs, timeouts, invalid JSON, 5xx, non-generatable answers, a SIGKILL in the middle of a
run (what was saved stays; the lock is stale; unlock; ``--missing-only`` asks only for the
rest), the installation-wide lock, the setup-level configuration, and the greps: no request
body ever carries a seeded value, no ledger line or log carries a prompt or a raw response.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.process_lock import process_lock
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
from tests.tht.conftest import Result, run_tht

Tht = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]
FLAGGED = [f"clienti.{c}" for c in SENSITIVE]
#: clienti (1 + 9 columns) and ordini (1 + 4), four columns per request
TARGETS = 15
BATCHES = 4
#: a marker only the raw answers carry (an unknown target's text): it must never be stored
RAW_MARKER = "Rawmarkerxyzzy"


def lines(ws: Path) -> list[dict[str, Any]]:
    raw = (ws / "catalog" / "ledger.jsonl").read_text(encoding="utf-8")
    return [json.loads(x) for x in raw.splitlines()]


def generated_refs(ws: Path) -> list[str]:
    return [e["payload"]["target"] for e in lines(ws) if e["type"] == "description_generated"]


def targets_of(request: RecordedRequest) -> list[str]:
    return list(json.loads(request.user_message)["targets"])


def describe_all(request: RecordedRequest) -> Step:
    """A valid answer for every target asked, plus one item for a target nobody asked for."""
    items = [
        {"target": t, "description": f"Descrizione di {t}.", "non_generatable": False, "reason": ""}
        for t in targets_of(request)
    ]
    items.append(
        {"target": "nobody", "description": RAW_MARKER, "non_generatable": False, "reason": ""}
    )
    return Answer(content=json.dumps({"descriptions": items}))


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace bound to the seeded database, synced, its personal columns flagged."""

    def flag_personal_columns() -> None:
        ok(
            run_tht(
                "catalog",
                "sensitive",
                "set",
                *FLAGGED,
                "--on",
                "--reason",
                "personal",
                "--as",
                "human:ann",
                "--json",
            )
        )

    return synced_workspace(tmp_path_factory, "generate", then=flag_personal_columns)


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama") as s:
        s.responder = describe_all
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


def everything_leaked(ws: Path, server: OpenAITestServer, *outputs: Result) -> list[str]:
    bodies = [json.dumps(r.body) for r in server.requests]
    files = [p.read_bytes() for p in workspace_files(ws, database=ws / "data" / "clienti.db")]
    home = [p.read_bytes() for p in workspace_files(ws.parent / "home")]
    texts = [t for o in outputs for t in (o.stdout, o.stderr)]
    return leaks([*bodies, *files, *home, *texts])


# ----------------------------------------------------------------------------- a full run


def test_a_full_run_saves_every_target_and_records_counts_only(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    done = tht("catalog", "generate", "--json")
    body = ok(done)
    assert (body["status"], body["requested"], body["generated"]) == ("completed", TARGETS, TARGETS)
    assert (body["non_generatable"], body["failed"], body["skipped"]) == (0, 0, 0)
    assert (body["profile"], body["language"], body["scope"]) == ("ollama-local", "it", None)
    requests = server.chat_requests()
    assert len(requests) == BATCHES
    for request in requests:
        asked = targets_of(request)
        assert sum("." in t for t in asked) <= 4  # at most N columns per request
        assert request.body["response_format"] == {"type": "json_object"}
    entries = lines(ws)
    kinds = [e["type"] for e in entries[-(TARGETS + 2) :]]
    assert kinds == [
        "description_generation_started",
        *["description_generated"] * TARGETS,
        "description_generation_finished",
    ]
    assert entries[-1]["payload"] == {
        "run": body["run"],
        "status": "completed",
        "requested": TARGETS,
        "generated": TARGETS,
        "non_generatable": 0,
        "failed": 0,
        "skipped": 0,
        "reason": "",
    }
    first = next(e for e in entries if e["type"] == "description_generated")
    assert first["actor"] == "module:catalog"
    assert first["payload"] == {
        "target": "clienti",
        "text": "Descrizione di clienti.",
        "language": "it",
        "source": "model:ollama-local",
        "run": body["run"],
        "non_generatable": False,
        "reason": "",
    }
    # the ledger and the run log: never a prompt, never a raw response, never a value
    stored = (ws / "catalog" / "ledger.jsonl").read_text(encoding="utf-8")
    log = (ws / body["log"]).read_text(encoding="utf-8")
    for text in (stored, log):
        assert RAW_MARKER not in text and "metadata catalog" not in text
        assert '"descriptions"' not in text and '"primary_key":' not in text
    assert "batch 4/4" in log and "completed: 15 generated" in log
    assert everything_leaked(ws, server, done) == []
    assert ok(tht("catalog", "verify", "--json"))["ok"] is True


def test_no_request_body_ever_carries_a_value_even_of_unflagged_columns(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    ok(
        tht(
            "catalog",
            "sensitive",
            "set",
            *FLAGGED,
            "--off",
            "--reason",
            "x",
            "--as",
            "human:ann",
            "--json",
        )
    )
    ok(tht("catalog", "generate", "--scope", "clienti", "--json"))
    bodies = [json.dumps(r.body) for r in server.chat_requests()]
    assert bodies and leaks(bodies) == []
    assert "Milano" not in "".join(bodies)  # nor a value of a column never flagged


def test_a_scope_and_the_human_output(ws: Path, tht: Tht) -> None:
    done = tht("catalog", "generate", "--scope", "ordini")
    assert done.code == 0, done.stderr
    assert "completed (ollama-local, it): 5 generated" in done.stdout
    assert generated_refs(ws) == [
        "ordini",
        "ordini.id",
        "ordini.cliente_id",
        "ordini.totale",
        "ordini.stato",
    ]


# ----------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (Stall(3.0), "timeout"),
        (Answer(content="this is not json"), "invalid-json"),
        (Raw(200, b"<html>oops</html>", "text/html"), "invalid-response"),
        (Status(503), "http-error"),
    ],
)
def test_a_provider_failure_is_counted_and_the_run_goes_on(
    ws: Path, tht: Tht, server: OpenAITestServer, bad: Step, kind: str
) -> None:
    first = describe_all
    calls: list[int] = []

    def responder(request: RecordedRequest) -> Step:
        calls.append(1)
        return bad if len(calls) == 2 else first(request)

    server.responder = responder
    body = ok(tht("catalog", "generate", "--json"))
    assert body["status"] == "completed"
    assert (body["generated"], body["failed"], body["skipped"]) == (TARGETS - 4, 4, 0)
    assert body["failed_targets"] == [
        "clienti.codice_fiscale",
        "clienti.telefono",
        "clienti.data_nascita",
        "clienti.citta",
    ]
    log = (ws / body["log"]).read_text(encoding="utf-8")
    assert f"batch 2/4 (clienti, 4 target(s)): failed ({kind}); nothing saved" in log
    assert "oops" not in log and "oops" not in json.dumps(lines(ws))
    # the manual recovery: only the failed ones are asked for again
    server.responder = describe_all
    server.reset()
    server.responder = describe_all
    again = ok(tht("catalog", "generate", "--missing-only", "--json"))
    assert [t for r in server.chat_requests() for t in targets_of(r)] == body["failed_targets"]
    assert (again["generated"], again["skipped"], again["requested"]) == (4, TARGETS - 4, TARGETS)


def test_failures_in_a_row_end_the_run_failed_and_keep_what_was_saved(
    ws: Path, tht: Tht, server: OpenAITestServer, tmp_path: Path
) -> None:
    write_model_config(tmp_path / "config.yaml", server, batch_columns=2)
    calls: list[int] = []

    def responder(request: RecordedRequest) -> Step:
        calls.append(1)
        return describe_all(request) if len(calls) == 1 else Status(500)

    server.responder = responder
    done = tht("catalog", "generate", "--json")
    assert done.code == 6, done.stderr
    error = done.json()["error"]
    assert "failed (http-error)" in error["message"]
    details = error["details"]
    # batch 1 (3 targets) saved, batches 2-4 (2 each) failed, the other 3 batches not asked
    assert (details["status"], details["generated"], details["failed"], details["skipped"]) == (
        "failed",
        3,
        6,
        6,
    )
    assert len(server.chat_requests()) == 4
    assert generated_refs(ws) == ["clienti", "clienti.id", "clienti.nome"]  # batch 1 stays
    assert lines(ws)[-1]["payload"]["status"] == "failed"
    assert lines(ws)[-1]["payload"]["reason"] == "http-error"


def test_a_fatal_kind_stops_at_once(ws: Path, tht: Tht, server: OpenAITestServer) -> None:
    server.responder = lambda request: Status(401)
    done = tht("catalog", "generate", "--json")
    assert done.code == 6
    details = done.json()["error"]["details"]
    assert (details["failed"], details["skipped"], details["reason"]) == (5, 10, "auth-error")
    assert len(server.chat_requests()) == 1


def test_a_non_generatable_answer_is_a_valid_outcome_in_the_workspace_language(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    def responder(request: RecordedRequest) -> Step:
        items = [
            {"target": t, "description": "", "non_generatable": True, "reason": "only a name"}
            for t in targets_of(request)
        ]
        return Answer(content=json.dumps({"descriptions": items}))

    server.responder = responder
    body = ok(tht("catalog", "generate", "--scope", "ordini", "--json"))
    assert (body["status"], body["generated"], body["non_generatable"]) == ("completed", 0, 5)
    entry = next(e for e in lines(ws) if e["type"] == "description_generated")
    assert entry["payload"]["non_generatable"] is True
    assert entry["payload"]["text"].startswith("Descrizione non generabile")
    assert entry["payload"]["reason"] == "only a name"
    again = ok(tht("catalog", "generate", "--scope", "ordini", "--missing-only", "--json"))
    assert again["run"] is None and again["skipped"] == 5  # the model already said so


# ----------------------------------------------------------------------------- the lock


def test_one_run_per_installation_and_no_unlock_while_a_process_holds_it(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    lock = ws.parent / "home" / "locks" / "description-generation.lock"
    with process_lock(lock, busy="held"):
        done = tht("catalog", "generate", "--json")
        assert done.code == 4 and "one at a time per installation" in done.stderr
        refused = tht("catalog", "generate", "--unlock", "--json")
        assert refused.code == 5 and "live process" in refused.stderr
    assert server.chat_requests() == [] and generated_refs(ws) == []
    nothing = tht("catalog", "generate", "--unlock")
    assert nothing.code == 5 and "nothing to unlock" in nothing.stderr


def test_a_sigkill_mid_run_keeps_what_was_saved_then_unlock_and_missing_only(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    proc = run_until_third_request(server, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    saved = generated_refs(ws)
    assert len(saved) == 9  # batches 1 and 2, appended as they arrived
    assert lines(ws)[-1]["type"] == "description_generated"
    assert ok(tht("catalog", "verify", "--json"))["ok"] is True
    # the lock is stale: a new run refuses until the run is unlocked
    stale = tht("catalog", "generate", "--json")
    assert stale.code == 5 and "--unlock" in stale.stderr
    unlocked = ok(tht("catalog", "generate", "--unlock", "--json"))
    assert (unlocked["status"], unlocked["generated"], unlocked["skipped"]) == ("interrupted", 9, 6)
    assert lines(ws)[-1]["payload"]["reason"] == "unlocked"
    server.reset()
    server.responder = describe_all
    rest = ok(tht("catalog", "generate", "--missing-only", "--json"))
    asked = [t for r in server.chat_requests() for t in targets_of(r)]
    assert sorted(asked) == sorted(set(rest_targets(ws)) - set(saved))
    assert (rest["generated"], rest["skipped"]) == (6, 9)
    assert sorted(generated_refs(ws)) == sorted(rest_targets(ws))


def run_until_third_request(server: OpenAITestServer, sig: int) -> subprocess.Popen[bytes]:
    """``tht catalog generate`` in a subprocess, sent ``sig`` while its third request waits."""
    release = threading.Event()
    calls: list[int] = []

    def responder(request: RecordedRequest) -> Step:
        calls.append(1)
        if len(calls) == 3:
            release.wait(30)
            return Status(500)
        return describe_all(request)

    server.responder = responder
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tht", "catalog", "generate", "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(server.chat_requests()) < 3 and proc.poll() is None:
            assert time.monotonic() < deadline, "the run never reached its third request"
            time.sleep(0.02)
        os.kill(proc.pid, sig)
        proc.wait(20)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    return proc


def test_ctrl_c_records_the_run_interrupted_with_what_it_saved(
    ws: Path, tht: Tht, server: OpenAITestServer
) -> None:
    proc = run_until_third_request(server, signal.SIGINT)
    assert proc.returncode != 0
    end = lines(ws)[-1]
    assert end["type"] == "description_generation_finished"
    assert (end["payload"]["status"], end["payload"]["generated"]) == ("interrupted", 9)
    assert end["payload"]["skipped"] == TARGETS - 9
    assert ok(tht("catalog", "generate", "--missing-only", "--scope", "ordini", "--json"))[
        "run"
    ]  # nothing to unlock: a new run starts at once


def rest_targets(ws: Path) -> list[str]:
    show = json.loads(run_tht("catalog", "show", "--json").stdout)
    refs = []
    for table in show["tables"]:
        refs.append(table["name"])
        refs += [f"{table['name']}.{c['name']}" for c in table["columns"]]
    return refs


# ----------------------------------------------------------------------------- the setup


def test_the_model_is_configured_at_setup_level_only(
    ws: Path, tht: Tht, tmp_path: Path, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.yaml"
    config.unlink()
    none = tht("catalog", "generate")
    assert none.code == 2 and "catalog.generation_profile" in none.stderr
    write_model_config(config, None)  # keyless, no explicit endpoint
    keyless = tht("catalog", "generate")
    assert keyless.code == 2 and "explicit endpoint" in keyless.stderr
    write_model_config(config, None, generation_profile="ollama-cloud")
    monkeypatch.setenv("OLLAMA_API_KEY", "k")
    cloud = tht("catalog", "generate")
    assert cloud.code == 2 and "cloud_opt_in" in cloud.stderr
    write_model_config(config, server, bogus=1)
    typo = tht("catalog", "generate")
    assert typo.code == 2 and "catalog.bogus" in typo.stderr
    # a keyed profile of the file, its endpoint given there
    profile = server.profile("ministral-3:3b", family="custom", apiKeyEnv="GEN_KEY")
    write_model_config(config, None, generation_profile="mine", profiles={"mine": profile})
    monkeypatch.setenv("GEN_KEY", "secret-gen-key")
    body = ok(tht("catalog", "generate", "--scope", "ordini", "--json"))
    assert body["profile"] == "mine"
    assert server.chat_requests()[-1].headers["Authorization"] == "Bearer secret-gen-key"
    assert "secret-gen-key" not in (ws / "catalog" / "ledger.jsonl").read_text(encoding="utf-8")
    assert not (ws / "workspace.yaml").read_text(encoding="utf-8").count("generation")
