"""The OpenAI wire format: request fragments and response decoding (pure; no I/O).

- :func:`build_response_format` — the three response formats of spec 000 §15.3/§25.1;
- :func:`normalize_usage` — ``usage`` in whichever spelling the runtime uses, or ``None``;
- :func:`decode_chat_completion`, :func:`decode_model_list`, :func:`decode_embeddings` — the
  parts of a 2xx body the project reads, or ``None`` when the body is not that shape;
- :func:`classify_http_failure` — the closed error kind for a non-2xx status, looking at (never
  keeping) at most a few KiB of the error body to tell "model not found" from a wrong path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernel.llm.errors import ProviderErrorKind
from kernel.llm.profiles import ResponseFormat

__all__ = [
    "Usage",
    "build_response_format",
    "classify_http_failure",
    "decode_chat_completion",
    "decode_embeddings",
    "decode_model_list",
    "normalize_usage",
]


@dataclass(frozen=True)
class Usage:
    """Token counts as the provider reported them; a count it did not report is ``None``."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None


def build_response_format(
    mode: ResponseFormat, schema: Mapping[str, Any] | None = None, name: str = "response"
) -> dict[str, Any]:
    """The request fields for ``mode``: ``json-schema`` sends the full schema (strict),
    ``json-object`` asks for any JSON object, ``prompt-json`` adds nothing (the prompt asks)."""
    if mode == "json-schema":
        if schema is None:
            raise ValueError("json-schema response format needs a schema")
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": dict(schema)},
            }
        }
    if mode == "json-object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value < 0 or value != value or value > 10**12:  # negative, NaN, absurd
        return None
    return int(value)


def normalize_usage(raw: Any) -> Usage | None:
    """``{"prompt_tokens", "completion_tokens", "total_tokens"}`` (chat completions) or
    ``{"input_tokens", "output_tokens"}`` → :class:`Usage`; absent or malformed → ``None``."""
    if not isinstance(raw, Mapping):
        return None
    inp = _count(raw.get("prompt_tokens", raw.get("input_tokens")))
    out = _count(raw.get("completion_tokens", raw.get("output_tokens")))
    total = _count(raw.get("total_tokens"))
    if total is None and inp is not None and out is not None:
        total = inp + out
    if inp is None and out is None and total is None:
        return None
    return Usage(input_tokens=inp, output_tokens=out, total_tokens=total)


def _load(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


@dataclass(frozen=True)
class DecodedChat:
    content: str
    model: str | None
    finish_reason: str | None
    usage: Usage | None


def decode_chat_completion(body: bytes) -> DecodedChat | None:
    """``choices[0].message.content`` and friends, or ``None`` if the body is not a completion."""
    data = _load(body)
    if not isinstance(data, dict):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep only the text ones, in order
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        content = "".join(p for p in parts if isinstance(p, str)) if parts else None
    if not isinstance(content, str):
        return None
    model = data.get("model")
    finish = choices[0].get("finish_reason")
    return DecodedChat(
        content=content,
        model=model if isinstance(model, str) and model else None,
        finish_reason=finish if isinstance(finish, str) else None,
        usage=normalize_usage(data.get("usage")),
    )


def decode_model_list(body: bytes) -> tuple[str, ...] | None:
    """The model ids of ``GET /models`` (``{"data": [{"id": ...}]}``), or ``None``."""
    data = _load(body)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None
    ids = []
    for item in data["data"]:
        if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
            ids.append(item["id"])
    return tuple(ids)


@dataclass(frozen=True)
class DecodedEmbeddings:
    vectors: tuple[tuple[float, ...], ...]
    model: str | None
    usage: Usage | None


def decode_embeddings(body: bytes, expected: int) -> DecodedEmbeddings | None:
    """The vectors of ``POST /embeddings`` in input order, or ``None`` if the body is not that
    shape (wrong count, non-numeric values, mixed dimensions, duplicate indexes)."""
    data = _load(body)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None
    items = data["data"]
    if len(items) != expected:
        return None
    slots: list[tuple[float, ...] | None] = [None] * expected
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            return None
        index = item.get("index", position)
        vector = item.get("embedding")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
            return None
        if slots[index] is not None or not isinstance(vector, list) or not vector:
            return None
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in vector):
            return None
        slots[index] = tuple(float(v) for v in vector)
    vectors = tuple(v for v in slots if v is not None)
    if len(vectors) != expected or len({len(v) for v in vectors}) != 1:
        return None
    model = data.get("model")
    return DecodedEmbeddings(
        vectors=vectors,
        model=model if isinstance(model, str) and model else None,
        usage=normalize_usage(data.get("usage")),
    )


_MODEL_MISSING = re.compile(
    r"model_not_found|no models loaded|model\b[^\n]{0,300}?\bnot (?:found|loaded)|"
    r"model is unloaded|unknown model",
    re.IGNORECASE,
)


def classify_http_failure(status: int, error_head: bytes, *, operation: str) -> ProviderErrorKind:
    """The closed kind of a non-2xx answer. ``error_head`` (the first few KiB of the body) is
    only matched against, never returned or stored."""
    if status in (401, 403):
        return "auth-error"
    if status == 429:
        return "rate-limited"
    if status in (400, 404) and operation in ("chat", "embeddings"):
        text = error_head[:8192].decode("utf-8", errors="replace")
        if _MODEL_MISSING.search(text):
            return "model-unavailable"
    return "http-error"
