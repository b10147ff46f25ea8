"""A PostgreSQL store whose server is down, restarted, or refuses the login: exit 6, nothing
written, and never the URL or the password in what tht says.

These tests stop their server, so they run on a DEDICATED one (started here, destroyed at the
end whatever happens), never on the session's shared ``postgres_server``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kernel.clock import FixedClock
from kernel.errors import ThtError, UnavailableError, UsageError
from kernel.store.postgres import PostgresStore, connect_store, init_schema, listen
from tests.support.postgres import PostgresServer, PostgresUnavailable, running_server
from tests.support.store_drafts import SESSION
from tests.support.store_drafts import created as _created
from tests.support.store_drafts import receipt as _receipt

WORKSPACE = "ws-unavailable"


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    try:
        with running_server() as server:
            yield server
    except PostgresUnavailable as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def own_dsn(own_server: PostgresServer) -> str:
    dsn = own_server.dsn(own_server.create_database("tht_store_unavailable"))
    init_schema(dsn)
    return dsn


@pytest.fixture
def running(own_server: PostgresServer) -> Iterator[PostgresServer]:
    """The dedicated server, running again after the test whatever it did."""
    yield own_server
    if not own_server.running:
        own_server.start()


def _quiet(err: ThtError, server: PostgresServer, dsn: str) -> None:
    """One clear line, no secret, and not even the driver's exception kept behind it."""
    assert dsn not in err.message and server.password not in err.message
    assert "postgresql://" not in err.message and "\n" not in err.message
    assert err.__cause__ is None and err.__context__ is None


def test_a_server_that_goes_down_is_exit_6_and_comes_back(
    running: PostgresServer, own_dsn: str
) -> None:
    store = connect_store(own_dsn, workspace=WORKSPACE)
    store.create_session(SESSION, b"workflow\n")
    ledger = store.ledger(SESSION)
    ledger.append([_created()], expected_last_seq=0, clock=FixedClock())
    before = ledger.read().events
    running.stop()
    calls = {
        "append": lambda: ledger.append([_receipt("x")], expected_last_seq=1, clock=FixedClock()),
        "append (slow path)": lambda: (
            ledger.close(),
            ledger.append([_receipt("y")], expected_last_seq=1, clock=FixedClock()),
        ),
        "read": ledger.read,
        "verify": ledger.verify,
        "sessions": store.session_ids,
        "object": lambda: store.put_object(SESSION, b"data"),
        "connect": lambda: connect_store(own_dsn, workspace=WORKSPACE),
        "listen": lambda: listen(own_dsn, workspace=WORKSPACE).start(),
    }
    for name, call in calls.items():
        with pytest.raises(UnavailableError) as caught:
            call()
        assert caught.value.exit_code == 6, name
        assert "PostgreSQL store" in caught.value.message, name
        _quiet(caught.value, running, own_dsn)
    store.write_cache(SESSION, b"a cache is an optimisation: never an error")
    running.start()
    assert ledger.read().events == before  # nothing was written while it was down
    assert ledger.verify().ok
    done = ledger.append([_receipt("z")], expected_last_seq=1, clock=FixedClock())
    assert done.events[0].seq == 2 and store.object_ids(SESSION) == []
    store.close()


def test_a_refused_login_never_shows_the_password(running: PostgresServer) -> None:
    secret = "not-the-password-" + running.password[:6]
    dsn = running.dsn("tht_store_unavailable", user="postgres", password=secret)
    dsn = dsn.replace(secret, secret.replace("-", "%2D"))  # URL-encoded, decoded by libpq
    with pytest.raises(UnavailableError) as caught:
        connect_store(dsn, workspace=WORKSPACE)
    assert "authentication failed" in caught.value.message
    assert secret not in caught.value.message and "%2D" not in caught.value.message
    _quiet(caught.value, running, dsn)


def test_a_malformed_url_is_a_usage_error_that_does_not_repeat_it(
    running: PostgresServer,
) -> None:
    with pytest.raises(UsageError) as caught:
        PostgresStore("not a url with password=hunter2", workspace=WORKSPACE).connect()
    assert "hunter2" not in caught.value.message and "not a url" not in caught.value.message
    assert caught.value.exit_code == 2
