"""``tht analytics …`` end to end: real subprocesses, JSON output, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import HOOK_LOG


def _tht(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    environ.update(THT_HOME=str(home), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _home(root: Path) -> Path:
    """A data folder whose hook log (the default scan source) is the fixture."""
    home = root / "home"
    (home / "logs").mkdir(parents=True)
    shutil.copyfile(HOOK_LOG, home / "logs" / "route-hook.jsonl")
    return home


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return _home(tmp_path)


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder already scanned once, shared by the read-only tests of this module."""
    home = _home(tmp_path_factory.mktemp("scanned"))
    _json(_tht(home, "analytics", "scan", "--json"))
    return home


def test_scan_defaults_to_the_hook_log_and_the_data_folder(home: Path) -> None:
    first = _json(_tht(home, "analytics", "scan", "--json"))
    assert first["ok"] is True
    assert first["imported"] == 125 and first["duplicates"] == 1
    assert first["sources"][0]["action"] == "new"
    assert first["warnings"]["forbidden_fields"] > 0
    assert (home / "analytics.sqlite").is_file() and (home / "analytics.key").is_file()
    again = _json(_tht(home, "analytics", "scan", "--json"))
    assert (again["imported"], again["sources"][0]["action"]) == (0, "unchanged")


def test_routing_evaluator_takes_flags_and_the_spec_input_object(
    scanned: Path, tmp_path: Path
) -> None:
    home = scanned
    by_flags = _json(
        _tht(
            home,
            "analytics",
            "routing-evaluator",
            "--from",
            "2026-07-10",
            "--to",
            "2026-07-17",
            "--location",
            "local",
            "--location",
            "lan",
            "--group-by",
            "provider_profile,day",
            "--json",
        )
    )
    assert set(by_flags) == {"ok", "totals", "rates", "latency_ms", "groups"}
    assert {g["provider_profile"] for g in by_flags["groups"]} == {
        "ollama-local",
        "lmstudio-local",
        "lmstudio-lan",
    }
    spec_input = tmp_path / "query.json"
    spec_input.write_text(
        json.dumps(
            {
                "date_from": "2026-07-10",
                "date_to": "2026-07-17",
                "provider_locations": ["local", "lan"],
                "group_by": ["provider_profile", "day"],
            }
        )
    )
    by_file = _json(
        _tht(home, "analytics", "routing-evaluator", "--input", str(spec_input), "--json")
    )
    assert by_file == by_flags
    human = _tht(home, "analytics", "routing-evaluator", "--group-by", "provider_location")
    assert human.returncode == 0 and "cloud" in human.stdout and "(all)" in human.stdout


def test_summary_has_the_evaluator_block(scanned: Path) -> None:
    summary = _json(_tht(scanned, "analytics", "summary", "--json"))
    assert summary["routing_evaluator"] == {
        "decisions": 125,
        "invocations": 46,
        "completed": 30,
        "fallbacks": 16,
    }
    assert summary["sources"] == {"hook_log": 1}


def test_db_option_and_environment_choose_the_database(home: Path, tmp_path: Path) -> None:
    by_env = tmp_path / "env" / "a.sqlite"
    _json(_tht(home, "analytics", "scan", "--json", env={"THT_ANALYTICS_DB": str(by_env)}))
    assert by_env.is_file() and (by_env.parent / "a.key").is_file()
    by_option = tmp_path / "opt" / "b.sqlite"
    _json(_tht(home, "analytics", "scan", "--db", str(by_option), "--json"))
    assert by_option.is_file()
    assert not (home / "analytics.sqlite").exists()


def test_report_and_prune(home: Path, tmp_path: Path) -> None:
    _json(_tht(home, "analytics", "scan", "--json"))
    out = tmp_path / "r.html"
    written = _json(_tht(home, "analytics", "report", "--html", str(out), "--json"))
    assert written["bytes"] == out.stat().st_size > 1000
    pruned = _json(_tht(home, "analytics", "prune", "--older-than", "0", "--yes", "--json"))
    assert pruned["deleted"]["routing_evaluations"] == 125
    summary = _json(_tht(home, "analytics", "summary", "--json"))
    assert summary["events"]["total"] == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("routing-evaluator", "--group-by", "weekday"), 2),
        (("routing-evaluator", "--status", "fine"), 2),
        (("summary", "--from", "last week"), 2),
        (("scan", "--log", "/nonexistent/log.jsonl"), 3),
        (("scan", "--sessions", "/nonexistent/workspace"), 3),
        (("summary", "--db", "/nonexistent/db.sqlite"), 3),
    ],
)
def test_bad_input_is_one_line_and_its_exit_code(
    scanned: Path, args: tuple[str, ...], code: int
) -> None:
    done = _tht(scanned, "analytics", *args, "--json")
    assert done.returncode == code, done.stderr
    assert json.loads(done.stdout)["error"]["exit_code"] == code
    assert "Traceback" not in done.stderr


def test_scan_sessions_then_sessions_query(home: Path, tmp_path: Path) -> None:
    from .sessions_driver import drive_three_sessions

    workspace = drive_three_sessions(tmp_path / "ws").app.workspace.root
    scanned = _json(_tht(home, "analytics", "scan", "--sessions", str(workspace), "--json"))
    assert [s["kind"] for s in scanned["sources"]] == ["session_ledger"] * 3
    stats = _json(_tht(home, "analytics", "sessions", "--json"))
    assert stats["sessions"] == 3
    f1 = next(s for s in stats["stages"] if s["stage"] == "disambiguation")
    assert f1["review_wait_ms"]["answered"] == 4
    human = _tht(home, "analytics", "sessions")
    assert human.returncode == 0 and "disambiguation" in human.stdout
