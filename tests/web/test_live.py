"""Live updates (ARCHITECTURE §5): a page's server-sent events follow the ledger. A real
``tht serve``; the stream read with httpx; the append made by the CLI, as an agent makes it. A
stream says *that* a ledger moved (``event: ledger`` with the session and its last seq), never
what it holds. On the PostgreSQL store the append's ``NOTIFY`` wakes the stream (the shared real
server of ``tests/support/postgres.py``)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.tht.memory.support import Ws
from tests.web.conftest import Prepared, Server, sign_in

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer

ANN = "human:ann"
TIMEOUT = httpx.Timeout(10.0)  # a read that waits longer than this fails the test
SELECT = {
    "kind": "select",
    "prompt": "Which year?",
    "options": [{"id": "y", "label": "2024", "events": []}],
}


@contextlib.contextmanager
def browser(server: Server, token: str) -> Iterator[httpx.Client]:
    """A client signed in to ``server`` with ``token``, as a browser is."""
    with httpx.Client(base_url=server.url, timeout=TIMEOUT, follow_redirects=False) as client:
        assert sign_in(client, token=token).status_code == 303
        yield client


def next_event(lines: Iterator[str]) -> dict[str, Any]:
    """The next ``ledger`` event of the stream (comments and ``retry`` skipped)."""
    kind = None
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: ") and kind == "ledger":
            data: dict[str, Any] = json.loads(line[len("data: ") :])
            return data
    raise AssertionError("the stream ended without a ledger event")


def reaches(lines: Iterator[str], session: str, seq: int) -> None:
    """Events of ``session`` only, its seq rising, until ``seq`` (one command may be several
    appends: a poll between them sees the first)."""
    last = 0
    while last < seq:
        event = next_event(lines)
        assert set(event) == {"session", "last_seq"} and event["session"] == session, event
        assert last < event["last_seq"] <= seq, (last, event, seq)
        last = event["last_seq"]


def propose(ws: Ws, session: str, **env: str) -> int:
    path = ws.root / ".tht" / "proposal-live.json"
    path.write_text(json.dumps(SELECT), encoding="utf-8")
    body = ws.ok("propose", "disambiguation", "--file", str(path), session, **env)
    return int(body["seq"])


@pytest.fixture
def live(prepared: Prepared, tmp_path: Path) -> Iterator[tuple[Ws, Server, str]]:
    ws = prepared.ws.copy(tmp_path / "ws")
    token = str(ws.ok("serve", "token", "add", ANN)["token"])
    server = Server(ws)
    try:
        yield ws, server, token
    finally:
        server.stop()


def test_a_session_stream_sees_an_append_made_by_the_cli(
    live: tuple[Ws, Server, str], prepared: Prepared
) -> None:
    ws, server, token = live
    with browser(server, token) as client:
        url = f"/sessions/{prepared.b}/events"
        with client.stream("GET", url) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert stream.headers["cache-control"] == "no-store"
            assert "script-src 'self'" in stream.headers["content-security-policy"]
            lines = stream.iter_lines()
            assert next(lines) == "retry: 1000"  # connected: its starting point is taken
            reaches(lines, prepared.b, propose(ws, prepared.b))
            reaches(lines, prepared.b, propose(ws, prepared.b))  # and the next one


def test_the_inbox_stream_names_the_session_that_moved(
    live: tuple[Ws, Server, str], prepared: Prepared
) -> None:
    ws, server, token = live
    with browser(server, token) as client, client.stream("GET", "/events") as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()
        assert next(lines) == "retry: 1000"
        reaches(lines, prepared.b, propose(ws, prepared.b))
        session = ws.ok("session", "new", "Quante dimissioni nel 2024?")["session"]
        event = next_event(lines)
        assert event["session"] == session and set(event) == {"session", "last_seq"}


def test_a_stream_without_a_signed_in_browser_is_401(
    live: tuple[Ws, Server, str], prepared: Prepared
) -> None:
    _, server, _ = live
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        for url in ("/events", f"/sessions/{prepared.b}/events"):
            client.cookies.set("tht_session", "forged")
            refused = client.get(url)
            assert refused.status_code == 401 and "<h1>Sign in</h1>" in refused.text


# ---------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="module")
def store_url(postgres_server: PostgresServer) -> str:
    from kernel.store.postgres import init_schema

    url = postgres_server.dsn(postgres_server.create_database("tht_web_live"))
    init_schema(url)
    return url


@pytest.fixture
def pg(tmp_path: Path, store_url: str) -> tuple[Ws, str]:
    """A workspace on the PostgreSQL store (its own namespace) with one session."""
    ws = Ws(tmp_path / "ws")
    assert ws.tht("workspace", "init", str(ws.root)).code == 0
    with (ws.root / "workspace.yaml").open("a", encoding="utf-8") as settings:
        name = f"web-{uuid.uuid4().hex[:12]}"
        settings.write(
            f'\nstore: {{kind: postgres, url_env: THT_STORE_URL, workspace: "{name}"}}\n'
        )
    session = str(ws.ok("session", "new", "Quante ablazioni?", THT_STORE_URL=store_url)["session"])
    assert not list((ws.root / "sessions").iterdir())  # on the server, not in files
    return ws, session


def test_on_postgres_the_stream_sees_the_append(pg: tuple[Ws, str], store_url: str) -> None:
    ws, session = pg
    token = str(ws.ok("serve", "token", "add", ANN)["token"])
    server = Server(ws, env={"THT_STORE_URL": store_url})
    try:
        url = f"/sessions/{session}/events"
        with browser(server, token) as client, client.stream("GET", url) as stream:
            lines = stream.iter_lines()
            assert next(lines) == "retry: 1000"
            reaches(lines, session, propose(ws, session, THT_STORE_URL=store_url))
    finally:
        server.stop()


def test_on_postgres_the_append_s_notify_wakes_the_stream(
    pg: tuple[Ws, str], store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LISTEN path itself: the stream's wake-up is set by the notice (polling never sets
    it), for its own session only."""
    from tht.composition import open_app
    from tht.web.live import Wakeup, _listen_source

    ws, session = pg
    monkeypatch.setenv("THT_STORE_URL", store_url)
    app = open_app(ws.root)
    assert _listen_source(app) is not None
    other = str(ws.ok("session", "new", "Quante dimissioni?", THT_STORE_URL=store_url)["session"])
    mine, theirs = Wakeup(), Wakeup()
    mine.start(app, session)
    theirs.start(app, other)
    try:
        woke = False
        for _ in range(8):  # the listener's connection may still be opening: append again
            propose(ws, session, THT_STORE_URL=store_url)
            if mine.wait(3.0):
                woke = True
                break
        alive = mine._thread is not None and mine._thread.is_alive()
        assert woke, f"no NOTIFY reached the stream's listener (its thread alive: {alive})"
        assert not theirs.wait(0.5)  # another session's stream was not woken
    finally:
        mine.stop()
        theirs.stop()
