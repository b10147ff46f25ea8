"""The semantic rescue end to end: ``tht route catalog build --semantic`` writes the skill vectors,
``tht route eval|explain --semantic`` and the real ``tht-route-hook`` use them; whatever is
missing or broken, the hook still exits 0 with the deterministic answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TS = REPO / "golden" / "routing" / "catalogs" / "tesisquare"
WEAK = "Leggi il ticket Mantis 48213 e dimmi quali commit lo hanno chiuso"
TARGET = "mcp-git-mantis-workflow"


def _env(home: Path, config: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_HOME=str(home), THT_CONFIG=str(home / "config.yaml"))
    if config is not None:
        (home / "config.yaml").write_text(config, "utf-8")
    return env


def _tht(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def _hook(
    catalog: Path, env: dict[str, str], prompt: str = WEAK
) -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": "/"})
    return subprocess.run(
        [sys.executable, "-m", "tht.hooks.route_hook", "--catalog", str(catalog)],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def _hinted(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    if not done.stdout:
        return ""
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tesisquare catalog as a user builds it (no overrides), with --semantic."""
    home = tmp_path_factory.mktemp("home")
    out = home / "ts.pack"
    done = _tht(
        "route",
        "catalog",
        "build",
        "--skills",
        str(TS / "skills"),
        "--mcp",
        str(TS / "mcp-servers.json"),
        "--out",
        str(out),
        "--semantic",
        "--json",
        env=_env(home),
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["semanticVectors"] == f"{out}.semantic.json"
    vectors = json.loads(Path(body["semanticVectors"]).read_text("utf-8"))
    assert vectors["catalogFingerprint"] == body["fingerprint"]
    assert sorted(vectors["vectors"]) == sorted(p.name for p in (TS / "skills").iterdir())
    return out


def test_eval_and_explain_with_the_rescue(built: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    cases = tmp_path / "cases.jsonl"
    case = {"id": "w", "prompt": WEAK, "expected": {"acceptablePrimary": [TARGET]}}
    cases.write_text(json.dumps(case) + "\n", "utf-8")
    plain = _tht("route", "eval", "--catalog", str(built), "--cases", str(cases), "--json", env=env)
    rescued = _tht(
        "route", "eval", "--catalog", str(built), "--cases", str(cases), "--semantic", "--json",
        env=env,
    )  # fmt: skip
    assert json.loads(plain.stdout)["overall"]["top1"] == 0.0
    assert json.loads(rescued.stdout)["overall"]["top1"] == 1.0
    explained = _tht(
        "route", "explain", WEAK, "--catalog", str(built), "--semantic", "--json", env=env
    )
    body = json.loads(explained.stdout)["resolution"]
    assert [h["id"] for h in body["hints"]] == [TARGET]
    assert body["source"] == "semantic" and "semantic-rescue" in body["reasonCodes"]


def test_a_catalog_without_vectors_is_a_usage_error_for_commands(tmp_path: Path) -> None:
    env = _env(tmp_path)
    out = tmp_path / "plain.pack"
    built = _tht(
        "route", "catalog", "build", "--skills", str(TS / "skills"), "--out", str(out), env=env
    )
    assert built.returncode == 0, built.stderr
    assert not Path(f"{out}.semantic.json").exists()
    done = _tht("route", "explain", WEAK, "--catalog", str(out), "--semantic", env=env)
    assert done.returncode == 2
    assert "semantic.json" in done.stderr and "--semantic" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_semantic_section_is_named(built: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, "routing:\n  semantic:\n    enabled: true\n    minCosine: 3\n")
    done = _tht("route", "explain", WEAK, "--catalog", str(built), "--semantic", env=env)
    assert done.returncode == 2
    assert "routing.semantic.minCosine" in done.stderr and "Traceback" not in done.stderr


def test_the_hook_rescues_only_when_the_user_config_enables_it(built: Path, tmp_path: Path) -> None:
    off = tmp_path / "off"
    off.mkdir()
    assert _hinted(_hook(built, _env(off))) == ""
    on = tmp_path / "on"
    on.mkdir()
    env = _env(on, "routing:\n  semantic:\n    enabled: true\n")
    assert TARGET in _hinted(_hook(built, env))
    assert _hinted(_hook(built, env, "spiegami la differenza tra una lista e una tupla")) == ""
    (log,) = list(on.rglob("*.jsonl"))
    rescued, off_topic = (json.loads(line) for line in log.read_text("utf-8").splitlines())
    assert rescued["final_top"] == TARGET and off_topic["final_top"] is None
    assert list(rescued) == list(off_topic)  # the log's fields are a contract: the rescue adds none


def test_the_hook_without_usable_vectors_or_endpoint_stays_deterministic(
    built: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.pack"
    copy.write_bytes(built.read_bytes())  # no vectors beside it
    env = _env(tmp_path, "routing:\n  semantic:\n    enabled: true\n")
    done = _hook(copy, env)
    assert _hinted(done) == ""
    assert "no semantic rescue" in done.stderr and "Traceback" not in done.stderr
    foreign = tmp_path / "foreign.pack"
    foreign.write_bytes(built.read_bytes())
    Path(f"{foreign}.semantic.json").write_text(
        Path(f"{built}.semantic.json").read_text("utf-8").replace("sha256:", "sha256:0"), "utf-8"
    )
    assert _hinted(_hook(foreign, env)) == ""
    down = _env(
        tmp_path,
        "routing:\n  semantic:\n    enabled: true\n    endpoint: http://127.0.0.1:9/v1\n"
        "    timeoutMs: 200\n",
    )
    done = _hook(built, down)
    assert _hinted(done) == "" and "embeddings endpoint" in done.stderr
    bad = _env(tmp_path, "routing:\n  semantic:\n    enabled: true\n    minCosine: nope\n")
    done = _hook(built, bad)
    assert _hinted(done) == "" and "semantic rescue off" in done.stderr
