"""The shared OpenAI-compatible transport and provider profiles (ARCHITECTURE §3.6, spec §15–17).

Routing's semantic evaluator, Evidence preparation, the IntentParser's LLM backend and description
generation all reach models through this package; none has HTTP code of its own. See docs/llm.md.

Importing this package costs nothing: names are loaded from their submodules on first use
(PEP 562), and ``httpx`` only on the first call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.llm.abort import AbortSignal
    from kernel.llm.client import (
        ChatCompletion,
        ChatMessage,
        EmbeddingsResult,
        ModelListing,
        OpenAICompatibleClient,
        ProviderHealth,
    )
    from kernel.llm.errors import PROVIDER_ERROR_KINDS, ProviderError, ProviderErrorKind
    from kernel.llm.profiles import (
        BUILTIN_PROFILES,
        ModelMetadata,
        ProviderProfile,
        ResponseFormat,
        classify_location,
    )
    from kernel.llm.settings import ProfileEnvNames, ProfileOverrides, resolve_profile
    from kernel.llm.wire import Usage, build_response_format, normalize_usage

_WHERE = {
    "AbortSignal": "abort",
    "ChatCompletion": "client",
    "ChatMessage": "client",
    "EmbeddingsResult": "client",
    "ModelListing": "client",
    "OpenAICompatibleClient": "client",
    "ProviderHealth": "client",
    "PROVIDER_ERROR_KINDS": "errors",
    "ProviderError": "errors",
    "ProviderErrorKind": "errors",
    "BUILTIN_PROFILES": "profiles",
    "ModelMetadata": "profiles",
    "ProviderProfile": "profiles",
    "ResponseFormat": "profiles",
    "classify_location": "profiles",
    "ProfileEnvNames": "settings",
    "ProfileOverrides": "settings",
    "resolve_profile": "settings",
    "Usage": "wire",
    "build_response_format": "wire",
    "normalize_usage": "wire",
}

__all__ = [
    "BUILTIN_PROFILES",
    "PROVIDER_ERROR_KINDS",
    "AbortSignal",
    "ChatCompletion",
    "ChatMessage",
    "EmbeddingsResult",
    "ModelListing",
    "ModelMetadata",
    "OpenAICompatibleClient",
    "ProfileEnvNames",
    "ProfileOverrides",
    "ProviderError",
    "ProviderErrorKind",
    "ProviderHealth",
    "ProviderProfile",
    "ResponseFormat",
    "Usage",
    "build_response_format",
    "classify_location",
    "normalize_usage",
    "resolve_profile",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kernel.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kernel.llm.{module}"), name)
    globals()[name] = value
    return value
