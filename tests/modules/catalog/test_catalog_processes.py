"""Catalog Sync Runs as real processes: one active run per database (a second concurrent
``tht catalog sync`` exits 4), and a run killed mid-way (SIGKILL) is recorded ``interrupted`` by
the next one, whose catalog verifies."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TABLES = 3000  # introspection takes long enough (a second or two) to act during a run


def _env(ws: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_WORKSPACE=str(ws), THT_HOME=str(ws.parent / "home"))
    return env


def _tht(ws: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tht", *args],
        env=_env(ws),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def _run(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tht", *args],
        env=_env(ws),
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


@pytest.fixture(scope="module")
def big_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("big") / "ws"
    assert _run(ws, "workspace", "init", str(ws)).returncode == 0
    (ws / "data").mkdir()
    conn = sqlite3.connect(ws / "data" / "big.db")
    columns = "name TEXT, note TEXT"
    conn.executescript(
        "BEGIN;"
        + "".join(
            f"CREATE TABLE t{n:04d} (id INTEGER PRIMARY KEY, t{max(n - 1, 0):04d}_id INTEGER, "
            f"{columns});"
            for n in range(TABLES)
        )
        + "COMMIT;"
    )
    conn.close()
    with (ws / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write('\ndatabase: {url: "sqlite:///data/big.db"}\n')
        # the schema index follows every sync: keep its embedding cheap here
        fh.write("evidence: {embedder: hashing}\n")
    return ws


def _wait_for_started(ws: Path, proc: subprocess.Popen[str]) -> None:
    """Until the run's ``catalog_sync_started`` is durable and acknowledged (its anchor
    written): the run is introspecting."""
    ledger = ws / "catalog" / "ledger.jsonl"
    anchor = ws / "catalog" / "ledger.head"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = ledger.read_text().splitlines() if ledger.exists() else []
        kinds = [json.loads(line)["type"] for line in lines]
        try:
            acknowledged = json.loads(anchor.read_text())["seq"]
        except (OSError, ValueError, KeyError):
            acknowledged = 0
        if kinds and kinds[-1] == "catalog_sync_started" and acknowledged == len(kinds):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError("the run never started")


def _fresh(ws: Path) -> None:
    """Forget earlier runs of the module's shared workspace (the database stays), the catalog's
    witness with them (else the deleted ledger is a rollback: kernel/ledger_witness.py)."""
    import shutil

    shutil.rmtree(ws / "catalog", ignore_errors=True)
    shutil.rmtree(ws / ".tht" / "cache", ignore_errors=True)
    (ws / ".tht" / "witness" / "catalog.json").unlink(missing_ok=True)


def test_a_second_concurrent_sync_gets_a_conflict(big_workspace: Path) -> None:
    _fresh(big_workspace)
    first = _tht(big_workspace, "catalog", "sync", "--json")
    _wait_for_started(big_workspace, first)
    second = _run(big_workspace, "catalog", "sync", "--json")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert second.returncode == 4, second.stderr
    assert json.loads(second.stdout)["error"]["exit_code"] == 4
    assert "another Catalog Sync Run is active" in second.stderr
    assert json.loads(out)["tables"] == TABLES
    runs = json.loads(_run(big_workspace, "catalog", "status", "--json").stdout)["runs"]
    assert [r["status"] for r in runs] == ["completed"]  # the refused one left nothing


def test_a_killed_run_is_recorded_interrupted_and_the_next_one_succeeds(
    big_workspace: Path,
) -> None:
    _fresh(big_workspace)
    victim = _tht(big_workspace, "catalog", "sync", "--json")
    _wait_for_started(big_workspace, victim)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    status = json.loads(_run(big_workspace, "catalog", "status", "--json").stdout)
    assert status["active_run"] is not None  # what the crash left
    done = _run(big_workspace, "catalog", "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert "interrupted" in done.stderr
    runs = json.loads(_run(big_workspace, "catalog", "status", "--json").stdout)["runs"]
    assert [(r["status"], r["failure"]) for r in runs] == [
        ("failed", "interrupted"),
        ("completed", None),
    ]
    verified = _run(big_workspace, "catalog", "verify", "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"]
