"""The reviewer web UI under test: a real ``tht serve`` process on 127.0.0.1 (a free port) over a
workspace driven through the real command line, and real headless Chromium (Debian's
``chromium``) driven by Playwright; or, for HTTP-level tests, the app in this process
(:func:`web_client`).

``prepared`` builds, once per run, a workspace bound to the demo database with two sessions: A at
F6 with the final SQL's confirm review open (after an F1 select was answered at the terminal), and
B with an F1 select review open. Each test gets its own copy and its own server.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.tht.memory.support import (
    FIRST_QUESTION,
    REPO,
    Ws,
    make_workspace,
)

SHOTS = REPO / "tests" / "web" / "screenshots"
XSS_QUESTION = "Quante ablazioni nel 2024? <script>window.__pwned = 1</script>"
XSS_PROPOSAL = {
    "kind": "select",
    "prompt": 'Which hospital? <img src=x onerror="window.__pwned = 2">',
    "options": [
        {
            "id": "osc",
            "label": 'San Carlo <b onmouseover="window.__pwned = 3">only</b>',
            "events": [
                {
                    "type": "concept_clarified",
                    "subject": "ospedale",
                    "payload": {
                        "meaning": "<script>window.__pwned = 4</script>",
                        "target": "ospedali.nome",
                    },
                }
            ],
        },
        {"id": "all", "label": "every hospital", "events": []},
    ],
}

#: an F5 review (after F5 is reopened) whose prompt, label and artifacts carry markup
XSS_ARTIFACTS = {
    "kind": "select",
    "prompt": "Approve these? <script>window.__pwned = 7</script>",
    "options": [{"id": "ok", "label": '<svg onload="window.__pwned = 9">', "events": []}],
    "artifacts": [
        {
            "name": "cte/notes.md",
            "content": "# Notes\n\n<script>window.__pwned = 5</script>\n\n"
            "[click](javascript:alert(1)) <javascript:alert(2)> "
            '<img src=x onerror="window.__pwned = 8">\n',
        },
        {
            "name": "cte/2.sql",
            "content": "SELECT '</pre><script>window.__pwned = 6</script>' AS x -- </pre><b>\n",
        },
    ],
}


@dataclass
class Prepared:
    ws: Ws
    a: str  # at F6: the final SQL's confirm review open
    confirm: int
    b: str  # F1: an XSS-laden select review open
    select: int


def _until_f6_confirm(ws: Ws) -> tuple[str, int]:
    session = ws.new_session(FIRST_QUESTION)
    ws.step(session, "disambiguation", "01-f1-ablazione.json", "--choose", "flag")
    ws.step(session, "disambiguation", "02-f1-period.json", "--choose", "year,hospital")
    ws.close_f1(session)
    ws.step(session, "rewriting", "04-f3-rewrite.json", "--choose", "accept")
    ws.step(session, "rewriting", "05-f3-confirm.json", "--approve")
    ws.step(session, "schema_linking", "06-f4-linking.json", "--choose", "tables")
    ws.step(session, "schema_linking", "07-f4-confirm.json", "--approve")
    ws.step(session, "cte", "08-f5-cte.json", "--choose", "approve")
    ws.step(session, "cte", "09-f5-confirm.json", "--approve")
    ws.step(session, "sql", "10-f6-sql.json", "--choose", "approve")
    confirm = int(ws.propose(session, "sql", "17-f6-confirm.json")["review"])
    return session, confirm


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    ws = make_workspace(tmp_path_factory.mktemp("web") / "ws")
    a, confirm = _until_f6_confirm(ws)
    b = ws.new_session(XSS_QUESTION)
    select = int(ws.propose_json(b, "disambiguation", XSS_PROPOSAL).json()["review"])
    return Prepared(ws, a, confirm, b, select)


class Server:
    """``tht serve`` in its own process; stopped (SIGINT, then SIGKILL) at teardown."""

    def __init__(self, ws: Ws, *args: str, env: dict[str, str] | None = None) -> None:
        self.ws = ws
        base = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
        self.env = {**base, **{k: v for k, v in ws.env().items() if v is not None}, **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tht", "serve", "--port", "0", "--json", *args],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"tht serve did not start: {err}")
        self.url = str(json.loads(line)["url"]).rstrip("/")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@dataclass
class Served:
    ws: Ws
    server: Server
    prepared: Prepared

    @property
    def url(self) -> str:
        return self.server.url

    def token(self, reviewer: str = "human:ann") -> str:
        return str(self.ws.ok("serve", "token", "add", reviewer)["token"])


@pytest.fixture
def served(prepared: Prepared, tmp_path: Path) -> Iterator[Served]:
    ws = prepared.ws.copy(tmp_path / "ws")
    server = Server(ws)
    try:
        yield Served(ws, server, prepared)
    finally:
        server.stop()


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    binary = chromium_path()
    if binary is None:
        pytest.skip(
            "no chromium on PATH (make test installs Debian's `chromium` when it runs as root "
            "with apt); the browser tests need it"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as play:
        launched = play.chromium.launch(
            executable_path=binary, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    try:
        yield tab
    finally:
        context.close()


def shoot(page: Any, name: str) -> Path:
    """A screenshot kept as a test artifact (tests/web/screenshots/, not committed)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# ---------------------------------------------------------------- in process (HTTP-level tests)


