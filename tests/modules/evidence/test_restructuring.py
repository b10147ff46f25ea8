"""The one optional model restructuring: through kernel.llm's client against a real 127.0.0.1
OpenAI-compatible server; one call per source, never retried, a failure applies nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.workspace import Workspace
from modules.evidence import EvidencePaths, load_evidence, prepare
from modules.evidence.restructuring import RestructuringFailedError
from tests.modules.evidence.conftest import snapshot
from tests.support.openai_server import Answer, OpenAITestServer, Status

LIMIT = 4000
SOURCE = "Alpha: the first term.\n\nBeta: the second term.\n\nRate = a / b\n"
GOOD = {
    "units": [
        {"passages": [0, 1], "kind": "glossary", "title": "Alpha and Beta"},
        {
            "passages": [2],
            "kind": "formula",
            "title": "Rate",
            "expression": "a / NULLIF(b, 0)",
            "inputs": ["a", "b"],
        },
    ]
}


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama") as srv:
        yield srv


@pytest.fixture
def model_workspace(
    workspace: Workspace, server: OpenAITestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Workspace:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"evidence:\n  profiles:\n    ollama-local:\n      baseUrl: {server.base_url}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("THT_CONFIG", str(config))
    text = workspace.settings_file.read_text(encoding="utf-8")
    workspace.settings_file.write_text(
        text.replace(
            "evidence:\n",
            "evidence:\n  restructure_profile: ollama-local\n  restructure_timeout_ms: 5000\n",
        ),
        encoding="utf-8",
    )
    (workspace.sources_dir / "m.md").write_text(SOURCE, encoding="utf-8")
    return workspace


def _prepare(ws: Workspace) -> object:
    from tht.evidence_runtime import open_evidence

    runtime = open_evidence(ws.root)
    return prepare(
        EvidencePaths.of(ws),
        max_chunk_chars=LIMIT,
        only="m.md",
        restructurer=runtime.restructurer(),
    )


def test_the_model_may_merge_retitle_and_give_a_formula_its_expression(
    model_workspace: Workspace, server: OpenAITestServer
) -> None:
    server.script(Answer(content=json.dumps(GOOD)))
    _prepare(model_workspace)
    assert len(server.chat_requests()) == 1
    sent = json.loads(server.chat_requests()[0].user_message)
    assert [p["index"] for p in sent["passages"]] == [0, 1, 2]
    state = load_evidence(EvidencePaths.of(model_workspace), max_chunk_chars=LIMIT).state
    merged = state.units["evidence:alpha-and-beta"]
    assert merged.unit.front.excerpts == ["Alpha: the first term.", "Beta: the second term."]
    assert merged.publishable
    rate = state.units["evidence:rate"].unit.front
    assert (rate.kind, rate.expression, rate.inputs) == ("formula", "a / NULLIF(b, 0)", ["a", "b"])


@pytest.mark.parametrize(
    "step",
    [
        Status(500),
        Answer(content="not json"),
        Answer(content=json.dumps({"units": [GOOD["units"][1]]})),  # drops passages 0 and 1
        Answer(
            content=json.dumps(
                {"units": [GOOD["units"][0], {**GOOD["units"][1], "expression": "SELECT a"}]}
            )
        ),
    ],
    ids=["server-error", "not-json", "drops-passages", "full-query-formula"],
)
def test_a_failed_or_invalid_restructuring_applies_nothing_and_is_not_retried(
    model_workspace: Workspace, server: OpenAITestServer, step: object
) -> None:
    before = snapshot(model_workspace.root)
    server.script(step, Answer(content=json.dumps(GOOD)))  # a retry would get a good answer
    with pytest.raises(RestructuringFailedError) as err:
        _prepare(model_workspace)
    assert err.value.exit_code == 6
    assert "nothing was applied" in err.value.message
    assert len(server.chat_requests()) == 1
    assert snapshot(model_workspace.root) == before
