"""Fixtures: a real OpenAI-compatible server on 127.0.0.1 per test, and profiles pointing at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kernel.llm import OpenAICompatibleClient, ProfileOverrides, ProviderProfile, resolve_profile
from tests.support.openai_server import OpenAITestServer

SECRET = "sk-test-SEEDED-SECRET-0123456789abcdef"

# (profile id, server flavor, model the server knows)
BUILTINS: list[tuple[str, str, str]] = [
    ("ollama-local", "ollama", "ministral-3:3b"),
    ("ollama-cloud", "ollama", "ministral-3:3b-cloud"),
    ("lmstudio-local", "lmstudio", "mistralai/ministral-3-3b"),
    ("lmstudio-lan", "lmstudio", "mistralai/ministral-3-3b"),
    ("custom-openai-compatible", "openai", "some-model"),
]

_KEY_ENV = {
    "ollama-cloud": "OLLAMA_API_KEY",
    "lmstudio-local": "LM_STUDIO_API_TOKEN",
    "lmstudio-lan": "LM_STUDIO_API_TOKEN",
    "custom-openai-compatible": "CUSTOM_LLM_KEY",
}


def profile_for(
    profile_id: str, base_url: str, model: str, **extra: Any
) -> tuple[ProviderProfile, dict[str, str]]:
    """The built-in ``profile_id`` aimed at the test server, with the env holding its key."""
    entry: dict[str, Any] = {"baseUrl": base_url, "model": model}
    if profile_id == "custom-openai-compatible":
        entry.update(
            location="lan", remoteDataPolicy="internal-network", apiKeyEnv="CUSTOM_LLM_KEY"
        )
    entry.update(extra)
    env = {_KEY_ENV[profile_id]: SECRET} if profile_id in _KEY_ENV else {}
    profile = resolve_profile(
        profile_id,
        file_profiles={profile_id: entry},
        layers=[ProfileOverrides()],
        env=env,
        cloud_opt_in=True,
    )
    return profile, env


@pytest.fixture(params=BUILTINS, ids=[b[0] for b in BUILTINS])
def builtin(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[ProviderProfile, OpenAITestServer, OpenAICompatibleClient]]:
    profile_id, flavor, model = request.param
    needs_key = profile_id in _KEY_ENV and profile_id != "lmstudio-local"
    with OpenAITestServer(
        flavor=flavor,  # type: ignore[arg-type]
        models=[model],
        api_key=SECRET if needs_key else None,
    ) as server:
        profile, env = profile_for(profile_id, server.base_url, model)
        yield profile, server, OpenAICompatibleClient(env=env)
