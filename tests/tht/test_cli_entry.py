"""The ``tht`` entry point: version, usage errors and their exit codes."""

from __future__ import annotations

import json
import subprocess
import sys


def _tht(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tht", *args], capture_output=True, text=True, check=False
    )


def test_version_prints_the_package_version() -> None:
    from tht import __version__

    done = _tht("--version")
    assert done.returncode == 0
    assert done.stdout == f"tht {__version__}\n"


def test_unknown_command_is_a_usage_error_with_exit_2() -> None:
    done = _tht("no-such-command")
    assert done.returncode == 2
    assert "no-such-command" in done.stderr
    assert done.stdout == ""


def test_usage_error_under_json_prints_an_error_object() -> None:
    done = _tht("no-such-command", "--json")
    assert done.returncode == 2
    body = json.loads(done.stdout)
    assert body["error"]["code"] == "usage"
    assert body["error"]["exit_code"] == 2
