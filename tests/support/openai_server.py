"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (any helper's tests may use it).

It speaks ``POST /v1/chat/completions``, ``GET /v1/models`` and ``POST /v1/embeddings`` in the
OpenAI wire format, with the observable behaviours of the real runtimes (``flavor``):

- ``ollama`` — error bodies ``{"error": {"message", "type", "param", "code"}}``; an unknown model
  answers 404 ``model "X" not found, try pulling it first``; accepts ``json_object`` and
  ``json_schema``; always reports ``usage``.
- ``lmstudio`` — rejects ``response_format: {"type": "json_object"}`` with HTTP 400 and a
  *bare-string* error body ``{"error": "'response_format.type' must be 'json_schema' or 'text'"}``;
  accepts ``json_schema``; an unknown model answers 404 ``model_not_found`` in the object form.
- ``openai`` — OpenAI's own error objects (for ``custom-openai-compatible``).

What a chat request gets is scripted: queue :class:`Step` objects with :meth:`script`, or set
:attr:`responder` to a function of the :class:`RecordedRequest`. Steps: :class:`Answer` (usage
present or absent), :class:`Status` (an error status in the flavor's body shape), :class:`Raw`
(any status, any bytes), :class:`Drip` (a valid answer sent a few bytes at a time),
:class:`Stall` (nothing for a while), :class:`Oversized` (a valid answer of N bytes),
:class:`Hangup` (close without answering). With nothing scripted, a chat answers ``default_answer``.

Every request is recorded (method, path, headers, parsed JSON body) in :attr:`requests`.

Usage::

    with OpenAITestServer(flavor="ollama", models=["ministral-3:3b"]) as server:
        server.script(Answer(content='{"ok": true}'), Status(429))
        base_url = server.base_url          # http://127.0.0.1:PORT/v1

Also a command for manual runs: ``python -m tests.support.openai_server --flavor lmstudio``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = [
    "Answer",
    "Drip",
    "Hangup",
    "OpenAITestServer",
    "Oversized",
    "Raw",
    "RecordedRequest",
    "Stall",
    "Status",
    "Step",
    "embedding_for",
]

Flavor = Literal["ollama", "lmstudio", "openai"]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None

    @property
    def user_message(self) -> str:
        """The last user message's content (chat requests), else ``""``."""
        if not isinstance(self.body, dict):
            return ""
        for message in reversed(self.body.get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else ""
        return ""


@dataclass(frozen=True)
class Answer:
    """A 200 chat completion whose ``choices[0].message.content`` is ``content``.

    ``usage``: ``"auto"`` (computed), ``None`` (field absent) or an explicit mapping.
    """

    content: str
    usage: dict[str, Any] | Literal["auto"] | None = "auto"
    model: str | None = None
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Status:
    """An error status with the flavor's error body (``message`` defaults per status)."""

    code: int
    message: str | None = None


@dataclass(frozen=True)
class Raw:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class Drip:
    """A valid answer whose body is sent ``chunk`` bytes every ``interval_s`` seconds."""

    content: str
    chunk: int = 4
    interval_s: float = 0.05


@dataclass(frozen=True)
class Stall:
    """Send nothing for ``seconds``, then answer ``then`` (default: an empty answer)."""

    seconds: float
    then: Answer | None = None


@dataclass(frozen=True)
class Oversized:
    """A valid 200 answer whose body is about ``size`` bytes; ``declare`` sends Content-Length."""

    size: int
    declare: bool = True


@dataclass(frozen=True)
class Hangup:
    """Close the connection without an answer."""


Step = Answer | Status | Raw | Drip | Stall | Oversized | Hangup

_OLLAMA_TYPES = {400: "invalid_request_error", 404: "not_found_error"}
_DEFAULT_MESSAGES = {
    400: "invalid request",
    401: "unauthorized",
    403: "forbidden",
    404: "not found",
    429: "too many requests",
    500: "internal server error",
    502: "bad gateway",
    503: "service unavailable",
}


def embedding_for(text: str, dimensions: int = 8) -> list[float]:
    """A deterministic unit vector for ``text`` (what the server's /embeddings returns)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest() * (1 + dimensions * 4 // 32)
    raw = [struct.unpack_from(">i", digest, 4 * i)[0] / 2**31 for i in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [round(v / norm, 6) for v in raw]


class OpenAITestServer:
    """A threaded HTTP server on 127.0.0.1 (random port) serving the OpenAI wire format."""

    def __init__(
        self,
        *,
        flavor: Flavor = "ollama",
        models: Iterable[str] = ("ministral-3:3b",),
        api_key: str | None = None,
        usage: bool = True,
        default_answer: str = "{}",
        embedding_dimensions: int = 8,
    ) -> None:
        self.flavor: Flavor = flavor
        self.models = list(models)
        self.api_key = api_key
        self.usage = usage
        self.default_answer = default_answer
        self.embedding_dimensions = embedding_dimensions
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], Step] | None = None
        self._queue: deque[Step] = deque()
        self._embedding_queue: deque[Step] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> OpenAITestServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def profile(self, model: str, **overrides: str) -> dict[str, str]:
        """A provider profile (kernel.llm's file format) for this server: local, the given
        model; ``overrides`` replace fields (``family``, ``location``, ``apiKeyEnv`` …)."""
        return {
            "protocol": "openai-chat-completions",
            "family": "ollama",
            "location": "local",
            "baseUrl": self.base_url,
            "model": model,
            "responseFormat": "json-object",
            "remoteDataPolicy": "local-only",
            **overrides,
        }

    # -- scripting -------------------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Queue steps; each chat request consumes the next one."""
        with self._lock:
            self._queue.extend(steps)

    def script_embeddings(self, *steps: Step) -> None:
        """Queue steps for ``/embeddings`` requests (``Raw`` to send a malformed answer)."""
        with self._lock:
            self._embedding_queue.extend(steps)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._embedding_queue.clear()
            self.requests.clear()
        self.responder = None

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next_step(self, request: RecordedRequest) -> Step:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return Answer(content=self.default_answer)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    # -- bodies ----------------------------------------------------------------------------

    def error_body(self, code: int, message: str | None = None) -> bytes:
        text = message or _DEFAULT_MESSAGES.get(code, "error")
        if self.flavor == "lmstudio" and code == 400:
            return json.dumps({"error": text}).encode()
        if self.flavor == "openai":
            kinds = {401: "invalid_api_key", 429: "rate_limit_exceeded", 404: "model_not_found"}
            err = {
                "message": text,
                "type": "invalid_request_error" if code < 500 else "server_error",
                "param": None,
                "code": kinds.get(code),
            }
            return json.dumps({"error": err}).encode()
        if self.flavor == "lmstudio":
            err = {"message": text, "type": "invalid_request_error", "param": None, "code": None}
            return json.dumps({"error": err}).encode()
        err = {
            "message": text,
            "type": _OLLAMA_TYPES.get(code, "api_error"),
            "param": None,
            "code": None,
        }
        return json.dumps({"error": err}).encode()

    def completion_body(self, answer: Answer, request: RecordedRequest) -> bytes:
        model = answer.model or (request.body or {}).get("model") or "model"
        usage: dict[str, Any] | None
        if answer.usage == "auto":
            prompt = len(json.dumps((request.body or {}).get("messages", []))) // 4
            completion = max(1, len(answer.content) // 4)
            usage = (
                {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
                if self.usage
                else None
            )
        else:
            usage = answer.usage
        body: dict[str, Any] = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "system_fingerprint": "fp_ollama" if self.flavor == "ollama" else None,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.content},
                    "finish_reason": answer.finish_reason,
                }
            ],
        }
        if usage is not None:
            body["usage"] = usage
        return json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAITestServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence
        return

    # -- plumbing --------------------------------------------------------------------------

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _authorized(self) -> bool:
        key = self.owner.api_key
        return key is None or self.headers.get("Authorization") == f"Bearer {key}"

    def _recorded(self, body: Any) -> RecordedRequest:
        request = RecordedRequest(
            method=self.command, path=self.path, headers=dict(self.headers.items()), body=body
        )
        self.owner._record(request)
        return request

    # -- routes ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._recorded(None)
        if self.path.rstrip("/") != "/v1/models":
            self._send(404, self.owner.error_body(404, "404 page not found"))
            return
        if not self._authorized():
            self._send(401, self.owner.error_body(401))
            return
        data = [
            {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "library"}
            for m in self.owner.models
        ]
        self._send(200, json.dumps({"object": "list", "data": data}).encode())

    def do_POST(self) -> None:
        body = self._read_json()
        request = self._recorded(body)
        path = self.path.rstrip("/")
        if path == "/v1/embeddings":
            self._embeddings(body)
            return
        if path != "/v1/chat/completions":
            self._send(404, self.owner.error_body(404, "404 page not found"))
            return
        if not self._authorized():
            self._send(401, self.owner.error_body(401))
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send(400, self.owner.error_body(400, "invalid message format"))
            return
        model = body.get("model")
        if model not in self.owner.models:
            if self.owner.flavor == "lmstudio":
                text = f'Model "{model}" not found. Please specify a valid model.'
                err = {
                    "message": text,
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
                self._send(404, json.dumps({"error": err}).encode())
            else:
                self._send(
                    404,
                    self.owner.error_body(404, f'model "{model}" not found, try pulling it first'),
                )
            return
        fmt = body.get("response_format")
        lmstudio = self.owner.flavor == "lmstudio"
        if lmstudio and isinstance(fmt, dict) and fmt.get("type") not in ("json_schema", "text"):
            message = "'response_format.type' must be 'json_schema' or 'text'"
            self._send(400, self.owner.error_body(400, message))
            return
        self._play(self.owner._next_step(request), request)

    def _play(self, step: Step, request: RecordedRequest) -> None:
        owner = self.owner
        if isinstance(step, Answer):
            self._send(200, owner.completion_body(step, request))
        elif isinstance(step, Status):
            self._send(step.code, owner.error_body(step.code, step.message))
        elif isinstance(step, Raw):
            self._send(step.status, step.body, step.content_type)
        elif isinstance(step, Drip):
            body = owner.completion_body(Answer(content=step.content), request)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for i in range(0, len(body), step.chunk):
                    self.wfile.write(body[i : i + step.chunk])
                    self.wfile.flush()
                    time.sleep(step.interval_s)
            except OSError:
                pass
            self.close_connection = True
        elif isinstance(step, Stall):
            time.sleep(step.seconds)
            with contextlib.suppress(OSError):
                self._play(step.then or Answer(content="{}"), request)
        elif isinstance(step, Oversized):
            filler = "x" * max(0, step.size)
            body = owner.completion_body(Answer(content=filler), request)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if step.declare:
                self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for i in range(0, len(body), 65536):
                    self.wfile.write(body[i : i + 65536])
            except OSError:
                pass
            self.close_connection = True
        elif isinstance(step, Hangup):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def _embeddings(self, body: Any) -> None:
        if not self._authorized():
            self._send(401, self.owner.error_body(401))
            return
        with self.owner._lock:
            step = self.owner._embedding_queue.popleft() if self.owner._embedding_queue else None
        if step is not None:
            self._play(step, self.owner.requests[-1])
            return
        if not isinstance(body, dict) or body.get("model") not in self.owner.models:
            model = body.get("model") if isinstance(body, dict) else None
            self._send(
                404, self.owner.error_body(404, f'model "{model}" not found, try pulling it first')
            )
            return
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dims = int(body.get("dimensions") or self.owner.embedding_dimensions)
        data = [
            {"object": "embedding", "embedding": embedding_for(str(t), dims), "index": i}
            for i, t in enumerate(texts)
        ]
        tokens = sum(max(1, len(str(t)) // 4) for t in texts)
        out: dict[str, Any] = {"object": "list", "data": data, "model": body["model"]}
        if self.owner.usage:
            out["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        self._send(200, json.dumps(out).encode())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible test server on 127.0.0.1")
    parser.add_argument("--flavor", choices=["ollama", "lmstudio", "openai"], default="ollama")
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--answer", default="{}", help="content of every chat answer")
    args = parser.parse_args(argv)
    server = OpenAITestServer(
        flavor=args.flavor, models=args.model or ["ministral-3:3b"], default_answer=args.answer
    ).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
