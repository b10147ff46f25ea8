"""Shared fixtures of the analytics tests: the fixture log, a fresh store, a fixed clock."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tht.analytics.store import AnalyticsStore, open_store

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "analytics"
HOOK_LOG = FIXTURES / "hook-routing-evaluator.jsonl"
NOW = "2026-08-01T00:00:00.000Z"

# The private strings seeded into the fixture's forbidden fields (make_fixtures.py).
SEEDED_SECRETS = (
    "SEEDED PROMPT",
    "refactor the billing module",
    "acme-secret-project",
    "sk-seeded-0123456789abcdef",
    "/home/alice",
    "Traceback",
    "upstream said",
)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("THT_ANALYTICS_DB", raising=False)
    monkeypatch.delenv("THT_HOOK_LOG", raising=False)


@pytest.fixture
def hook_log(tmp_path: Path) -> Path:
    """A private copy of the fixture log (tests append to, rotate and truncate it)."""
    target = tmp_path / "logs" / "route-hook.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(HOOK_LOG, target)
    return target


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AnalyticsStore]:
    with open_store(tmp_path / "db" / "analytics.sqlite", now=NOW) as opened:
        yield opened


def counts(store: AnalyticsStore) -> dict[str, int]:
    return {
        table: store.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for table in ("source_files", "runtime_events", "routing_evaluations")
    }


def every_text_value(store: AnalyticsStore) -> list[str]:
    """Every value of every column of every table, as text (for privacy checks)."""
    conn = store.conn
    values: list[str] = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        for column in columns:
            for (value,) in conn.execute(f'SELECT "{column}" FROM "{table}"'):
                if value is not None:
                    values.append(value if isinstance(value, str) else repr(value))
    return values
