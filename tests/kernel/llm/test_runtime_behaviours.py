"""Runtime-specific behaviours the one transport must handle without provider branches."""

from __future__ import annotations

import json
import socket

import pytest

from kernel.llm import ChatMessage, OpenAICompatibleClient, ProviderError
from tests.kernel.llm.conftest import SECRET, profile_for
from tests.support.openai_server import Answer, OpenAITestServer, Raw

MESSAGES = [ChatMessage("user", "hello")]


def test_lm_studio_rejects_json_object_with_a_bare_string_error_and_accepts_json_schema() -> None:
    with OpenAITestServer(flavor="lmstudio", models=["m"]) as server:
        # a custom profile that (wrongly) declares json-object against an LM Studio server
        profile, env = profile_for(
            "custom-openai-compatible",
            server.base_url,
            "m",
            supportedResponseFormats=["json-object", "json-schema"],
        )
        client = OpenAICompatibleClient(env=env)
        with pytest.raises(ProviderError) as caught:
            client.chat(profile, MESSAGES, max_tokens=10, timeout_ms=2000)
        assert (caught.value.kind, caught.value.status_class) == ("http-error", "4xx")
        assert server.requests[-1].body["response_format"] == {"type": "json_object"}

        server.script(Answer(content='{"a": 1}'))
        ok = client.chat(
            profile,
            MESSAGES,
            max_tokens=10,
            timeout_ms=2000,
            response_format="json-schema",
            json_schema={"type": "object"},
        )
        assert ok.raw_text == '{"a": 1}'
        assert ok.response_format_used == "json-schema"


def test_the_lm_studio_server_answers_json_object_with_a_bare_string_body() -> None:
    with OpenAITestServer(flavor="lmstudio", models=["m"]) as server:
        import httpx

        answer = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": [], "response_format": {"type": "json_object"}},
        )
        assert answer.status_code == 400
        assert isinstance(answer.json()["error"], str)


def test_the_ollama_server_error_body_and_model_not_found_text() -> None:
    with OpenAITestServer(flavor="ollama", models=["m"]) as server:
        import httpx

        answer = httpx.post(
            f"{server.base_url}/chat/completions", json={"model": "x:1b", "messages": []}
        )
        assert answer.status_code == 404
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["message"].startswith('model "x:1b" not found')


def test_a_404_from_a_wrong_path_is_an_http_error_not_a_missing_model() -> None:
    with OpenAITestServer(flavor="ollama", models=["m"]) as server:
        profile, env = profile_for("ollama-local", server.base_url.replace("/v1", "/x/v1"), "m")
        with pytest.raises(ProviderError) as caught:
            OpenAICompatibleClient(env=env).chat(profile, MESSAGES, max_tokens=5, timeout_ms=2000)
        assert caught.value.kind == "http-error"


def test_a_required_key_that_is_unset_fails_before_any_connection() -> None:
    with OpenAITestServer(flavor="ollama", models=["ministral-3:3b-cloud"]) as server:
        profile, _ = profile_for("ollama-cloud", server.base_url, "ministral-3:3b-cloud")
        client = OpenAICompatibleClient(env={})
        with pytest.raises(ProviderError) as caught:
            client.chat(profile, MESSAGES, max_tokens=5, timeout_ms=2000)
        assert caught.value.kind == "missing-credential"
        assert server.requests == []


def test_a_refused_connection_is_a_network_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    profile, env = profile_for("ollama-local", f"http://127.0.0.1:{port}/v1", "m")
    with pytest.raises(ProviderError) as caught:
        OpenAICompatibleClient(env=env).chat(profile, MESSAGES, max_tokens=5, timeout_ms=2000)
    assert caught.value.kind == "network-error"
    health = OpenAICompatibleClient(env=env).health(profile)
    assert (health.status, health.reachable) == ("network-error", False)


def test_health_reports_an_auth_failure_without_the_key() -> None:
    with OpenAITestServer(flavor="ollama", models=["ministral-3:3b-cloud"], api_key="right") as s:
        profile, env = profile_for("ollama-cloud", s.base_url, "ministral-3:3b-cloud")
        health = OpenAICompatibleClient(env=env).health(profile)
        assert (health.status, health.authenticated, health.status_class) == (
            "auth-error",
            False,
            "4xx",
        )
        assert SECRET not in repr(health)


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"embedding": [0.1, 0.2], "index": 0}]},  # one vector for two inputs
        {"data": [{"embedding": [0.1], "index": 0}, {"embedding": [0.1, 0.2], "index": 1}]},
        {"data": [{"embedding": ["a", "b"], "index": 0}, {"embedding": [1, 2], "index": 1}]},
        {"data": [{"embedding": [0.1], "index": 0}, {"embedding": [0.2], "index": 0}]},
        {"object": "list"},
    ],
    ids=["count", "dimensions", "non-numeric", "duplicate-index", "no-data"],
)
def test_malformed_embeddings_are_an_invalid_response(body: dict[str, object]) -> None:
    with OpenAITestServer(flavor="openai", models=["e"]) as server:
        profile, env = profile_for("custom-openai-compatible", server.base_url, "e")
        server.script_embeddings(Raw(200, json.dumps(body).encode()))
        with pytest.raises(ProviderError) as caught:
            OpenAICompatibleClient(env=env).embeddings(profile, ["a", "b"], timeout_ms=2000)
        assert caught.value.kind == "invalid-response"


def test_embeddings_answered_out_of_order_are_put_back_in_input_order() -> None:
    with OpenAITestServer(flavor="openai", models=["e"]) as server:
        profile, env = profile_for("custom-openai-compatible", server.base_url, "e")
        body = {"data": [{"embedding": [2.0], "index": 1}, {"embedding": [1.0], "index": 0}]}
        server.script_embeddings(Raw(200, json.dumps(body).encode()))
        result = OpenAICompatibleClient(env=env).embeddings(profile, ["a", "b"], timeout_ms=2000)
        assert result.vectors == ((1.0,), (2.0,))


def test_an_unknown_embedding_model_is_model_unavailable() -> None:
    with OpenAITestServer(flavor="ollama", models=["nomic-embed-text"]) as server:
        profile, env = profile_for("ollama-local", server.base_url, "ministral-3:3b")
        with pytest.raises(ProviderError) as caught:
            OpenAICompatibleClient(env=env).embeddings(profile, ["a"], timeout_ms=2000)
        assert caught.value.kind == "model-unavailable"
        ok = OpenAICompatibleClient(env=env).embeddings(
            profile, ["a"], model="nomic-embed-text", timeout_ms=2000
        )
        assert ok.model == "nomic-embed-text"


def test_content_parts_are_joined_and_a_2xx_html_page_is_invalid() -> None:
    with OpenAITestServer(flavor="openai", models=["m"]) as server:
        profile, env = profile_for("custom-openai-compatible", server.base_url, "m")
        parts = {
            "choices": [
                {
                    "message": {
                        "content": [
                            {"type": "text", "text": '{"a"'},
                            {"type": "text", "text": ":1}"},
                        ]
                    }
                }
            ]
        }
        server.script(Raw(200, json.dumps(parts).encode()))
        client = OpenAICompatibleClient(env=env)
        assert client.chat(profile, MESSAGES, max_tokens=5, timeout_ms=2000).raw_text == '{"a":1}'
