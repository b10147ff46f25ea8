"""OpenAI-compatible embeddings through kernel.llm's transport, real server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kernel.errors import UsageError
from kernel.llm import OpenAICompatibleClient, resolve_profile
from kernel.vectors.embedding_cache import CachedEmbedder
from kernel.vectors.errors import EmbedderUnavailableError
from kernel.vectors.factory import open_embedder
from kernel.vectors.openai_embedder import OpenAIEmbedder
from kernel.workspace import init_workspace
from tests.support.openai_server import OpenAITestServer, Raw, Stall, Status, embedding_for

MODEL = "nomic-embed-text"


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama", models=[MODEL], embedding_dimensions=12) as running:
        yield running


def _embedder(server: OpenAITestServer, **kwargs: object) -> OpenAIEmbedder:
    profile = resolve_profile(
        "ollama-local",
        file_profiles={"ollama-local": {"baseUrl": server.base_url, "model": MODEL}},
        env={},
    )
    return OpenAIEmbedder(OpenAICompatibleClient(env={}), profile, **kwargs)  # type: ignore[arg-type]


def _sent_inputs(server: OpenAITestServer) -> list[list[str]]:
    return [r.body["input"] for r in server.requests if r.path.endswith("/embeddings")]


def test_vectors_come_from_the_endpoint_normalised_in_order(server: OpenAITestServer) -> None:
    embedder = _embedder(server, batch_size=2)
    vectors = embedder.embed_passages(["a", "b", "c"])
    assert vectors.shape == (3, 12) and vectors.dtype == np.float32
    expected = np.array([embedding_for(t, 12) for t in "abc"], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-6)
    assert _sent_inputs(server) == [["a", "b"], ["c"]]  # batches of batch_size
    assert embedder.dimension == 12


def test_role_prefixes_are_sent_and_part_of_the_identity(server: OpenAITestServer) -> None:
    embedder = _embedder(server, query_prefix="search_query: ", passage_prefix="search_document: ")
    embedder.embed_queries(["tasso"])
    embedder.embed_passages(["tasso"])
    assert _sent_inputs(server) == [["search_query: tasso"], ["search_document: tasso"]]
    assert embedder.identity != _embedder(server).identity
    assert MODEL in embedder.identity and server.base_url in embedder.identity


def test_the_dimension_is_learnt_once_when_not_given(server: OpenAITestServer) -> None:
    embedder = _embedder(server)
    assert embedder.dimension == 12
    assert embedder.dimension == 12
    assert len(_sent_inputs(server)) == 1
    assert embedder.embed_queries([]).shape == (0, 12)


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        (Status(500), "http-error"),
        (Status(404, 'model "x" not found, try pulling it first'), "model-unavailable"),
        (Raw(200, b"not json"), "invalid-response"),
        (Stall(2.0), "timeout"),
    ],
)
def test_provider_failures_are_embedder_unavailable(
    server: OpenAITestServer, step: object, kind: str
) -> None:
    server.script_embeddings(step)  # type: ignore[arg-type]
    # the short deadline only where the server stalls: on a loaded machine another failure may
    # come back after 300 ms and read as a timeout
    timeout_ms = 300 if isinstance(step, Stall) else 10_000
    with pytest.raises(EmbedderUnavailableError) as caught:
        _embedder(server, timeout_ms=timeout_ms).embed_passages(["a"])
    assert caught.value.exit_code == 6
    assert caught.value.details["kind"] == kind


def test_a_wrong_number_of_vectors_is_refused(server: OpenAITestServer) -> None:
    body = {"object": "list", "model": MODEL, "data": [{"index": 0, "embedding": [1.0, 0.0]}]}
    server.script_embeddings(Raw(200, json.dumps(body).encode()))
    with pytest.raises(EmbedderUnavailableError):
        _embedder(server).embed_passages(["a", "b"])


def test_an_unreachable_endpoint_is_embedder_unavailable() -> None:
    with OpenAITestServer(flavor="ollama", models=[MODEL]) as gone:
        embedder = _embedder(gone)
    with pytest.raises(EmbedderUnavailableError) as caught:
        embedder.embed_queries(["a"])
    assert caught.value.details["kind"] == "network-error"


def test_the_workspace_can_choose_it_by_profile(server: OpenAITestServer, tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path / "ws")
    text = workspace.settings_file.read_text(encoding="utf-8")
    with_profile = text.replace(
        "evidence:\n", "evidence:\n  embedder: openai\n  embedder_profile: embeddings\n"
    )
    workspace.settings_file.write_text(with_profile, encoding="utf-8")
    profiles = {"embeddings": server.profile(MODEL)}
    embedder = open_embedder(workspace, profiles=profiles, environ={})
    assert isinstance(embedder, CachedEmbedder) and isinstance(embedder.inner, OpenAIEmbedder)
    assert embedder.embed_passages(["a"]).shape == (1, 12)
    assert embedder.embed_passages(["a"]).shape == (1, 12)
    assert len(_sent_inputs(server)) == 1  # the second came from the cache

    workspace.settings_file.write_text(
        text.replace("evidence:\n", "evidence:\n  embedder: openai\n"), encoding="utf-8"
    )
    with pytest.raises(UsageError, match=r"evidence\.embedder_profile"):
        open_embedder(workspace, profiles=profiles, environ={})
