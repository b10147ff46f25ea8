"""Profile resolution: precedence (CLI > env > file > built-in) and the validation of spec §17.5."""

from __future__ import annotations

from typing import Any

import pytest

from kernel.errors import UsageError
from kernel.llm import BUILTIN_PROFILES, ProfileEnvNames, ProfileOverrides, resolve_profile
from kernel.llm.settings import validate_base_url

NAMES = ProfileEnvNames.with_prefix("MCP_ROUTING_EVALUATOR_")


def resolve(pid: str, file: dict[str, Any] | None = None, **kw: Any):  # type: ignore[no-untyped-def]
    kw.setdefault("env", {})
    return resolve_profile(pid, file_profiles=file, source="config.yaml", **kw)


def test_builtins_resolve_with_the_spec_defaults() -> None:
    local = resolve("ollama-local")
    assert (local.base_url, local.model, local.response_format) == (
        "http://127.0.0.1:11434/v1",
        "ministral-3:3b",
        "json-object",
    )
    assert (local.location, local.remote_data_policy) == ("local", "local-only")
    assert local.api_key_placeholder == "ollama"
    studio = resolve("lmstudio-local")
    assert (studio.base_url, studio.response_format) == ("http://127.0.0.1:1234/v1", "json-schema")
    assert "json-object" not in studio.supported_response_formats


def test_every_builtin_of_the_spec_exists() -> None:
    assert set(BUILTIN_PROFILES) == {
        "ollama-local",
        "ollama-cloud",
        "lmstudio-local",
        "lmstudio-lan",
        "custom-openai-compatible",
    }


def test_precedence_is_cli_over_env_over_file_over_builtin() -> None:
    file = {"ollama-local": {"model": "from-file"}}
    assert resolve("ollama-local", file).model == "from-file"
    env_layer = NAMES.read({"MCP_ROUTING_EVALUATOR_MODEL": "from-env"})
    assert resolve("ollama-local", file, layers=[env_layer]).model == "from-env"
    cli_layer = ProfileOverrides(model="from-cli")
    assert resolve("ollama-local", file, layers=[env_layer, cli_layer]).model == "from-cli"
    empty_cli = ProfileOverrides()
    assert resolve("ollama-local", file, layers=[env_layer, empty_cli]).model == "from-env"


def test_env_names_follow_the_spec() -> None:
    env = {
        "MCP_ROUTING_EVALUATOR_PROFILE": "lmstudio-local",
        "MCP_ROUTING_EVALUATOR_BASE_URL": "http://127.0.0.1:9/v1",
        "MCP_ROUTING_EVALUATOR_MODEL": "m",
        "MCP_ROUTING_EVALUATOR_API_KEY_ENV": "MY_KEY",
        "MCP_ROUTING_EVALUATOR_RESPONSE_FORMAT": "prompt-json",
    }
    layer = NAMES.read(env)
    assert layer == ProfileOverrides(
        "lmstudio-local", "http://127.0.0.1:9/v1", "m", "MY_KEY", "prompt-json"
    )


