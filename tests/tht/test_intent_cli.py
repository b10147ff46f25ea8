"""``tht intent parse QUESTION``: the IntentParser through the CLI (ARCHITECTURE §6)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.openai_server import Answer, OpenAITestServer
from tests.tht.conftest import Result

Tht = Callable[..., Result]

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "intent" / "cli_parse.json"
DOMAIN = """
domain:
  home_entity: {display: "Ospedale San Carlo", aliases: ["San Carlo"]}
  external_entities:
    - {display: "Clinica Rivale", aliases: ["Rivale"], kind: competitor}
  restricted: {keywords: ["stipendi"]}
  dimensions:
    - {name: hospital, kind: categorical, synonyms: {it: [ospedale, presidio], en: [hospital]},
       clarify: ask_first}
    - {name: period, kind: temporal, default: "last 12 months", required: true, clarify: assume}
    - {name: admissions, kind: measure, synonyms: {it: [ricovero], en: [admission]}}
"""
CLI_CASES = [
    "ricoveri per ospedale nel 3° trimestre 2024",
    "admissions by hospital",
    "ricoveri al San Carlo fino al 2023",
    "ricoveri della Clinica Rivale nel 2023",
]


@pytest.fixture
def ws(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = workspace / "workspace.yaml"
    path.write_text(path.read_text(encoding="utf-8") + DOMAIN, encoding="utf-8")
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-05-20T10:00:00Z")
    monkeypatch.setenv("THT_CONFIG", str(tmp_path / "config.yaml"))
    for name in ("PROFILE", "BASE_URL", "MODEL", "API_KEY_ENV", "RESPONSE_FORMAT", "TIMEOUT_MS"):
        monkeypatch.delenv(f"THT_INTENT_{name}", raising=False)
    return workspace


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama") as s:
        yield s


def test_the_json_answer_follows_the_contract_golden(
    ws: Path, tht: Tht, update_golden: bool
) -> None:
    outputs = {}
    for question in CLI_CASES:
        done = tht("intent", "parse", question, "--json")
        assert done.code == 0, done.stderr
        assert done.stderr == ""
        outputs[question] = done.json()
        assert list(outputs[question])[:4] == ["parser", "dimensions", "period", "clarify"]
    if update_golden:
        GOLDEN.write_text(json.dumps(outputs, ensure_ascii=False, indent=1) + "\n", "utf-8")
    assert outputs == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_a_refused_question_is_parsed_masked_and_never_echoed(ws: Path, tht: Tht) -> None:
    done = tht("intent", "parse", "ricoveri della R.i.v.a.l.e per ospedale nel 2023", "--json")
    body = done.json()
    assert body["clarify"] == "out_of_scope_entity"
    assert body["question"] == "ricoveri della [competitor] per ospedale nel 2023"
    assert "ivale" not in done.stdout.lower() and "ivale" not in done.stderr.lower()
    assert [d["name"] for d in body["dimensions"]] == ["hospital", "period"]


def test_the_llm_parser_is_used_when_a_profile_is_configured(
    ws: Path, tht: Tht, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THT_INTENT_PROFILE", "ollama-local")
    monkeypatch.setenv("THT_INTENT_BASE_URL", server.base_url)
    server.script(
        Answer(
            content=json.dumps(
                {
                    "dimensions": [{"name": "hospital", "matched": "struttura", "value": None}],
                    "measures": [],
                    "period": None,
                }
            )
        )
    )
    done = tht("intent", "parse", "ricoveri per struttura", "--parser", "llm", "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert (body["parser"], body["fallback_reason"]) == ("llm", None)
    assert [d["matched"] for d in body["dimensions"]] == ["struttura"]
    assert body["clarify"] == "answer_with_assumptions"
    assert server.chat_requests()[0].user_message == "ricoveri per struttura"


def test_the_user_config_file_names_the_profile(
    ws: Path, tht: Tht, server: OpenAITestServer, tmp_path: Path
) -> None:
    (tmp_path / "config.yaml").write_text(
        "disambiguation:\n  intent:\n    activeProfile: mine\n    timeoutMs: 2000\n"
        "    profiles:\n      mine: {protocol: openai-chat-completions, family: custom,"
        f" location: local, baseUrl: '{server.base_url}', model: ministral-3:3b,"
        " responseFormat: json-object, remoteDataPolicy: local-only}\n",
        encoding="utf-8",
    )
    server.script(Answer(content='{"dimensions": [], "measures": [], "period": null}'))
    done = tht("intent", "parse", "admissions", "--parser", "llm", "--json")
    assert done.json()["parser"] == "llm", done.stderr
    assert len(server.chat_requests()) == 1


def test_a_refused_question_sends_nothing_to_the_model(
    ws: Path, tht: Tht, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THT_INTENT_PROFILE", "ollama-local")
    monkeypatch.setenv("THT_INTENT_BASE_URL", server.base_url)
    done = tht("intent", "parse", "stipendi della Clinica Rivale", "--parser", "llm", "--json")
    assert done.json()["fallback_reason"] == "gate_refused"
    assert server.requests == []


def test_without_a_profile_the_llm_parser_falls_back_quietly(ws: Path, tht: Tht) -> None:
    done = tht("intent", "parse", "admissions in 2023", "--parser", "llm", "--json")
    assert done.code == 0 and done.stderr == ""
    assert (done.json()["parser"], done.json()["fallback_reason"]) == ("rules", "no_profile")


def test_an_unusable_profile_falls_back_with_a_warning_on_stderr(ws: Path, tht: Tht) -> None:
    done = tht("intent", "parse", "admissions", "--parser", "llm", "--profile", "nope", "--json")
    assert done.code == 0
    assert done.json()["fallback_reason"] == "profile_invalid"  # stdout stays pristine JSON
    assert "unknown profile 'nope'" in done.stderr


def test_a_cloud_profile_needs_the_opt_in(
    ws: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", "sk-test-not-a-real-key")
    done = tht("intent", "parse", "admissions", "--parser", "llm", "--profile", "ollama-cloud")
    assert done.code == 0
    assert "cloudOptIn" in done.stderr and "sk-test" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--parser", "magic"], "expected rules or llm"),
        (["--profile", "ollama-local"], "add --parser llm"),
    ],
)
def test_bad_options_are_usage_errors(ws: Path, tht: Tht, args: list[str], message: str) -> None:
    done = tht("intent", "parse", "admissions", *args, "--json")
    assert done.code == 2
    assert done.json()["error"]["code"] == "usage" and message in done.stderr


def test_outside_a_workspace_it_is_not_found(
    tmp_path: Path, tht: Tht, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THT_WORKSPACE", str(tmp_path / "nowhere"))
    assert tht("intent", "parse", "admissions").code == 3


def test_the_human_answer_names_period_dimensions_and_mode(ws: Path, tht: Tht) -> None:
    done = tht("intent", "parse", "ricoveri per ospedale di marzo")
    assert done.code == 0
    assert done.stdout.splitlines() == [
        "parser: rules",
        'period: 2026-03-01 to 2026-03-31 (month, relative, "di marzo")',
        'dimensions: hospital ("ospedale"), period ("di marzo" = 2026-03-01/2026-04-01)',
        'measures: admissions ("ricoveri")',
        'assumption: "di marzo": no year given, read as 2026-03-01 to 2026-03-31',
        "clarify: answer_with_assumptions",
    ]


def test_parsing_writes_nothing_in_the_workspace(ws: Path, tht: Tht) -> None:
    def files() -> dict[str, bytes]:
        return {
            str(p.relative_to(ws)): p.read_bytes()
            for p in ws.rglob("*")
            if p.is_file() and p.name != "fake-clock"  # THT_CLOCK's own step file
        }

    before = files()
    assert tht("intent", "parse", "ricoveri nel 2023", "--json").code == 0
    assert files() == before
