"""qdrant-client adapter specifics: a server that does not answer, errors, the local folder lock."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from kernel.vectors import (
    CollectionMissingError,
    CollectionSpec,
    VectorFilter,
    VectorStoreBusyError,
    VectorStoreUnreachableError,
)
from kernel.vectors.qdrant_server import QdrantServerVectorStore
from tests.contract import vector_corpus as corpus


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Canned(BaseHTTPRequestHandler):
    status = 500
    body: ClassVar[dict[str, object]] = {"status": {"error": "Service internal error"}}

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        payload = json.dumps(self.body).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def canned_server(request: pytest.FixtureRequest) -> Iterator[str]:
    status, body = request.param
    handler = type("Handler", (_Canned,), {"status": status, "body": body})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_does_not_answer_is_unreachable() -> None:
    store = QdrantServerVectorStore.from_url(f"http://127.0.0.1:{_free_port()}", "ws", timeout=2)
    for attempt in (
        store.describe,
        lambda: store.count(VectorFilter(kind="evidence")),
        lambda: store.ensure_collection(CollectionSpec(dense_size=8)),
    ):
        with pytest.raises(VectorStoreUnreachableError) as caught:
            attempt()
        assert caught.value.exit_code == 6
        assert caught.value.details["reason"] == "unreachable"


@pytest.mark.parametrize("canned_server", [(500, {"status": {"error": "boom"}})], indirect=True)
def test_a_server_error_is_unreachable(canned_server: str) -> None:
    store = QdrantServerVectorStore.from_url(canned_server, "ws", timeout=2)
    with pytest.raises(VectorStoreUnreachableError, match="HTTP 500"):
        store.count(VectorFilter(kind="evidence"))


@pytest.mark.parametrize(
    "canned_server",
    [(404, {"status": {"error": "Not found: Collection `ws` doesn't exist!"}})],
    indirect=True,
)
def test_a_server_without_the_collection_reports_it_missing(canned_server: str) -> None:
    store = QdrantServerVectorStore.from_url(canned_server, "ws", timeout=2)
    dense, sparse = corpus.query_vectors("loan")
    with pytest.raises(CollectionMissingError):
        store.query_hybrid(dense=dense, sparse=sparse, where=VectorFilter(kind="evidence"))


def test_a_local_folder_open_elsewhere_is_busy(tmp_path: Path) -> None:
    first = QdrantServerVectorStore.local(str(tmp_path / "local"), "ws")
    first.ensure_collection(CollectionSpec(dense_size=8))
    try:
        with pytest.raises(VectorStoreBusyError):
            QdrantServerVectorStore.local(str(tmp_path / "local"), "ws")
    finally:
        first.close()
