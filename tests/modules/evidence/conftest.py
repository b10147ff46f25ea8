"""Fixtures for the Evidence module tests: a fresh workspace holding the fixture sources."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernel.workspace import Workspace, init_workspace
from modules.evidence import EvidencePaths

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "evidence"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws, _ = init_workspace(tmp_path / "ws")
    for source in sorted((FIXTURES / "sources").iterdir()):
        shutil.copy(source, ws.sources_dir / source.name)
    return ws


@pytest.fixture
def paths(workspace: Workspace) -> EvidencePaths:
    return EvidencePaths.of(workspace)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``evidence/`` (bytes), to prove that nothing changed."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "evidence").rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def engines(workspace: Workspace):  # type: ignore[no-untyped-def]
    from tests.modules.evidence.conftest_index import engines_for

    yield from engines_for(workspace)


@pytest.fixture
def published(paths: EvidencePaths, engines):  # type: ignore[no-untyped-def]
    """The fixture sources prepared and published once, with the default settings."""
    from modules.evidence import prepare
    from modules.evidence.publish import publish

    prepare(paths, max_chunk_chars=4000)
    publish(engines.caps())
    return engines
