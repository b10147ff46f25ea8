"""Run the ``tht`` CLI in-process (same code path as the console script) for fast CLI tests."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tht.cli import main


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


class _Out(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8")


def run_tht(*args: str, stdin: bytes = b"") -> Result:
    out, err = _Out(), _Out()
    old = sys.stdout, sys.stderr, sys.stdin
    sys.stdout, sys.stderr = out, err
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        main(list(args))
        code = 0
    except SystemExit as done:
        code = int(done.code or 0)
    finally:
        sys.stdout, sys.stderr, sys.stdin = old
    return Result(code, out.text(), err.text())


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    monkeypatch.setenv("THT_SEED", "7")
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    for var in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(var, raising=False)
    assert run_tht("workspace", "init", str(root)).code == 0
    return root


@pytest.fixture
def tht() -> Callable[..., Result]:
    return run_tht
