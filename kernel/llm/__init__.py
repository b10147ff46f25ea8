"""The shared OpenAI-compatible transport and provider profiles (ARCHITECTURE §3.6, spec §15–17).

Routing's semantic evaluator, Evidence preparation, the IntentParser's LLM backend and description
generation all reach models through this package; none has HTTP code of its own. Importing it is
cheap: ``httpx`` is imported on the first call only. See docs/llm.md.
"""

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
