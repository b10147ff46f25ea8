"""``evidence.embedder: openai`` through the real CLI: the profile comes from the user config
file's ``evidence.profiles`` (as for the restructurer), the role prefixes from
``workspace.yaml``, and a cloud profile is refused unless the workspace opts in — a real
OpenAI-protocol server on 127.0.0.1 answers the embeddings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_tht
from tests.support.openai_server import OpenAITestServer

MODEL = "nomic-embed-text"
SOURCE = """# Glossary

## Glossary

- **Revenue**: the sum of the sales over the year, in euros.
"""


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama", models=[MODEL], embedding_dimensions=16) as running:
        yield running


def _workspace(tmp_path: Path, evidence: str, profile: dict[str, str]) -> tuple[Path, dict]:
    from kernel.workspace import init_workspace

    ws, _ = init_workspace(tmp_path / "ws")
    text = ws.settings_file.read_text(encoding="utf-8")
    ws.settings_file.write_text(text.replace("evidence:\n", "evidence:\n" + evidence))
    (ws.root / "evidence" / "sources" / "glossary.md").write_text(SOURCE, encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"evidence": {"profiles": {"embeddings": profile}}}))
    return ws.root, {"THT_CONFIG": str(config)}


def test_publish_embeds_through_the_user_s_profile_with_the_role_prefixes(
    server: OpenAITestServer, tmp_path: Path
) -> None:
    settings = (
        "  embedder: openai\n  embedder_profile: embeddings\n"
        '  embedder_query_prefix: "search_query: "\n'
        '  embedder_passage_prefix: "search_document: "\n'
    )
    root, env = _workspace(tmp_path, settings, server.profile(MODEL))
    for step in (("evidence", "prepare"), ("evidence", "publish", "--json")):
        done = run_tht(*step, cwd=root, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    sent = [t for r in server.requests if r.path.endswith("/embeddings") for t in r.body["input"]]
    fragments = [t for t in sent if t.startswith("search_document: ")]
    assert fragments == ["search_document: Revenue\n\n" + SOURCE.splitlines()[-1][2:]]
    # the vocabulary table's words are embedded as queries (docs/evidence.md)
    assert "search_query: revenue" in sent and "revenue" not in sent
    found = run_tht("search", "find", "yearly revenue", "--json", cwd=root, env=env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["id"] == "evidence:revenue"
    queries = [
        t for r in server.requests if r.path.endswith("/embeddings") for t in r.body["input"]
    ][len(sent) :]
    assert "search_query: yearly revenue" in queries


def test_a_cloud_profile_is_refused_without_the_workspace_s_opt_in(
    server: OpenAITestServer, tmp_path: Path
) -> None:
    cloud = server.profile(
        MODEL, family="custom", location="cloud", remoteDataPolicy="external-cloud"
    )
    root, env = _workspace(tmp_path, "  embedder: openai\n  embedder_profile: embeddings\n", cloud)
    assert run_tht("evidence", "prepare", cwd=root, env=env).returncode == 0
    refused = run_tht("evidence", "publish", cwd=root, env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "evidence.embedder_cloud_opt_in: true" in refused.stderr
    assert not any(r.path.endswith("/embeddings") for r in server.requests)  # nothing sent
    assert not (root / ".tht" / "evidence" / "generations.json").exists()
