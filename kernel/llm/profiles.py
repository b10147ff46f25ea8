"""Declarative provider profiles (spec 000 §15.2, §16): where a model is, how to reach it, what it
supports. The transport has no branch on the provider: every difference lives here.

A :class:`ProviderProfile` is the *resolved* profile (built-in defaults, then the user file, then
environment, then command-line overrides: see :mod:`kernel.llm.settings`). It never holds a key:
``api_key_env`` names the environment variable the transport reads at call time.

Classification (§16.1, §16.10): the location that counts is where the prompt ends up, not which
process is contacted. An Ollama model whose name ends in ``-cloud``/``:cloud`` is offloaded by the
local daemon to Ollama's cloud, so such a profile is classified ``cloud`` with
``remote_data_policy = external-cloud`` even when its ``baseUrl`` is the local daemon.

Standard library only: the routing hook imports this module on its ambiguous path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

__all__ = [
    "BUILTIN_PROFILES",
    "FAMILIES",
    "LOCATIONS",
    "REMOTE_DATA_POLICIES",
    "RESPONSE_FORMATS",
    "Family",
    "Location",
    "ModelMetadata",
    "ProviderProfile",
    "RemoteDataPolicy",
    "ResponseFormat",
    "classify_location",
    "is_cloud_model_name",
    "is_loopback_url",
    "policy_for_location",
]

Family = Literal["ollama", "lmstudio", "custom"]
Location = Literal["local", "lan", "cloud"]
RemoteDataPolicy = Literal["local-only", "internal-network", "external-cloud"]
ResponseFormat = Literal["json-schema", "json-object", "prompt-json"]

FAMILIES: tuple[Family, ...] = get_args(Family)
LOCATIONS: tuple[Location, ...] = get_args(Location)
REMOTE_DATA_POLICIES: tuple[RemoteDataPolicy, ...] = get_args(RemoteDataPolicy)
RESPONSE_FORMATS: tuple[ResponseFormat, ...] = get_args(ResponseFormat)

_POLICY_BY_LOCATION: dict[Location, RemoteDataPolicy] = {
    "local": "local-only",
    "lan": "internal-network",
    "cloud": "external-cloud",
}

_CLOUD_MODEL = re.compile(r"(?:^|[:\-])cloud$")


def policy_for_location(location: Location) -> RemoteDataPolicy:
    """The only ``remoteDataPolicy`` coherent with a location (§17.5)."""
    return _POLICY_BY_LOCATION[location]


def is_cloud_model_name(model: str) -> bool:
    """Ollama's cloud models are named ``<name>:<tag>-cloud`` (or ``:cloud``)."""
    return bool(_CLOUD_MODEL.search(model.strip().lower()))


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is this machine (``localhost``, 127.0.0.0/8, ``::1``).

    The host must *be* a loopback address, not start like one: ``127.0.0.1.evil.example`` is a
    name anyone can register, resolved by DNS to wherever its owner likes."""
    import ipaddress

    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def classify_location(family: Family, declared: Location, model: str) -> Location:
    """Where the prompt really goes: a cloud model behind the local Ollama daemon is ``cloud``."""
    if declared == "cloud":
        return "cloud"
    if family == "ollama" and is_cloud_model_name(model):
        return "cloud"
    return declared


@dataclass(frozen=True)
class ModelMetadata:
    """Descriptive facts about the model, reported in telemetry; never used to decide anything."""

    family: str | None = None
    parameter_class: str | None = None
    variant: Literal["instruct", "reasoning", "unknown"] | None = None
    quantization: str | None = None
    evaluator_profile_version: str | None = None


@dataclass(frozen=True)
class ProviderProfile:
    """One resolved, validated provider profile. Holds no secret (only the variable's name)."""

    id: str
    family: Family
    location: Location
    base_url: str
    model: str
    response_format: ResponseFormat
    remote_data_policy: RemoteDataPolicy
    supported_response_formats: tuple[ResponseFormat, ...] = ("json-object", "prompt-json")
    api_key_env: str | None = None
    api_key_placeholder: str | None = None
    api_key_required: bool = False
    supports_model_listing: bool = True
    supports_usage: bool = True
    model_metadata: ModelMetadata = field(default_factory=ModelMetadata)
    declared_location: Location | None = None
    protocol: Literal["openai-chat-completions"] = "openai-chat-completions"

    @property
    def provider_key(self) -> str:
        """``<profile>:<model>``: the breaker's and the cache's name for this provider."""
        return f"{self.id}:{self.model}"

    @property
    def reclassified_cloud(self) -> bool:
        """True when the file said local/lan but the model is served from the cloud."""
        return self.location == "cloud" and self.declared_location not in (None, "cloud")

    def endpoint(self, path: str) -> str:
        """``{baseUrl}/{path}`` with exactly one slash between them."""
        return f"{self.base_url.rstrip('/')}/{path.lstrip('/')}"

    def describe(self) -> dict[str, Any]:
        """A public description (camelCase like the file): safe to print, log or store."""
        meta = self.model_metadata
        return {
            "id": self.id,
            "protocol": self.protocol,
            "family": self.family,
            "location": self.location,
            "declaredLocation": self.declared_location or self.location,
            "baseUrl": self.base_url,
            "model": self.model,
            "responseFormat": self.response_format,
            "supportedResponseFormats": list(self.supported_response_formats),
            "apiKeyEnv": self.api_key_env,
            "apiKeyRequired": self.api_key_required,
            "supportsModelListing": self.supports_model_listing,
            "supportsUsage": self.supports_usage,
            "remoteDataPolicy": self.remote_data_policy,
            "modelMetadata": {
                "family": meta.family,
                "parameterClass": meta.parameter_class,
                "variant": meta.variant,
                "quantization": meta.quantization,
                "evaluatorProfileVersion": meta.evaluator_profile_version,
            },
        }


_MINISTRAL = {
    "family": "ministral-3",
    "parameterClass": "3b",
    "variant": "instruct",
    "evaluatorProfileVersion": "ministral-3-3b-routing-v1",
}

# The built-in profiles of spec 000 §16, in the user file's own (camelCase) format. A user file
# entry with the same id is merged over these field by field. ``lmstudio-lan`` and
# ``custom-openai-compatible`` have no address or model: the user must give both.
BUILTIN_PROFILES: dict[str, dict[str, Any]] = {
    "ollama-local": {
        "protocol": "openai-chat-completions",
        "family": "ollama",
        "location": "local",
        "baseUrl": "http://127.0.0.1:11434/v1",
        "model": "ministral-3:3b",
        "modelMetadata": {**_MINISTRAL, "quantization": "q4_k_m"},
        "apiKeyPlaceholder": "ollama",
        "responseFormat": "json-object",
        "supportedResponseFormats": ["json-object", "prompt-json"],
        "supportsModelListing": True,
        "supportsUsage": True,
        "remoteDataPolicy": "local-only",
    },
    "ollama-cloud": {
        "protocol": "openai-chat-completions",
        "family": "ollama",
        "location": "cloud",
        "baseUrl": "https://ollama.com/v1",
        "model": "ministral-3:3b-cloud",
        "modelMetadata": {**_MINISTRAL, "quantization": "managed"},
        "apiKeyEnv": "OLLAMA_API_KEY",
        "apiKeyRequired": True,
        "responseFormat": "json-object",
        "supportedResponseFormats": ["json-object", "prompt-json"],
        "supportsModelListing": True,
        "supportsUsage": True,
        "remoteDataPolicy": "external-cloud",
    },
    "lmstudio-local": {
        "protocol": "openai-chat-completions",
        "family": "lmstudio",
        "location": "local",
        "baseUrl": "http://127.0.0.1:1234/v1",
        "model": "mistralai/ministral-3-3b",
        "modelMetadata": {**_MINISTRAL, "quantization": "configured-in-lm-studio"},
        "apiKeyEnv": "LM_STUDIO_API_TOKEN",
        "responseFormat": "json-schema",
        # LM Studio answers HTTP 400 to response_format json_object: it is not declared.
        "supportedResponseFormats": ["json-schema", "prompt-json"],
        "supportsModelListing": True,
        "supportsUsage": True,
        "remoteDataPolicy": "local-only",
    },
    "lmstudio-lan": {
        "protocol": "openai-chat-completions",
        "family": "lmstudio",
        "location": "lan",
        "apiKeyEnv": "LM_STUDIO_API_TOKEN",
        "apiKeyRequired": True,
        "responseFormat": "json-schema",
        "supportedResponseFormats": ["json-schema", "prompt-json"],
        "supportsModelListing": True,
        "supportsUsage": True,
        "remoteDataPolicy": "internal-network",
    },
    "custom-openai-compatible": {
        "protocol": "openai-chat-completions",
        "family": "custom",
        "responseFormat": "json-object",
        "supportedResponseFormats": ["json-object", "prompt-json"],
        "supportsModelListing": True,
        "supportsUsage": True,
    },
}
