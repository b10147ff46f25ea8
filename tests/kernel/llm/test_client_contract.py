"""The same transport contract, run against every built-in profile (spec 000 §26.4–26.5).

Each test talks to a real HTTP server on 127.0.0.1 that behaves like the profile's runtime (Ollama,
LM Studio, an OpenAI-compatible gateway). Only base URL, model, headers, response format and usage
may differ between profiles; the code under test is one and the same.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from kernel.llm import (
    AbortSignal,
    ChatMessage,
    OpenAICompatibleClient,
    ProviderError,
    ProviderProfile,
)
from tests.kernel.llm.conftest import SECRET
from tests.support.openai_server import (
    Answer,
    Drip,
    Hangup,
    OpenAITestServer,
    Oversized,
    Raw,
    Stall,
    Status,
)

Env = tuple[ProviderProfile, OpenAITestServer, OpenAICompatibleClient]
MESSAGES = [ChatMessage("system", "be brief"), ChatMessage("user", "route this")]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def chat(profile: ProviderProfile, client: OpenAICompatibleClient, **kw: object):  # type: ignore[no-untyped-def]
    options: dict[str, object] = {"max_tokens": 400, "timeout_ms": 2000, "json_schema": SCHEMA}
    options.update(kw)
    return client.chat(profile, MESSAGES, **options)  # type: ignore[arg-type]


def fails(kind: str, call) -> ProviderError:  # type: ignore[no-untyped-def]
    with pytest.raises(ProviderError) as caught:
        call()
    assert caught.value.kind == kind
    return caught.value


def test_a_valid_answer_returns_the_message_content_and_normalized_usage(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(
        Answer(
            content='{"ok": true}',
            usage={"prompt_tokens": 41, "completion_tokens": 9, "total_tokens": 50},
        )
    )
    result = chat(profile, client)
    assert result.raw_text == '{"ok": true}'
    assert result.profile_id == profile.id
    assert result.model == profile.model
    assert result.response_format_used == profile.response_format
    assert (result.usage.input_tokens, result.usage.output_tokens) == (41, 9)  # type: ignore[union-attr]
    assert result.usage.total_tokens == 50  # type: ignore[union-attr]
    assert result.latency_ms >= 0


def test_absent_usage_is_none_not_zero(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(Answer(content="{}", usage=None))
    assert chat(profile, client).usage is None


def test_the_request_is_the_canonical_openai_request(builtin: Env) -> None:
    profile, server, client = builtin
    chat(profile, client)
    (request,) = server.chat_requests()
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == profile.model
    assert body["temperature"] == 0
    assert body["stream"] is False
    assert body["max_tokens"] == 400
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert request.headers["Content-Type"] == "application/json"


def test_response_format_follows_the_profile_declaration(builtin: Env) -> None:
    profile, server, client = builtin
    chat(profile, client)
    body = server.chat_requests()[0].body
    if profile.response_format == "json-schema":
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["schema"] == SCHEMA
    elif profile.response_format == "json-object":
        assert body["response_format"] == {"type": "json_object"}
    else:
        assert "response_format" not in body


def test_prompt_json_sends_no_response_format(builtin: Env) -> None:
    profile, server, client = builtin
    chat(profile, client, response_format="prompt-json")
    assert "response_format" not in server.chat_requests()[0].body


def test_an_undeclared_response_format_is_refused_before_any_request(builtin: Env) -> None:
    profile, server, client = builtin
    undeclared = next(
        f for f in ("json-schema", "json-object") if f not in profile.supported_response_formats
    )
    with pytest.raises(ValueError):
        chat(profile, client, response_format=undeclared)
    assert server.requests == []


def test_the_key_is_sent_as_a_bearer_token_read_from_the_named_variable(builtin: Env) -> None:
    profile, server, client = builtin
    chat(profile, client)
    auth = server.chat_requests()[0].headers.get("Authorization")
    if profile.api_key_env:
        assert auth == f"Bearer {SECRET}"
    else:
        assert auth == f"Bearer {profile.api_key_placeholder}"


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "http-error"),
        (401, "auth-error"),
        (403, "auth-error"),
        (429, "rate-limited"),
        (500, "http-error"),
        (503, "http-error"),
    ],
)
def test_error_statuses_map_to_closed_kinds_with_the_status_class_only(
    builtin: Env, status: int, kind: str
) -> None:
    profile, server, client = builtin
    server.script(Status(status, message=f"echo of the prompt and {SECRET}"))
    err = fails(kind, lambda: chat(profile, client))
    assert err.status_class == f"{status // 100}xx"
    for text in (str(err), repr(err), json.dumps(err.__dict__, default=str)):
        assert SECRET not in text
        assert "echo" not in text
        assert str(status) not in text


def test_no_retry_after_a_failure(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(Status(500), Answer(content="{}"))
    fails("http-error", lambda: chat(profile, client))
    assert len(server.chat_requests()) == 1


def test_an_unknown_model_is_model_unavailable(builtin: Env) -> None:
    profile, server, client = builtin
    server.models = ["another-model"]
    err = fails("model-unavailable", lambda: chat(profile, client))
    assert err.status_class == "4xx"


def test_missing_message_content_is_an_invalid_response(builtin: Env) -> None:
    profile, server, client = builtin
    body = {"choices": [{"index": 0, "message": {"role": "assistant"}}], "model": "m"}
    server.script(Raw(200, json.dumps(body).encode()))
    fails("invalid-response", lambda: chat(profile, client))


def test_a_body_that_is_not_json_is_an_invalid_response(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(Raw(200, b"<html>gateway</html>", "text/html"))
    fails("invalid-response", lambda: chat(profile, client))


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "undeclared"])
def test_an_oversized_body_is_cut_at_the_bound(builtin: Env, declare: bool) -> None:
    profile, server, client = builtin
    server.script(Oversized(size=300_000, declare=declare))
    err = fails("response-too-large", lambda: chat(profile, client, max_response_bytes=8000))
    assert err.status_class == "2xx"


def test_a_stalled_server_times_out_at_the_deadline(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(Stall(seconds=5))
    started = time.monotonic()
    fails("timeout", lambda: chat(profile, client, timeout_ms=150))
    assert time.monotonic() - started < 2.5  # far below the 5 s stall: the deadline cut it


def test_a_slow_drip_body_is_cut_by_the_overall_deadline(builtin: Env) -> None:
    profile, server, client = builtin
    # every chunk arrives well within a per-read timeout; only an overall deadline stops it
    server.script(Drip(content="{}" + " " * 400, chunk=8, interval_s=0.05))
    started = time.monotonic()
    fails("timeout", lambda: chat(profile, client, timeout_ms=300))
    assert time.monotonic() - started < 2.5


def test_an_external_abort_cancels_the_call_at_once(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(Stall(seconds=5))
    signal = AbortSignal()
    threading.Timer(0.1, signal.abort).start()
    started = time.monotonic()
    fails("aborted", lambda: chat(profile, client, timeout_ms=4000, abort=signal))
    assert time.monotonic() - started < 2.5


def test_an_already_aborted_signal_opens_no_connection(builtin: Env) -> None:
    profile, server, client = builtin
    signal = AbortSignal()
    signal.abort()
    fails("aborted", lambda: chat(profile, client, abort=signal))
    assert server.requests == []


def test_a_hangup_is_a_network_error(builtin: Env) -> None:
    profile, server, client = builtin
    server.script(Hangup())
    fails("network-error", lambda: chat(profile, client))


def test_models_listing_uses_get_models(builtin: Env) -> None:
    profile, server, client = builtin
    listing = client.list_models(profile)
    assert listing.model_ids == (profile.model,)
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]


def test_health_reports_the_configured_model_present_or_missing(builtin: Env) -> None:
    profile, server, client = builtin
    healthy = client.health(profile)
    assert (healthy.status, healthy.reachable, healthy.model_present) == ("ok", True, True)
    server.models = ["something-else"]
    missing = client.health(profile)
    assert (missing.status, missing.model_present, missing.model_count) == (
        "model-missing",
        False,
        1,
    )


def test_embeddings_return_one_vector_per_input_in_order(builtin: Env) -> None:
    from tests.support.openai_server import embedding_for

    profile, server, client = builtin
    result = client.embeddings(profile, ["alpha", "beta", "gamma"], timeout_ms=2000)
    assert [list(v) for v in result.vectors] == [
        embedding_for(t) for t in ("alpha", "beta", "gamma")
    ]
    assert result.dimensions == 8
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.body["input"] == ["alpha", "beta", "gamma"]
    assert request.body["encoding_format"] == "float"