def use_env(monkeypatch: pytest.MonkeyPatch, ws: Ws, **extra: str | None) -> None:
    """The environment the app in this process reads on each request: ``ws``'s, as the CLI's."""
    for key, value in ws.env(**extra).items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)


def web_client(root: Path) -> Any:
    """The app serving ``root``, in this process (starlette's TestClient), as a browser on
    loopback would reach it; redirects are not followed (their status is part of the contract)."""
    import warnings

    from starlette.exceptions import StarletteDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        from starlette.testclient import TestClient

    from tht.web.app import create_app

    return TestClient(create_app(root), base_url="http://127.0.0.1", follow_redirects=False)


def hidden(html: str, name: str) -> str:
    """The value of the first hidden input ``name`` of a page (``pre``, ``csrf``)."""
    import re

    found = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)">', html)
    assert found is not None, f"no hidden {name} in the page"
    return found.group(1)


def sign_in(client: Any, **fields: str) -> Any:
    """Sign-in as a browser does it: the form (its ``pre`` cookie and value), then the POST."""
    form = client.get("/signin")
    assert form.status_code in (200, 303), form.status_code
    return client.post("/signin", data={"pre": hidden(form.text, "pre"), **fields})


def signed_in(ws: Ws, token: str) -> tuple[Any, str]:
    """A browser signed in with ``token``: the client and its CSRF value."""
    client = web_client(ws.root)
    assert sign_in(client, token=token).status_code == 303
    return client, hidden(client.get("/").text, "csrf")


def is_signin(response: Any, status: int = 401) -> bool:
    return response.status_code == status and "<h1>Sign in</h1>" in response.text


def files_of(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` with its bytes: to prove nothing was written. Lock files
    aside, and what is derived — the read caches (``.tht/cache/``, rewritten by reads) and the
    embedded vector store (``.tht/qdrant/``, 200 MB of sparse files)."""
    derived = ("/.tht/cache/", "/.tht/qdrant/")
    return {
        str(p): p.read_bytes()
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock") and not any(d in str(p) for d in derived)
    }


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def tags_of(html: str) -> list[tuple[str, dict[str, str]]]:
    """The start tags of ``html`` with their attributes, parsed as a browser would."""
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser.tags


def assert_inert(html: str) -> None:
    """No markup of a proposal reached the page: the only script is the local one, no
    event-handler attribute, no ``javascript:`` URL, none of the injected tags."""
    tags = tags_of(html)
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{"src": "/static/live.js", "defer": ""}], scripts
    for tag, attrs in tags:
        assert tag not in ("img", "b", "iframe", "object", "embed", "svg", "base"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert "__pwned" not in value and "javascript:" not in value.lower(), (tag, value)
