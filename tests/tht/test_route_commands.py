"""``tht route``: catalog build, explain, batch, eval, with their exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TS = REPO / "golden" / "routing" / "catalogs" / "tesisquare"


def _tht(*args: str, stdin: str = "", home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_HOME=str(home), THT_CONFIG=str(home / "none.yaml"))
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
        "--overrides",
        str(TS / "routing-semantic-overrides.json"),
        "--out",
        str(out),
        "--json",
        home=home,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["skills"] == 8 and body["mcps"] == 8 and body["fingerprint"].startswith("sha256:")
    return out


def test_build_errors_exit_2_and_write_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "ov.json"
    bad.write_text(json.dumps({"overrides": {"ghost": {}}}))
    out = tmp_path / "x.pack"
    done = _tht(
        "route",
        "catalog",
        "build",
        "--skills",
        str(TS / "skills"),
        "--overrides",
        str(bad),
        "--out",
        str(out),
        home=tmp_path,
    )
    assert done.returncode == 2 and "overrides.ghost" in done.stderr and not out.exists()


def test_explain_json_has_every_diagnostic(catalog: Path, tmp_path: Path) -> None:
    done = _tht(
        "route",
        "explain",
        "fammi la query sql sulla tabella ordini",
        "--catalog",
        str(catalog),
        "--json",
        home=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert {"routing", "gate", "evaluatorStatus", "resolution", "additionalContext"} <= set(body)
    assert body["resolution"]["hints"][0]["id"] == "mcp-database-expert"
    human = _tht("route", "explain", "query sql", "--catalog", str(catalog), home=tmp_path)
    assert human.returncode == 0 and "hints:" in human.stdout


def test_batch_jsonl_in_and_out(catalog: Path, tmp_path: Path) -> None:
    lines = [{"prompt": "query sql sulla tabella"}, {"prompt": "ciao", "cwd": "/tmp"}]
    done = _tht(
        "route",
        "batch",
        "--catalog",
        str(catalog),
        stdin="\n".join(json.dumps(x) for x in lines) + "\n",
        home=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = [json.loads(x) for x in done.stdout.splitlines()]
    assert out[0] == {
        "hints": [{"id": "mcp-database-expert", "kind": "skill", "role": "primary"}],
        "source": "deterministic",
        "evaluator_status": "disabled",
    }
    assert out[1]["hints"] == []
    bad = _tht("route", "batch", "--catalog", str(catalog), stdin="{nope\n", home=tmp_path)
    assert bad.returncode == 2 and "line 1" in bad.stderr and bad.stdout == ""


def test_eval_reports_metrics_per_language(catalog: Path, tmp_path: Path) -> None:
    cases = REPO / "golden" / "routing" / "evals" / "tesisquare" / "real-evals.jsonl"
    done = _tht(
        "route", "eval", "--catalog", str(catalog), "--cases", str(cases), "--json", home=tmp_path
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["overall"]["cases"] == 23 and "it" in body["by_language"]
    assert body["overall"]["max_hints"] <= 2


def test_missing_catalog_is_a_usage_error(tmp_path: Path) -> None:
    done = _tht("route", "explain", "x", home=tmp_path)
    assert done.returncode == 2 and "no routing catalog" in done.stderr


def test_a_catalog_edited_after_it_was_built_is_refused_by_every_command(
    catalog: Path, tmp_path: Path
) -> None:
    """The hook trusts the header (its budget); the commands recompute the fingerprint."""
    edited = tmp_path / "edited.pack"
    raw = bytearray(catalog.read_bytes())
    body = raw.index(b"\n") + 1
    at = raw.index(b"database", body)  # a word of a card, same length after the edit
    raw[at : at + 8] = b"databasx"
    edited.write_bytes(bytes(raw))
    cases = REPO / "golden" / "routing" / "evals" / "tesisquare" / "real-evals.jsonl"
    for args, stdin in (
        (("route", "explain", "query sql", "--catalog", str(edited)), ""),
        (("route", "batch", "--catalog", str(edited)), '{"prompt": "query sql"}\n'),
        (("route", "eval", "--catalog", str(edited), "--cases", str(cases)), ""),
    ):
        done = _tht(*args, stdin=stdin, home=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "does not match its fingerprint" in done.stderr and done.stdout == ""
    untouched = _tht("route", "explain", "query sql", "--catalog", str(catalog), home=tmp_path)
    assert untouched.returncode == 0, untouched.stderr


@pytest.mark.parametrize("reserved", ["none", "light", "full", "agents"])
def test_a_skill_named_like_a_mode_hotword_is_a_build_error(tmp_path: Path, reserved: str) -> None:
    skill = tmp_path / "skills" / reserved
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {reserved}\ndescription: does things\n---\nbody\n", encoding="utf-8"
    )
    out = tmp_path / "x.pack"
    skills = str(tmp_path / "skills")
    done = _tht("route", "catalog", "build", "--skills", skills, "--out", str(out), home=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"!{reserved} sets a mode" in done.stderr and not out.exists()
