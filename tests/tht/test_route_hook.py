"""``tht-route-hook`` as a real subprocess: host protocol, always exit 0, bounded output, log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.modules.routing.conftest import build_tesisquare

HOOK = [sys.executable, "-m", "tht.hooks.route_hook"]
SECRETS = ("sk-live-SEEDED123", "hunter2-SEEDED", "eyJhbGciOiJIUzI1NiJ9.SEEDED")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hook") / "catalog.pack"
    path.write_bytes(build_tesisquare())
    return path


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_HOME=str(home), THT_CONFIG=str(home / "config.yaml"), **extra)
    return env


def _run(stdin: bytes, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*HOOK, *args], input=stdin, capture_output=True, env=env, check=False, timeout=30
    )


def _payload(prompt: object, **extra: object) -> bytes:
    body = {
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    body.update(extra)
    return json.dumps(body).encode()


def _check_output(out: bytes) -> None:
    if not out:
        return
    assert len(out.decode()) <= 10_000 + 200
    body = json.loads(out)
    assert set(body) == {"hookSpecificOutput"}
    spec = body["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    context = spec["additionalContext"]
    assert 0 < len(context) <= 10_000
    assert context.count("`") <= 2 * 2 + 2  # at most two hints (plus an agent line)


def test_claude_code_payload_gets_hints(catalog: Path, tmp_path: Path) -> None:
    done = _run(
        _payload("Leggi il ticket Mantis 48213 e dimmi quali commit lo hanno chiuso"),
        _env(tmp_path),
        "--catalog",
        str(catalog),
    )
    assert done.returncode == 0
    _check_output(done.stdout)
    assert (
        "mcp-git-mantis-workflow"
        in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    )


def test_codex_payload_and_env_catalog(catalog: Path, tmp_path: Path) -> None:
    done = _run(
        _payload("Run a SQL query on the orders table", turn_id="t1", model="gpt-5"),
        _env(tmp_path, THT_ROUTING_CATALOG=str(catalog)),
    )
    assert done.returncode == 0
    assert "mcp-database-expert" in done.stdout.decode()


def test_catalog_from_user_config(catalog: Path, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(f"routing:\n  catalog: {catalog}\n", encoding="utf-8")
    done = _run(_payload("Run a SQL query on the orders table"), _env(tmp_path))
    assert done.returncode == 0 and "mcp-database-expert" in done.stdout.decode()
    assert (tmp_path / "cache" / "routing-config.json").is_file()


def test_weak_prompt_prints_nothing_but_logs_one_event(catalog: Path, tmp_path: Path) -> None:
    done = _run(_payload("grazie, perfetto"), _env(tmp_path), "--catalog", str(catalog))
    assert done.returncode == 0 and done.stdout == b""
    lines = (tmp_path / "logs" / "route-hook.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["decision"] == "none"


def test_missing_and_corrupt_catalog_still_exit_0(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pack"
    bad.write_bytes(b"{garbage\n")
    for path in (str(tmp_path / "absent.pack"), str(bad)):
        done = _run(_payload("query sql"), _env(tmp_path), "--catalog", path)
        assert done.returncode == 0 and done.stdout == b""
    events = [
        json.loads(x) for x in (tmp_path / "logs" / "route-hook.jsonl").read_text().split("\n") if x
    ]
    assert [e["fallback_reason"] for e in events] == ["catalog-unavailable"] * 2


def test_log_never_holds_prompt_paths_or_secrets(catalog: Path, tmp_path: Path) -> None:
    prompt = (
        f"Collegati al DB con password={SECRETS[1]} api_key={SECRETS[0]} "
        f"Bearer {SECRETS[2]} e fai la query sulla tabella /home/mario/segreti.txt"
    )
    done = _run(_payload(prompt), _env(tmp_path), "--catalog", str(catalog))
    assert done.returncode == 0
    log = (tmp_path / "logs" / "route-hook.jsonl").read_text()
    for needle in (*SECRETS, "password", "mario", "segreti", "tabella", str(catalog), "/tmp"):
        assert needle not in log
    assert json.loads(log)["final_top"] == "mcp-database-expert"


def test_unwritable_log_does_not_affect_the_hook(catalog: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    env = _env(tmp_path, THT_HOOK_LOG=str(blocker / "sub" / "log.jsonl"))
    done = _run(_payload("Run a SQL query on the orders table"), env, "--catalog", str(catalog))
    assert done.returncode == 0 and "mcp-database-expert" in done.stdout.decode()


_stdin = st.one_of(
    st.just(b""),
    st.binary(max_size=300),
    st.text(max_size=200).map(str.encode),
    st.lists(st.integers(), max_size=5).map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=4).map(
        lambda v: json.dumps(v).encode()
    ),
    st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=400),
        st.binary(max_size=50).map(lambda b: b.decode("latin-1")),
        st.just("query sql " * 5000),
    ).map(_payload),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stdin=_stdin, corrupt=st.booleans())
def test_fuzzed_stdin_always_exits_0_with_valid_output(
    stdin: bytes, corrupt: bool, catalog: Path, tmp_path: Path
) -> None:
    path = str(tmp_path / "missing.pack") if corrupt else str(catalog)
    done = _run(stdin, _env(tmp_path), "--catalog", path)
    assert done.returncode == 0
    _check_output(done.stdout)


@pytest.mark.parametrize("flag", ["--help", "-h", "--version"])
def test_help_and_version_print_and_exit_0_without_reading_stdin(tmp_path: Path, flag: str) -> None:
    from tht import __version__

    done = subprocess.run(
        [str(Path(sys.executable).with_name("tht-route-hook")), flag],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(tmp_path),
        timeout=30,
        check=False,
    )
    assert done.returncode == 0
    out = done.stdout.decode()
    if flag == "--version":
        assert out == f"tht-route-hook {__version__}\n"
    else:
        assert out.startswith("usage: tht-route-hook") and "--catalog FILE" in out
