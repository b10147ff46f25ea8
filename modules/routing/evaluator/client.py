"""``OpenAICompatibleEvaluatorClient`` (spec 000 §15.2, §24.5): routing's face of the shared
transport in ``kernel/llm``. It adds only what is routing's — the system prompt, the input
serialization, the v1 JSON Schema for the ``json-schema`` format — and returns the raw model text
for the parser. One attempt, no retry, no failover, whatever happens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.llm.client import (
    ChatCompletion,
    ChatMessage,
    ModelListing,
    OpenAICompatibleClient,
    ProviderHealth,
)
from modules.routing.evaluator.contracts import RoutingEvaluationInput, evaluation_schema
from modules.routing.evaluator.prompt import SYSTEM_PROMPT, user_message

if TYPE_CHECKING:
    from kernel.llm.abort import AbortSignal
    from kernel.llm.profiles import ProviderProfile

__all__ = ["OpenAICompatibleEvaluatorClient"]


class OpenAICompatibleEvaluatorClient:
    def __init__(self, transport: OpenAICompatibleClient) -> None:
        self._transport = transport

    def evaluate(
        self,
        evaluation_input: RoutingEvaluationInput,
        profile: ProviderProfile,
        *,
        timeout_ms: int,
        max_output_tokens: int = 400,
        max_response_bytes: int = 64 * 1024,
        abort: AbortSignal | None = None,
    ) -> ChatCompletion:
        """Ask the profile's model for a routing evaluation; raises ``ProviderError``."""
        schema = evaluation_schema() if profile.response_format == "json-schema" else None
        return self._transport.chat(
            profile,
            [
                ChatMessage("system", SYSTEM_PROMPT),
                ChatMessage("user", user_message(evaluation_input)),
            ],
            max_tokens=max_output_tokens,
            timeout_ms=timeout_ms,
            json_schema=schema,
            schema_name="routing_evaluation",
            temperature=0.0,
            top_p=1.0,
            max_response_bytes=max_response_bytes,
            abort=abort,
        )

    def health_check(self, profile: ProviderProfile, *, timeout_ms: int = 1000) -> ProviderHealth:
        return self._transport.health(profile, timeout_ms=timeout_ms)

    def list_models(self, profile: ProviderProfile, *, timeout_ms: int = 1000) -> ModelListing:
        return self._transport.list_models(profile, timeout_ms=timeout_ms)
