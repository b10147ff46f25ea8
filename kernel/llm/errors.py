"""Sanitized provider errors: a closed kind and an HTTP status class, never a body, header or key.

Every failure of the transport becomes one :class:`ProviderError`. Its message is built only from
the kind, the operation and the status *class* (``4xx``/``5xx``), so it can be logged, shown or
stored without leaking what the provider said (an error body may echo the prompt), the request
headers (the bearer token) or the endpoint's query string.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "PROVIDER_ERROR_KINDS",
    "ProviderError",
    "ProviderErrorKind",
    "status_class",
]

ProviderErrorKind = Literal[
    "timeout",  # the call's deadline passed (connect, headers or body)
    "aborted",  # the caller's AbortSignal fired
    "network-error",  # connection refused/reset, DNS, TLS
    "auth-error",  # HTTP 401 or 403
    "rate-limited",  # HTTP 429
    "model-unavailable",  # HTTP 404 (or 400) saying the model is not there / not loaded
    "http-error",  # any other non-2xx answer
    "invalid-response",  # 2xx whose body is not the OpenAI shape (not JSON, no content, ...)
    "response-too-large",  # the body exceeded the caller's byte bound
    "missing-credential",  # the profile requires a key and its apiKeyEnv variable is unset
]
PROVIDER_ERROR_KINDS: tuple[ProviderErrorKind, ...] = get_args(ProviderErrorKind)


def status_class(status: int | None) -> str | None:
    """``404`` → ``"4xx"``; ``None`` stays ``None``."""
    if status is None:
        return None
    return f"{status // 100}xx"


class ProviderError(Exception):
    """A failed call to an OpenAI-compatible endpoint, described only by safe, closed values.

    ``kind`` is one of :data:`PROVIDER_ERROR_KINDS`; ``status_class`` is ``"4xx"``/``"5xx"`` when
    the provider answered; ``operation`` is ``chat``, ``models`` or ``embeddings``. There is no
    field for the body, the headers or the URL, by design.
    """

    def __init__(
        self,
        kind: ProviderErrorKind,
        *,
        operation: str,
        status_class: str | None = None,
    ) -> None:
        self.kind: ProviderErrorKind = kind
        self.operation = operation
        self.status_class = status_class
        where = f" (HTTP {status_class})" if status_class else ""
        super().__init__(f"{operation}: {kind}{where}")

    def __repr__(self) -> str:
        return (
            f"ProviderError({self.kind!r}, operation={self.operation!r}, "
            f"status_class={self.status_class!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.kind, self.operation, self.status_class))


def _rebuild(kind: ProviderErrorKind, operation: str, klass: str | None) -> ProviderError:
    return ProviderError(kind, operation=operation, status_class=klass)
