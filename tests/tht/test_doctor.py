"""``tht doctor``: every check's verdict, detail and fix, and its exit codes (golden JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "cli" / "doctor"


@pytest.fixture
def no_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    return home


def test_doctor_json_on_a_fixed_workspace_matches_its_golden_file(
    workspace: Path, no_claude: Path, tht: Callable[..., Result], update_golden: bool
) -> None:
    assert tht("session", "new", "Quante ablazioni nel 2023?").code == 0
    done = tht("doctor", "--json")
    record = f"exit {done.code}\n{done.stdout}"
    path = GOLDEN / "doctor.txt"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(record)
    assert record == path.read_text(), "doctor --json changed (see golden/cli/doctor/)"
    body = done.json()
    assert body["ok"] is True
    for check in body["checks"]:
        assert set(check) == {"name", "verdict", "detail", "fix"}
        assert check["verdict"] in ("ok", "warn", "fail")


def test_doctor_names_the_session_that_does_not_verify_and_exits_7(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    sid = tht("session", "new", "Quante ablazioni nel 2023?", "--json").json()["session"]
    ledger = workspace / "sessions" / sid / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b"ablazioni", b"ablazionX"))
    done = tht("doctor", "--json")
    assert done.code == 7
    sessions = next(c for c in done.json()["checks"] if c["name"] == "sessions")
    assert sessions["verdict"] == "fail" and sid in sessions["detail"]
    assert done.json()["ok"] is False


def test_doctor_exits_2_on_an_invalid_workspace_yaml(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    (workspace / "workspace.yaml").write_text("name: x\nno_such_field: 1\n")
    done = tht("doctor", "--json")
    assert done.code == 2
    first = done.json()["checks"][0]
    assert first["name"] == "workspace" and first["verdict"] == "fail"


def _install_hooks(workspace: Path) -> None:
    """tht's two hooks in the workspace folder's Claude Code settings, as install writes them."""
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    hooks = {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"command": "tht-route-hook"}]}],
            "PreToolUse": [{"hooks": [{"command": "tht-guard-hook"}]}],
        }
    }
    settings.write_text(json.dumps(hooks))


def test_doctor_finds_the_hooks_in_claude_settings(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    _install_hooks(workspace)
    done = tht("doctor", "--json")
    check = next(c for c in done.json()["checks"] if c["name"] == "hooks")
    # the workspace folder (or the project folder the command runs in, when that is the same)
    assert check["verdict"] == "ok" and (
        "workspace" in check["detail"] or "project" in check["detail"]
    )
    assert not (no_claude / "settings.json").exists()  # read-only: nothing written


def test_doctor_human_output_shows_every_check(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    done = tht("doctor")
    assert done.code == 0
    for name in ("workspace", "workflow", "store", "vector index", "database", "hooks"):
        assert name in done.stdout


def _checks(done: Result) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in done.json()["checks"]}


def _bind(workspace: Path, url: str = "sqlite:///data/h.db") -> Path:
    import sqlite3

    path = workspace / "data" / "h.db"
    path.parent.mkdir(exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    db.close()
    with (workspace / "workspace.yaml").open("a") as settings:
        settings.write(f'\ndatabase: {{url: "{url}"}}\n')
    return path


def test_doctor_checks_the_database_and_the_catalog_freshness(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    import sqlite3

    checks = _checks(tht("doctor", "--json"))
    assert (
        checks["database"]["verdict"] == "warn"
        and "no database bound" in checks["database"]["detail"]
    )
    path = _bind(workspace)
    checks = _checks(tht("doctor", "--json"))
    assert checks["database"]["verdict"] == "ok"
    assert checks["catalog"]["verdict"] == "warn" and checks["catalog"]["fix"] == "tht catalog sync"
    assert tht("catalog", "sync").code == 0
    checks = _checks(tht("doctor", "--json"))
    assert checks["catalog"] == {
        "name": "catalog",
        "verdict": "ok",
        "detail": "1 table(s), freshness fresh",
        "fix": "",
    }
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE t ADD COLUMN x TEXT")
    db.close()
    checks = _checks(tht("doctor", "--json"))
    assert checks["catalog"]["verdict"] == "warn" and "stale" in checks["catalog"]["detail"]
    path.unlink()
    done = tht("doctor", "--json")
    assert _checks(done)["database"]["verdict"] == "fail" and done.code == 0


def test_doctor_fails_a_bad_binding_as_configuration_and_a_damaged_catalog_as_integrity(
    workspace: Path, no_claude: Path, tht: Callable[..., Result]
) -> None:
    _bind(workspace)
    assert tht("catalog", "sync").code == 0
    ledger = workspace / "catalog" / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b'"tables":1', b'"tables":2', 1))
    done = tht("doctor", "--json")
    assert done.code == 7 and _checks(done)["catalog"]["verdict"] == "fail"
    text = (workspace / "workspace.yaml").read_text()
    (workspace / "workspace.yaml").write_text(
        text.replace("sqlite:///data/h.db", "sqlite:///../x.db")
    )
    done = tht("doctor", "--json")
    assert done.code == 2 and _checks(done)["database"]["verdict"] == "fail"


def test_with_the_hooks_installed_doctor_checks_the_routing_catalog_they_read(
    workspace: Path,
    no_claude: Path,
    tht: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The route hook answers nothing without a usable catalog, silently to the user: doctor
    says so (a warning: the exit code is unchanged)."""
    _install_hooks(workspace)
    monkeypatch.setenv("THT_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.delenv("THT_ROUTING_CATALOG", raising=False)
    done = tht("doctor", "--json")
    assert done.code == 0
    check = _checks(done)["routing catalog"]
    assert check["verdict"] == "warn" and "no routing catalog" in check["detail"]
    assert "tht route catalog build" in check["fix"]

    compiled = Path(__file__).resolve().parents[2] / "golden" / "routing" / "compiled"
    pack = tmp_path / "ts.pack"
    pack.write_bytes((compiled / "tesisquare.pack").read_bytes())
    monkeypatch.setenv("THT_ROUTING_CATALOG", str(pack))
    check = _checks(tht("doctor", "--json"))["routing catalog"]
    assert check["verdict"] == "ok" and "verified" in check["detail"]

    raw = bytearray(pack.read_bytes())
    at = raw.index(b"database", raw.index(b"\n") + 1)
    raw[at : at + 8] = b"databasx"
    pack.write_bytes(bytes(raw))
    check = _checks(tht("doctor", "--json"))["routing catalog"]
    assert check["verdict"] == "warn" and "does not match its fingerprint" in check["detail"]
