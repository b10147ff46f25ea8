"""A workspace bound to the seeded customer database and synced, built once per test module and
copied into each test's own workspace; and the model configuration of the catalog's model runs
(Description Generation, Sensitive Data Suggestion) pointed at a 127.0.0.1 test server.

Shared by the catalog-curation CLI tests (describe, sensitive, generate, the model suggestion run).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import OpenAITestServer
from tests.support.sensitive_data import bind
from tests.support.sparse_copy import copytree_sparse
from tests.tht.conftest import Result, run_tht
from tests.tht.memory.support import environment

__all__ = ["ok", "replace_workspace", "synced_workspace", "use_model_config", "write_model_config"]


def ok(done: Result) -> Any:
    """The JSON of a command that must have succeeded (its output in the failure message)."""
    assert done.code == 0, done.stdout + done.stderr
    return done.json()


def synced_workspace(
    factory: pytest.TempPathFactory, name: str, then: Callable[[], object] | None = None
) -> Path:
    """A new workspace bound to the seeded database and synced (fixed clock and seed, its own
    THT_HOME); ``then`` runs next in the same environment (flags to set, …)."""
    root = factory.mktemp(name) / "ws"
    env = {
        "THT_WORKSPACE": str(root),
        "THT_CLOCK": "fixed:2026-01-01T00:00:00Z",
        "THT_SEED": "7",
        "THT_HOME": str(root.parent / "home"),
        "THT_ACTOR": None,
        "THT_SESSION": None,
    }
    with environment(env):
        assert run_tht("workspace", "init", str(root)).code == 0
        bind(root)
        ok(run_tht("catalog", "sync", "--json"))
        if then is not None:
            then()
    return root


def replace_workspace(synced: Path, workspace: Path) -> Path:
    """``synced`` copied in place of the test's own workspace (same variables: THT_WORKSPACE …);
    the Qdrant shard's holes stay holes."""
    shutil.rmtree(workspace)
    copytree_sparse(synced, workspace)
    return workspace


def write_model_config(path: Path, server: OpenAITestServer | None, **extra: Any) -> None:
    """A user config whose ``catalog:`` section is the local Ollama profile, 4 columns a batch,
    a 1.5 s timeout, at ``server`` (none: the profile's own endpoint)."""
    section: dict[str, Any] = {"generation_profile": "ollama-local", "batch_columns": 4}
    if server is not None:
        section["base_url"] = server.base_url
    section["timeout_ms"] = 1500
    section.update(extra)
    path.write_text(json.dumps({"catalog": section}), encoding="utf-8")


def use_model_config(
    tmp_path: Path, server: OpenAITestServer | None, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """:func:`write_model_config` into ``tmp_path`` and THT_CONFIG pointed at it."""
    config = tmp_path / "config.yaml"
    write_model_config(config, server)
    monkeypatch.setenv("THT_CONFIG", str(config))
    return config
