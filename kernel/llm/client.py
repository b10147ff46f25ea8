"""``OpenAICompatibleClient``: the project's one HTTP transport to language models (spec 000 §15,
§24.5, §25; ARCHITECTURE §3.6).

Three calls, the same for every runtime (Ollama local or cloud, LM Studio, any compatible server):

- :meth:`OpenAICompatibleClient.chat` — ``POST {baseUrl}/chat/completions``;
- :meth:`OpenAICompatibleClient.list_models` / :meth:`~OpenAICompatibleClient.health` —
  ``GET {baseUrl}/models``;
- :meth:`OpenAICompatibleClient.embeddings` — ``POST {baseUrl}/embeddings``.

Guarantees, for every call:

- one attempt: no retry, no redirect, no failover to another profile, ever;
- a hard deadline (``timeout_ms``) over the whole call — connect, headers *and* body — so a server
  that drips its body byte by byte is cut off on time; an :class:`~kernel.llm.abort.AbortSignal`
  cancels the call from another thread at once;
- a bounded body read (``max_response_bytes``, counted after decompression);
- every failure is a :class:`~kernel.llm.errors.ProviderError` with a closed kind and an HTTP
  status *class*; no body, header, URL or key ever reaches an exception, a log or a file;
- the key is read at call time from the variable the profile names (``apiKeyEnv``) in the
  environment mapping given to the constructor; a profile without one sends its placeholder.

``httpx`` (and ``asyncio``) are imported on the first call, never at import time, so a process
that never calls a model pays nothing for this module.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kernel.llm.abort import AbortSignal
from kernel.llm.errors import ProviderError, status_class
from kernel.llm.profiles import Family, Location, ProviderProfile, ResponseFormat, is_loopback_url
from kernel.llm.wire import (
    Usage,
    build_response_format,
    classify_http_failure,
    decode_chat_completion,
    decode_embeddings,
    decode_model_list,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ChatCompletion",
    "ChatMessage",
    "EmbeddingsResult",
    "HealthStatus",
    "ModelListing",
    "OpenAICompatibleClient",
    "ProviderHealth",
]

T = TypeVar("T")

DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024
_ERROR_HEAD_BYTES = 4096


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatCompletion:
    """A 2xx chat answer (spec §15.2 ``ProviderEvaluationResult``). ``raw_text`` is the model's
    output: callers validate it and must never log or store it."""

    raw_text: str
    model: str
    profile_id: str
    family: Family
    location: Location
    latency_ms: int
    response_format_used: ResponseFormat
    finish_reason: str | None
    usage: Usage | None


@dataclass(frozen=True)
class ModelListing:
    model_ids: tuple[str, ...]
    latency_ms: int


HealthStatus = Literal[
    "ok",
    "model-missing",
    "listing-unsupported",
    "auth-error",
    "rate-limited",
    "timeout",
    "aborted",
    "network-error",
    "http-error",
    "invalid-response",
    "response-too-large",
    "missing-credential",
    "model-unavailable",
]


@dataclass(frozen=True)
class ProviderHealth:
    """``GET /models`` as a health check (spec §15.5): reachability, auth, model presence."""

    profile_id: str
    status: HealthStatus
    reachable: bool
    authenticated: bool | None
    model_present: bool | None
    model_count: int | None
    latency_ms: int | None
    status_class: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class EmbeddingsResult:
    """One vector per input, in input order."""

    vectors: tuple[tuple[float, ...], ...]
    model: str
    latency_ms: int
    usage: Usage | None

    @property
    def dimensions(self) -> int:
        return len(self.vectors[0]) if self.vectors else 0


class OpenAICompatibleClient:
    """The transport. Stateless between calls; safe to share across threads.

    ``env`` is where keys are read from (the variable named by a profile's ``apiKeyEnv``); pass
    ``os.environ`` from the composition root, a dict in tests. ``trust_env`` (proxy variables,
    ``.netrc``) defaults to on for remote hosts and off for loopback ones.
    """

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        user_agent: str = "tht",
        trust_env: bool | None = None,
    ) -> None:
        self._env = env
        self._user_agent = user_agent
        self._trust_env = trust_env

    def __repr__(self) -> str:
        return "OpenAICompatibleClient()"

    # -- public calls ----------------------------------------------------------------------

    def chat(
        self,
        profile: ProviderProfile,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        timeout_ms: int,
        response_format: ResponseFormat | None = None,
        json_schema: Mapping[str, Any] | None = None,
        schema_name: str = "response",
        temperature: float = 0.0,
        top_p: float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        abort: AbortSignal | None = None,
    ) -> ChatCompletion:
        """One non-streaming chat completion; the answer's text is ``choices[0].message.content``.

        ``response_format`` defaults to the profile's; it must be one the profile declares
        (``json-schema`` also needs ``json_schema``). Raises :class:`ProviderError`.
        """
        fmt: ResponseFormat = response_format or profile.response_format
        if fmt not in profile.supported_response_formats:
            raise ValueError(f"profile {profile.id!r} does not declare response format {fmt!r}")
        body: dict[str, Any] = {
            "model": profile.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
            "stream": False,
            "max_tokens": int(max_tokens),
        }
        if top_p is not None:
            body["top_p"] = top_p
        body.update(build_response_format(fmt, json_schema, schema_name))
        raw, started = self._call_timed(
            profile, "POST", "chat/completions", body, "chat", timeout_ms, max_response_bytes, abort
        )
        decoded = decode_chat_completion(raw)
        if decoded is None:
            raise ProviderError("invalid-response", operation="chat")
        return ChatCompletion(
            raw_text=decoded.content,
            model=decoded.model or profile.model,
            profile_id=profile.id,
            family=profile.family,
            location=profile.location,
            latency_ms=_ms_since(started),
            response_format_used=fmt,
            finish_reason=decoded.finish_reason,
            usage=decoded.usage,
        )

    def list_models(
        self,
        profile: ProviderProfile,
        *,
        timeout_ms: int = 1000,
        max_response_bytes: int = 1024 * 1024,
        abort: AbortSignal | None = None,
    ) -> ModelListing:
        """The model ids ``GET /models`` reports. Raises :class:`ProviderError`."""
        raw, started = self._call_timed(
            profile, "GET", "models", None, "models", timeout_ms, max_response_bytes, abort
        )
        ids = decode_model_list(raw)
        if ids is None:
            raise ProviderError("invalid-response", operation="models")
        return ModelListing(model_ids=ids, latency_ms=_ms_since(started))

    def health(self, profile: ProviderProfile, *, timeout_ms: int = 1000) -> ProviderHealth:
        """Reachable? Authenticated? Is the configured model listed? Never raises for provider
        failures: they become the health ``status``. Loads no model (``GET /models`` only)."""
        if not profile.supports_model_listing:
            return ProviderHealth(profile.id, "listing-unsupported", False, None, None, None, None)
        started = time.perf_counter()
        try:
            listing = self.list_models(profile, timeout_ms=timeout_ms)
        except ProviderError as err:
            answered = err.status_class is not None
            return ProviderHealth(
                profile_id=profile.id,
                status=err.kind,
                reachable=answered or err.kind in ("invalid-response", "response-too-large"),
                authenticated=False if err.kind == "auth-error" else None,
                model_present=None,
                model_count=None,
                latency_ms=_ms_since(started),
                status_class=err.status_class,
            )
        present = profile.model in listing.model_ids
        return ProviderHealth(
            profile_id=profile.id,
            status="ok" if present else "model-missing",
            reachable=True,
            authenticated=True,
            model_present=present,
            model_count=len(listing.model_ids),
            latency_ms=listing.latency_ms,
        )

    def embeddings(
        self,
        profile: ProviderProfile,
        inputs: Sequence[str],
        *,
        timeout_ms: int,
        model: str | None = None,
        dimensions: int | None = None,
        max_response_bytes: int = 64 * 1024 * 1024,
        abort: AbortSignal | None = None,
    ) -> EmbeddingsResult:
        """One vector per input from ``POST /embeddings`` (float encoding), in input order.

        ``model`` defaults to the profile's. Raises :class:`ProviderError` (``invalid-response``
        when the answer has the wrong count, mixed dimensions or non-numeric values).
        """
        texts = list(inputs)
        if not texts:
            return EmbeddingsResult(
                vectors=(), model=model or profile.model, latency_ms=0, usage=None
            )
        body: dict[str, Any] = {
            "model": model or profile.model,
            "input": texts,
            "encoding_format": "float",
        }
        if dimensions is not None:
            body["dimensions"] = int(dimensions)
        raw, started = self._call_timed(
            profile, "POST", "embeddings", body, "embeddings", timeout_ms, max_response_bytes, abort
        )
        decoded = decode_embeddings(raw, len(texts))
        if decoded is None:
            raise ProviderError("invalid-response", operation="embeddings")
        return EmbeddingsResult(
            vectors=decoded.vectors,
            model=decoded.model or body["model"],
            latency_ms=_ms_since(started),
            usage=decoded.usage,
        )

    # -- transport -------------------------------------------------------------------------

    def _headers(self, profile: ProviderProfile, operation: str, has_body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        if has_body:
            headers["Content-Type"] = "application/json"
        key = self._env.get(profile.api_key_env, "").strip() if profile.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif profile.api_key_required:
            raise ProviderError("missing-credential", operation=operation)
        elif profile.api_key_placeholder:
            headers["Authorization"] = f"Bearer {profile.api_key_placeholder}"
        return headers

    def _call_timed(self, *args: Any) -> tuple[bytes, float]:
        """``_call`` and the moment its deadline started (latency excludes the lazy imports)."""
        import asyncio  # noqa: F401 - warm the lazy imports outside the measured span

        import httpx  # noqa: F401

        started = time.perf_counter()
        return self._call(*args), started

    def _call(
        self,
        profile: ProviderProfile,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        operation: str,
        timeout_ms: int,
        max_bytes: int,
        abort: AbortSignal | None,
    ) -> bytes:
        if abort is not None and abort.aborted:
            raise ProviderError("aborted", operation=operation)
        import asyncio  # noqa: F401 - imported here, before the deadline starts, not inside it

        import httpx

        headers = self._headers(profile, operation, body is not None)
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        url = profile.endpoint(path)
        trust_env = self._trust_env
        if trust_env is None:
            trust_env = not is_loopback_url(url)

        async def fetch() -> bytes:
            seconds = max(timeout_ms, 1) / 1000
            async with (
                httpx.AsyncClient(
                    timeout=httpx.Timeout(seconds),
                    follow_redirects=False,
                    trust_env=trust_env,
                ) as client,
                client.stream(method, url, headers=headers, content=content) as response,
            ):
                return await _read(response, operation, max_bytes)

        try:
            return _run_bounded(fetch, timeout_ms, abort, operation)
        except ProviderError:
            raise
        except Exception as err:
            mapped = _map_exception(err, operation)
            if mapped is None:
                raise
            raise mapped from None


async def _read(response: httpx.Response, operation: str, max_bytes: int) -> bytes:
    status = response.status_code
    if not 200 <= status < 300:
        head = bytearray()
        async for chunk in response.aiter_bytes():
            head.extend(chunk)
            if len(head) >= _ERROR_HEAD_BYTES:
                break
        kind = classify_http_failure(status, bytes(head), operation=operation)
        raise ProviderError(kind, operation=operation, status_class=status_class(status))
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ProviderError("response-too-large", operation=operation, status_class="2xx")
    buffer = bytearray()
    async for chunk in response.aiter_bytes():
        buffer.extend(chunk)
        if len(buffer) > max_bytes:
            raise ProviderError("response-too-large", operation=operation, status_class="2xx")
    return bytes(buffer)


def _run_bounded(
    make: Callable[[], Awaitable[T]],
    timeout_ms: int,
    abort: AbortSignal | None,
    operation: str,
) -> T:
    """Run ``make()`` on a private event loop under a hard deadline, cancellable by ``abort``."""
    import asyncio

    async def main() -> T:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None

        def cancel() -> None:
            with contextlib.suppress(RuntimeError):  # the loop may already have finished
                loop.call_soon_threadsafe(task.cancel)

        remove = abort.add_listener(cancel) if abort is not None else None
        try:
            async with asyncio.timeout(max(timeout_ms, 1) / 1000):
                return await make()
        except TimeoutError:
            raise ProviderError("timeout", operation=operation) from None
        except asyncio.CancelledError:
            if abort is not None and abort.aborted:
                task.uncancel()
                raise ProviderError("aborted", operation=operation) from None
            raise
        finally:
            if remove is not None:
                remove()

    return asyncio.run(main())


def _map_exception(err: Exception, operation: str) -> ProviderError | None:
    """The closed kind of a transport exception; ``None`` for anything else (a bug)."""
    import httpx

    if isinstance(err, httpx.TimeoutException):
        return ProviderError("timeout", operation=operation)
    if isinstance(err, httpx.DecodingError):
        return ProviderError("invalid-response", operation=operation, status_class="2xx")
    if isinstance(err, httpx.HTTPError | OSError):
        return ProviderError("network-error", operation=operation)
    return None


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