def test_changing_the_model_drops_metadata_that_described_the_old_one() -> None:
    profile = resolve("ollama-local", layers=[ProfileOverrides(model="qwen3:4b")])
    assert profile.model_metadata.family is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"baseUrl": "ftp://127.0.0.1/v1"}, "http"),
        ({"baseUrl": "http://127.0.0.1:11434/api"}, "/v1"),
        ({"baseUrl": "http://user:pw@127.0.0.1:11434/v1"}, "credentials"),
        ({"baseUrl": "http://127.0.0.1:11434/v1?key=abc"}, "query"),
        ({"model": ""}, "model"),
        ({"model": "two words"}, "model"),
        ({"protocol": "anthropic-messages"}, "protocol"),
        ({"family": "vllm"}, "family"),
        ({"location": "moon"}, "location"),
        ({"remoteDataPolicy": "external-cloud"}, "remoteDataPolicy"),
        ({"responseFormat": "json-schema"}, "supportedResponseFormats"),
        ({"responseFormat": "xml"}, "responseFormat"),
        ({"apiKey": "sk-live-123"}, "secret"),
        ({"token": "abc"}, "secret"),
        ({"apiKeyEnv": "sk-live-1234567890"}, "apiKeyEnv"),
        ({"apiKeyPlaceholder": "sk-0123456789abcdefghijkl"}, "apiKeyPlaceholder"),
        ({"baseUrl": "http://10.1.2.3:11434/v1"}, "loopback"),
        ({"baseUrl": "http://127.0.0.1.evil.example:11434/v1"}, "loopback"),
        ({"baseUrl": "http://localhost.evil.example:11434/v1"}, "loopback"),
        ({"unexpected": 1}, "unexpected"),
    ],
)
def test_invalid_profiles_are_refused_naming_file_and_field(
    entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        resolve("ollama-local", {"ollama-local": entry})
    text = caught.value.message
    assert text.startswith("config.yaml: ")
    assert "profiles" in text
    assert message in text
    assert "sk-live-123" not in text


def test_an_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as caught:
        resolve("nope")
    assert "ollama-local" in caught.value.message


def test_lan_and_custom_need_an_address_and_a_model() -> None:
    with pytest.raises(UsageError) as caught:
        resolve("lmstudio-lan", env={"LM_STUDIO_API_TOKEN": "t"})
    assert "baseUrl" in caught.value.message
    with pytest.raises(UsageError):
        resolve("custom-openai-compatible")


def test_a_required_key_must_be_present_in_the_named_variable() -> None:
    with pytest.raises(UsageError) as caught:
        resolve("ollama-cloud", cloud_opt_in=True)
    assert "OLLAMA_API_KEY" in caught.value.message
    ok = resolve("ollama-cloud", cloud_opt_in=True, env={"OLLAMA_API_KEY": "secret-value"})
    assert ok.api_key_env == "OLLAMA_API_KEY"
    assert "secret-value" not in repr(ok)
    assert "secret-value" not in str(ok.describe())


def test_cloud_is_refused_without_explicit_opt_in() -> None:
    with pytest.raises(UsageError) as caught:
        resolve("ollama-cloud", env={"OLLAMA_API_KEY": "k"}, opt_in_hint="set cloudOptIn: true")
    assert "off this machine" in caught.value.message
    assert "cloudOptIn" in caught.value.message


def test_a_cloud_model_behind_the_local_daemon_is_classified_cloud() -> None:
    layer = ProfileOverrides(model="gpt-oss:120b-cloud")
    with pytest.raises(UsageError) as caught:
        resolve("ollama-local", layers=[layer])
    assert "Ollama's cloud" in caught.value.message
    profile = resolve("ollama-local", layers=[layer], cloud_opt_in=True)
    assert (profile.location, profile.remote_data_policy) == ("cloud", "external-cloud")
    assert profile.declared_location == "local"
    assert profile.reclassified_cloud
    assert not profile.api_key_required  # the daemon holds the sign-in, not this process


def test_a_local_profile_is_not_reclassified() -> None:
    for model in ("ministral-3:3b", "cloudy:7b", "my-cloud-model:1b"):
        profile = resolve("ollama-local", layers=[ProfileOverrides(model=model)])
        assert profile.location == "local"
    studio = resolve("lmstudio-local", layers=[ProfileOverrides(model="x-cloud")])
    assert studio.location == "local"  # only Ollama's daemon offloads *-cloud models


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("https://ollama.com/v1", True),
        ("https://gw.example/openai/v1/", True),
        ("http://[::1]:1234/v1", True),
        ("http://127.0.0.1:11434", False),
        ("http://127.0.0.1:99999/v1", False),
        ("127.0.0.1:11434/v1", False),
        ("https://ollama.com/v1#frag", False),
    ],
)
def test_base_url_rules(url: str, ok: bool) -> None:
    assert (validate_base_url(url) is None) is ok


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://localhost:1234/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://127.0.0.1.evil.example/v1", False),  # a registrable name, not an address
        ("http://127.example/v1", False),
        ("http://localhost.evil.example/v1", False),
        ("http://[::2]/v1", False),
        ("http://10.0.0.1/v1", False),
        ("http://[bad/v1", False),
    ],
)
def test_loopback_means_an_address_of_this_machine(url: str, loopback: bool) -> None:
    from kernel.llm.profiles import is_loopback_url

    assert is_loopback_url(url) is loopback
