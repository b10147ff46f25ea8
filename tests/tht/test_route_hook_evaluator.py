"""The evaluator through the real hook process (spec 000 §19.1, §26.4, §26.6).

Every fault of the matrix — timeout, slow drip, oversized body, 400/401/403/404/429/500, invalid
JSON, schema violations, unknown id, unknown reason code, truncated output, external abort,
breaker open — must leave the hook's output byte-identical to mode ``off``, exit 0, and say why in
the ``RoutingEvaluator`` event.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import (
    Answer,
    Drip,
    OpenAITestServer,
    Oversized,
    Raw,
    Stall,
    Status,
    Step,
)
from tests.tht.routing_fixtures import (
    AMBIGUOUS_NO_HINT,
    AMBIGUOUS_WITH_HINT,
    CLEAR,
    HookRunner,
    build_catalog,
    evaluation,
)

MODEL = "ministral-3:3b"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_catalog(tmp_path_factory.mktemp("catalog") / "tesisquare.pack")


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama", models=[MODEL, "ministral-3:3b-cloud"]) as s:
        yield s


@pytest.fixture
def hook(tmp_path: Path, catalog: Path, server: OpenAITestServer) -> HookRunner:
    server.reset()
    server.models = [MODEL, "ministral-3:3b-cloud"]
    runner = HookRunner(tmp_path, catalog)
    runner.configure(settings(server))
    return runner


def settings(server: OpenAITestServer, mode: str = "boost-only", **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "version": 2,
        "enabled": True,
        "mode": mode,
        "activeProfile": "ollama-local",
        "profiles": {"ollama-local": {"baseUrl": server.base_url}},
        "limits": {"timeoutMs": 400},
        "cache": {"enabled": False},
    }
    body.update(over)
    return body


_BASELINES: dict[tuple[str, str], str] = {}


def off_output(hook: HookRunner, prompt: str) -> str:
    """The hook's output in mode ``off`` (computed once per catalog and prompt)."""
    key = (str(hook.catalog), prompt)
    if key not in _BASELINES:
        run = hook.run(prompt, {"MCP_ROUTING_EVALUATOR_MODE": "off"})
        assert run.returncode == 0
        assert run.event is not None and run.event["evaluator_status"] == "disabled"
        _BASELINES[key] = run.stdout
    return _BASELINES[key]


FAULTS: list[tuple[str, Step | None, str]] = [
    ("timeout", Stall(seconds=5), "timeout"),
    ("slow-drip", Drip(content=evaluation(), chunk=4, interval_s=0.05), "timeout"),
    ("oversized", Oversized(size=400_000), "invalid-output"),
    ("http-400", Status(400), "http-error"),
    ("http-401", Status(401), "auth-error"),
    ("http-403", Status(403), "auth-error"),
    ("http-429", Status(429), "rate-limited"),
    ("http-500", Status(500), "http-error"),
    ("http-404-model", None, "model-unavailable"),
    ("invalid-http-json", Raw(200, b'{"choices": [ broken'), "invalid-output"),
    ("not-json", Answer(content="The best skill is mcp-office-expert."), "invalid-output"),
    (
        "schema-violation",
        Answer(
            content=evaluation().replace('"ambiguityResolved"', '"extra": 1, "ambiguityResolved"')
        ),
        "invalid-output",
    ),
    ("unknown-id", Answer(content=evaluation("mcp-invented-skill")), "invalid-output"),
    ("unknown-reason", Answer(content=evaluation(reason="trust-me")), "invalid-output"),
    ("truncated", Answer(content=evaluation()[:40], finish_reason="length"), "invalid-output"),
]


# the full matrix on a prompt whose deterministic answer is a hint; three faults on one whose
# deterministic answer is nothing (the evaluator must not be able to add a hint by failing)
MATRIX = [(AMBIGUOUS_WITH_HINT, *fault) for fault in FAULTS] + [
    (AMBIGUOUS_NO_HINT, *fault)
    for fault in FAULTS
    if fault[0] in ("timeout", "unknown-id", "http-429")
]


@pytest.mark.parametrize(
    ("prompt", "name", "step", "status"),
    MATRIX,
    ids=[f"{f[1]}-{'hint' if f[0] == AMBIGUOUS_WITH_HINT else 'no-hint'}" for f in MATRIX],
)
def test_every_fault_leaves_the_output_identical_to_off(
    hook: HookRunner,
    server: OpenAITestServer,
    prompt: str,
    name: str,
    step: Step | None,
    status: str,
) -> None:
    baseline = off_output(hook, prompt)
    if status != "timeout":
        # the 400 ms deadline only where the server stalls or drips: on a loaded CI machine an
        # error answer may come back after 400 ms and read as a timeout
        hook.configure(settings(server, limits={"timeoutMs": 2500}))
    if step is None:
        server.models = ["something-else"]
    else:
        server.script(step)
    started = time.monotonic()
    run = hook.run(prompt)
    assert run.returncode == 0
    assert run.stdout == baseline
    assert run.event is not None
    assert (run.event["evaluator_status"], run.event["mode"]) == (status, "boost-only")
    assert run.event["applied"] is False
    assert run.event["fallback_reason"] in ("no-evaluation", "unknown-id")
    assert len(server.chat_requests()) == 1  # one attempt, no retry
    assert time.monotonic() - started < 4  # the 5 s stall was cut by the 400 ms deadline


