"""``tht evaluator health / models`` against a real server on 127.0.0.1 (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAITestServer

SECRET = "sk-test-SEEDED-cli-secret-000111"


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(flavor="ollama", models=["ministral-3:3b", "qwen3:4b"]) as s:
        yield s


def run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MCP_ROUTING_EVALUATOR_")}
    full.update({"THT_HOME": str(tmp_path / "home"), "THT_CONFIG": str(tmp_path / "config.yaml")})
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tht", "evaluator", *args],
        capture_output=True,
        text=True,
        env=full,
        check=False,
        timeout=60,
    )


def test_health_ok_names_the_model_and_location(tmp_path: Path, server: OpenAITestServer) -> None:
    done = run(
        tmp_path, "health", "--json", env={"MCP_ROUTING_EVALUATOR_BASE_URL": server.base_url}
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["status"] == "ok"
    assert (body["profile"], body["model"], body["modelPresent"]) == (
        "ollama-local",
        "ministral-3:3b",
        True,
    )
    assert body["location"] == "local"
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]


def test_health_reports_a_missing_model_with_exit_6(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    env = {
        "MCP_ROUTING_EVALUATOR_BASE_URL": server.base_url,
        "MCP_ROUTING_EVALUATOR_MODEL": "absent:1b",
    }
    done = run(tmp_path, "health", "--json", env=env)
    assert done.returncode == 6
    error = json.loads(done.stdout)["error"]
    assert error["details"]["status"] == "model-missing"
    assert "absent:1b" in done.stderr


def test_health_for_a_profile_from_the_user_file(tmp_path: Path, server: OpenAITestServer) -> None:
    (tmp_path / "config.yaml").write_text(
        "routing:\n  evaluator:\n    profiles:\n      lmstudio-local:\n"
        f"        baseUrl: {server.base_url}\n        model: qwen3:4b\n"
    )
    done = run(tmp_path, "health", "--profile", "lmstudio-local", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["responseFormat"] == "json-schema"


def test_auth_failure_is_exit_6_and_never_shows_the_key(tmp_path: Path) -> None:
    with OpenAITestServer(
        flavor="ollama", models=["ministral-3:3b-cloud"], api_key="the-right-one"
    ) as s:
        env = {"MCP_ROUTING_EVALUATOR_BASE_URL": s.base_url, "OLLAMA_API_KEY": SECRET}
        done = run(tmp_path, "health", "--profile", "ollama-cloud", "--json", env=env)
    assert done.returncode == 6
    assert json.loads(done.stdout)["error"]["details"]["status"] == "auth-error"
    assert SECRET not in done.stdout + done.stderr


def test_models_lists_ids_and_marks_the_configured_one(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    done = run(tmp_path, "models", env={"MCP_ROUTING_EVALUATOR_BASE_URL": server.base_url})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["* ministral-3:3b", "  qwen3:4b"]


def test_an_unreachable_server_is_exit_6(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "models",
        "--json",
        env={"MCP_ROUTING_EVALUATOR_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert done.returncode == 6
    assert json.loads(done.stdout)["error"]["details"]["status"] == "network-error"


def test_a_bad_profile_in_the_file_is_a_usage_error_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "routing:\n  evaluator:\n    profiles:\n      ollama-local:\n        baseUrl: http://127.0.0.1:11434/api\n"
    )
    done = run(tmp_path, "health")
    assert done.returncode == 2
    assert "config.yaml" in done.stderr and "baseUrl" in done.stderr


def test_smoke_cloud_is_skipped_without_a_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OLLAMA_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "tht.smoke_cloud"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0
    assert "skipped" in done.stdout


def test_smoke_cloud_against_a_local_stand_in_validates_and_checks_the_fallback(
    tmp_path: Path,
) -> None:
    answer = json.dumps(
        {
            "schemaVersion": 1,
            "decision": "single",
            "skills": [
                {
                    "id": "mcp-code-reviewer",
                    "role": "primary",
                    "relevance": 0.9,
                    "reasonCode": "spec-compliance",
                }
            ],
            "mcps": [],
            "confidence": 0.9,
            "ambiguityResolved": True,
        }
    )
    with OpenAITestServer(
        flavor="ollama", models=["ministral-3:3b-cloud"], api_key=SECRET, default_answer=answer
    ) as s:
        env = {**os.environ, "OLLAMA_API_KEY": SECRET, "MCP_ROUTING_EVALUATOR_BASE_URL": s.base_url}
        done = subprocess.run(
            [sys.executable, "-m", "tht.smoke_cloud"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=60,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert (summary["schema_valid"], summary["status"]) == (True, "completed")
    assert summary["fallback_check"] in ("timeout", "network-error")
    assert SECRET not in done.stdout and "Verifica il diff" not in done.stdout
