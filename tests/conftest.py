"""Test-suite wide configuration: Hypothesis profiles and the golden-file switch."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer

# dev: random exploration (a failure is saved in .hypothesis/ and replayed first next time; turn
# it into a regression test). ci (`make test`): more examples, derandomized, so that CI judges the
# change and not the luck of the draw; explore with `pytest --hypothesis-profile=explore`.
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "explore",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files from the current behaviour instead of comparing.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server on 127.0.0.1 (tests/support/postgres.py), started on first
    use, shared by the whole run, stopped and removed at the end. Never skips: a missing
    server or a failed start fails the test that asked, with the reason."""
    from tests.support.postgres import PostgresUnavailable, running_server

    try:
        with running_server() as server:
            yield server
    except PostgresUnavailable as err:
        pytest.fail(str(err), pytrace=False)