def test_an_external_abort_answers_deterministically_at_once(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    baseline = off_output(hook, AMBIGUOUS_WITH_HINT)
    hook.configure(settings(server, limits={"timeoutMs": 2500}))
    server.script(Stall(seconds=8))
    process = hook.start(AMBIGUOUS_WITH_HINT)
    deadline = time.monotonic() + 10
    while not server.chat_requests() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.chat_requests(), "the hook never called the provider"
    process.send_signal(signal.SIGTERM)
    run = hook.finish(process)
    assert run.returncode == 0
    assert run.stdout == baseline
    assert run.event is not None and run.event["evaluator_status"] == "timeout"


def test_an_open_breaker_skips_the_call(hook: HookRunner, server: OpenAITestServer) -> None:
    baseline = off_output(hook, AMBIGUOUS_WITH_HINT)
    for _ in range(3):
        server.script(Status(500))
        hook.run(AMBIGUOUS_WITH_HINT)
    state = json.loads((hook.state_dir / "routing-evaluator-circuit.json").read_text())
    assert (state["state"], state["providerKey"]) == ("open", f"ollama-local:{MODEL}")
    requests = len(server.chat_requests())
    run = hook.run(AMBIGUOUS_WITH_HINT)
    assert (run.stdout, run.returncode) == (baseline, 0)
    assert run.event is not None and run.event["evaluator_status"] == "circuit-open"
    assert len(server.chat_requests()) == requests


def test_429_opens_the_breaker_at_once(hook: HookRunner, server: OpenAITestServer) -> None:
    server.script(Status(429))
    hook.run(AMBIGUOUS_WITH_HINT)
    run = hook.run(AMBIGUOUS_WITH_HINT)
    assert run.event is not None and run.event["evaluator_status"] == "circuit-open"
    state = json.loads((hook.state_dir / "routing-evaluator-circuit.json").read_text())
    assert state["reason"] == "rate-limited"


# -- modes ------------------------------------------------------------------------------------


def test_boost_only_applies_a_validated_evaluation(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    server.script(Answer(content=evaluation("mcp-office-expert")))
    run = hook.run(AMBIGUOUS_NO_HINT)
    assert "mcp-office-expert" in run.stdout
    event = run.event
    assert event is not None
    assert (event["evaluator_status"], event["applied"], event["final_top"]) == (
        "completed",
        True,
        "mcp-office-expert",
    )
    assert (event["provider_profile"], event["model"], event["response_format"]) == (
        "ollama-local",
        MODEL,
        "json-object",
    )
    assert event["input_tokens"] and event["output_tokens"] and event["latency_ms"] is not None


@pytest.mark.parametrize("mode", ["shadow", "observe"])
def test_shadow_and_observe_evaluate_but_change_nothing(
    hook: HookRunner, server: OpenAITestServer, mode: str
) -> None:
    baseline = off_output(hook, AMBIGUOUS_NO_HINT)
    hook.configure(settings(server, mode=mode))
    docs = evaluation("mcp-docs-navigator", reason="documentation-evidence-required")
    server.script(Answer(content=docs))
    run = hook.run(AMBIGUOUS_NO_HINT)
    assert run.stdout == baseline
    event = run.event
    assert event is not None
    assert (event["mode"], event["evaluator_status"], event["applied"]) == (
        mode,
        "completed",
        False,
    )
    assert event["evaluator_top"] == "mcp-docs-navigator"
    assert event["changed_top"] is True  # what it *would* have changed


def test_shadow_sampling_rate_zero_never_calls(hook: HookRunner, server: OpenAITestServer) -> None:
    hook.configure(settings(server, mode="shadow", samplingRate=0))
    run = hook.run(AMBIGUOUS_NO_HINT)
    assert run.event is not None and run.event["evaluator_status"] == "not-sampled"
    assert server.chat_requests() == []


def test_low_confidence_applies_nothing(hook: HookRunner, server: OpenAITestServer) -> None:
    baseline = off_output(hook, AMBIGUOUS_NO_HINT)
    server.script(Answer(content=evaluation(confidence=0.3)))
    run = hook.run(AMBIGUOUS_NO_HINT)
    assert run.stdout == baseline
    assert run.event is not None
    assert (run.event["evaluator_status"], run.event["fallback_reason"]) == (
        "low-confidence",
        "low-confidence",
    )


def test_a_clear_prompt_never_reaches_the_provider(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    run = hook.run(CLEAR)
    assert run.event is not None and run.event["evaluator_status"] in ("not-ambiguous", "disabled")
    assert server.chat_requests() == []


def test_one_environment_flag_rolls_back_to_off(hook: HookRunner, server: OpenAITestServer) -> None:
    baseline = off_output(hook, AMBIGUOUS_NO_HINT)
    server.script(Answer(content=evaluation()))
    run = hook.run(AMBIGUOUS_NO_HINT, {"MCP_ROUTING_EVALUATOR_ENABLED": "false"})
    assert run.stdout == baseline
    assert run.event is not None and run.event["evaluator_status"] == "disabled"
    assert server.chat_requests() == []


def test_an_invalid_configuration_is_off_with_a_diagnostic(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    baseline = off_output(hook, AMBIGUOUS_WITH_HINT)
    hook.configure(
        settings(server, profiles={"ollama-local": {"baseUrl": "http://127.0.0.1:1/api"}})
    )
    run = hook.run(AMBIGUOUS_WITH_HINT)
    assert (run.stdout, run.returncode) == (baseline, 0)
    assert run.event is not None and run.event["evaluator_status"] == "config-invalid"
    assert server.chat_requests() == []


def test_force_evaluate_calls_even_on_a_clear_prompt_and_changes_nothing(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    baseline = off_output(hook, CLEAR)
    hook.configure(settings(server, mode="force-evaluate"))
    server.script(Answer(content=evaluation(decision="none", confidence=0.9)))
    run = hook.run(CLEAR)
    assert run.stdout == baseline
    assert len(server.chat_requests()) == 1


# -- privacy and classification -----------------------------------------------------------------

SENSITIVE = AMBIGUOUS_WITH_HINT + " password=hunter2-SEEDED"


def test_a_sensitive_prompt_skips_a_cloud_profile(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    cloud = settings(server, cloudOptIn=True)
    cloud["profiles"]["ollama-local"]["model"] = (
        "ministral-3:3b-cloud"  # cloud via the local daemon
    )
    hook.configure(cloud)
    run = hook.run(SENSITIVE)
    assert run.event is not None
    assert (run.event["evaluator_status"], run.event["sensitive_skip"]) == (
        "skipped-sensitive",
        True,
    )
    assert run.event["provider_location"] == "cloud"
    assert server.chat_requests() == []


def test_a_sensitive_prompt_may_use_a_local_profile_but_redacted(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    server.script(
        Answer(content=evaluation("mcp-docs-navigator", reason="documentation-evidence-required"))
    )
    run = hook.run(SENSITIVE)
    assert run.event is not None and run.event["provider_location"] == "local"
    (request,) = server.chat_requests()
    sent = json.dumps(request.body)
    assert "hunter2-SEEDED" not in sent
    assert "REDACTED" in sent


def test_a_cloud_model_behind_the_daemon_needs_the_opt_in(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    cloud = settings(server)
    cloud["profiles"]["ollama-local"]["model"] = "ministral-3:3b-cloud"
    hook.configure(cloud)
    run = hook.run(AMBIGUOUS_WITH_HINT)
    assert run.event is not None and run.event["evaluator_status"] == "config-invalid"
    assert server.chat_requests() == []


def test_no_key_prompt_header_or_raw_response_in_any_file_written(
    hook: HookRunner, server: OpenAITestServer
) -> None:
    key = "sk-SEEDED-0123456789abcdefABCDEF"
    body = settings(server, cache={"enabled": True})
    body["profiles"]["ollama-local"]["apiKeyEnv"] = "SEEDED_EVALUATOR_KEY"
    hook.configure(body)
    marker = "RAW-RESPONSE-MARKER-42"
    prompt = AMBIGUOUS_NO_HINT + " (token PROMPT-MARKER-77)"
    server.script(
        Answer(content=evaluation()),  # valid: cached
        Answer(content=evaluation(marker.lower())),  # invalid id: rejected
        Status(500, message=f"error echoing {prompt} and {key}"),
    )
    for variant in (prompt, prompt + " again", prompt + " twice", prompt):
        assert hook.run(variant, {"SEEDED_EVALUATOR_KEY": key}).returncode == 0
    assert server.chat_requests()[0].headers["Authorization"] == f"Bearer {key}"
    written = [p for p in hook.home.rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert {
        "route-hook.jsonl",
        "routing-evaluator-circuit.json",
        "routing-evaluator-cache.json",
    } <= names
    for path in written:
        text = path.read_text(encoding="utf-8", errors="replace")
        for secret in (key, "PROMPT-MARKER-77", marker, marker.lower(), "Bearer", "error echoing"):
            assert secret not in text, (path.name, secret)
    events = [json.loads(line) for line in hook.log.read_text().splitlines()]
    assert events[-1]["evaluator_status"] == "cache-hit"
    assert events[-1]["cache_hit"] is True
