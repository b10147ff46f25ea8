"""The reviewer web UI's security contract (ARCHITECTURE §5, issue 16): who may see and do what
(401 / 403), CSRF and same origin on every state-changing request, everything a proposal wrote
rendered inert (the HTML; real Chromium), every response's headers, 404 / 409 / 4xx pages with
nothing written, loopback by default, the Host check (the sign-in throttle: test_signed.py).
The app runs in this process (``web_client``) except where a test is about the real server."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tht.memory.support import Ws
from tests.web.conftest import (
    XSS_ARTIFACTS,
    Prepared,
    Server,
    assert_inert,
    files_of,
    hidden,
    is_signin,
    sign_in,
    signed_in,
    tags_of,
    use_env,
    web_client,
)
from tht.web.artifacts import render_artifact

ANN, BOB = "human:ann", "human:bob"


@dataclass
class Site:
    ws: Ws
    p: Prepared
    tokens: dict[str, str]
    foreign: str  # a token of another workspace

    def url(self, template: str) -> str:
        decision = next(e["seq"] for e in self.ws.events(self.p.a) if e["type"] ==
                        "concept_clarified" and e["actor"].startswith("human:"))  # fmt: skip
        return template.format(a=self.p.a, b=self.p.b, select=self.p.select,
                               confirm=self.p.confirm, decision=decision)  # fmt: skip


@pytest.fixture(scope="module")
def site(prepared: Prepared, tmp_path_factory: pytest.TempPathFactory) -> Site:
    ws = prepared.ws.copy(tmp_path_factory.mktemp("security") / "ws")
    tokens = {who: str(ws.ok("serve", "token", "add", who)["token"]) for who in (ANN, BOB)}
    other = Ws(tmp_path_factory.mktemp("other") / "ws")
    assert other.tht("workspace", "init", str(other.root)).code == 0
    return Site(ws, prepared, tokens, str(other.ok("serve", "token", "add", ANN)["token"]))


@pytest.fixture
def ws(site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ws:
    """A copy of the site (its tokens too) for a test that may write; the app reads its env."""
    fresh = site.ws.copy(tmp_path / "ws")
    use_env(monkeypatch, fresh)
    return fresh


PAGES = ["/", "/events", "/sessions/{a}", "/sessions/{a}/events"]
POSTS = ["/signout", "/sessions/{b}/reviews/{select}/answer",
         "/sessions/{a}/decisions/{decision}/retract", "/sessions/{b}/stages/disambiguation/skip",
         "/sessions/{a}/stages/rewriting/reopen", "/sessions/{a}/lifecycle/pause",
         "/sessions/{a}/lifecycle/resume", "/sessions/{a}/lifecycle/finalize"]  # fmt: skip
FORM = {"decision": "choose", "choose": "osc", "reason": "why", "rationale": "why"}


# ---------------------------------------------------------------------------- who may ask


@pytest.mark.parametrize("cookie", [None, "not-a-session", "A" * 43])
def test_every_page_and_action_without_a_live_session_is_the_sign_in_page(
    site: Site, ws: Ws, cookie: str | None
) -> None:
    client = web_client(ws.root)
    if cookie is not None:
        client.cookies.set("tht_session", cookie)
    before = files_of(ws.root)
    for route in PAGES:
        assert is_signin(client.get(site.url(route))), route
    for route in POSTS:
        assert is_signin(client.post(site.url(route), data={**FORM, "csrf": "x"})), route
    assert files_of(ws.root) == before


API = [("GET", "/api/sessions"), ("GET", "/api/sessions/{a}"),
       ("POST", "/api/sessions/{b}/reviews/{select}/answer")]  # fmt: skip


def _api(client: Any, site: Site, header: str | None) -> list[Any]:
    auth = {"Authorization": header} if header is not None else {}
    return [client.request(m, site.url(r), headers=auth, json={"choose": ["osc"]}) for m, r in API]


def test_the_api_answers_401_without_a_valid_token_and_403_for_another_workspace(
    site: Site, ws: Ws
) -> None:
    ann, bob = site.tokens[ANN], site.tokens[BOB]
    client = web_client(ws.root)
    assert client.get("/api/sessions", headers={"Authorization": f"Bearer {bob}"}).is_success
    ws.ok("serve", "token", "revoke", BOB)
    before = files_of(ws.root)
    for header in (None, "", "Basic YW5uOnB3", "Bearer", "Bearer   ", "Bearer tht_0123_short",
                   f"Token {ann}", f"Bearer {ann}x", f"Bearer tht_{ann[4:20]}_{'A' * 43}",
                   f"Bearer {bob}"):  # fmt: skip
        for response in _api(client, site, header):
            assert response.status_code == 401, (header, response.text)
            assert response.headers["www-authenticate"] == 'Bearer realm="tht"'
            assert response.json()["error"]["code"] == "unauthorized"
    for response in _api(client, site, f"Bearer {site.foreign}"):
        assert response.status_code == 403, response.text
        assert "another workspace" in response.json()["error"]["message"]
    assert files_of(ws.root) == before


def test_a_sign_in_with_a_wrong_token_is_refused(site: Site, ws: Ws) -> None:
    ws.ok("serve", "token", "revoke", BOB)
    client = web_client(ws.root)
    for token in (site.foreign, site.tokens[BOB], "tht_x", "", site.tokens[ANN] + "x"):
        done = sign_in(client, token=token)
        assert is_signin(done) and "tht_session" not in done.headers.get("set-cookie", ""), token
        assert token != site.foreign or "another workspace" in done.text
        assert is_signin(client.get("/"))


def test_revoking_a_token_ends_the_browser_sessions_signed_in_with_it(site: Site, ws: Ws) -> None:
    client, csrf = signed_in(ws, site.tokens[BOB])
    assert client.get("/").status_code == 200
    ws.ok("serve", "token", "revoke", BOB)
    before = files_of(ws.root)
    assert is_signin(client.get(site.url("/sessions/{a}")))
    assert is_signin(client.post(site.url(POSTS[5]), data={"csrf": csrf}))
    assert files_of(ws.root) == before


# ---------------------------------------------------------------------------- CSRF, origin


@pytest.mark.parametrize("route", POSTS)
def test_a_state_changing_post_without_its_csrf_or_from_another_origin_is_403(
    site: Site, ws: Ws, route: str
) -> None:
    client, csrf = signed_in(ws, site.tokens[ANN])
    before = files_of(ws.root)
    url = site.url(route)
    for csrf_value, origin in [(None, None), ("", None), ("wrong", None), (csrf + "x", None),
                               (csrf, "http://evil.example"), (csrf, "null"),
                               (csrf, "http://127.0.0.1.evil.example")]:  # fmt: skip
        data = dict(FORM) if csrf_value is None else {**FORM, "csrf": csrf_value}
        headers = {"Origin": origin} if origin else {}
        done = client.post(url, data=data, headers=headers)
        assert done.status_code == 403, (route, csrf_value, origin, done.text)
        assert "CSRF check failed" in done.text and "nothing was recorded" in done.text
    assert files_of(ws.root) == before
    assert client.get("/").status_code == 200  # still signed in: a refusal signs nobody out


def test_the_same_posts_with_the_csrf_and_same_origin_are_recorded(site: Site, ws: Ws) -> None:
    """The control of the test above: the right CSRF value does record."""
    client, csrf = signed_in(ws, site.tokens[ANN])
    before = ws.status(site.p.b)["last_seq"]
    done = client.post(site.url(POSTS[1]), data={**FORM, "csrf": csrf},
                       headers={"Origin": "http://127.0.0.1"})  # fmt: skip
    assert done.status_code == 303 and done.headers["location"].endswith("?done=answered")
    assert ws.status(site.p.b)["last_seq"] > before
    assert client.post("/signout", data={"csrf": csrf}).status_code == 303
    assert is_signin(client.get("/"))


def test_a_sign_in_without_the_double_submit_value_is_refused(site: Site, ws: Ws) -> None:
    """Login CSRF: another site cannot sign this browser in as someone else."""
    client = web_client(ws.root)
    token = site.tokens[ANN]
    form = client.get("/signin")
    pre = hidden(form.text, "pre")
    evil = {"Origin": "http://evil.example"}
    for data, headers in [({"token": token}, {}), ({"token": token, "pre": "forged"}, {}),
                          ({"token": token, "pre": pre}, evil)]:  # fmt: skip
        done = client.post("/signin", data=data, headers=headers)
        assert is_signin(done, 403) and "tht_session" not in done.headers.get("set-cookie", "")
    fresh = web_client(ws.root)  # a page of another site has the value, never the cookie
    assert is_signin(fresh.post("/signin", data={"token": token, "pre": pre}), 403)
    assert is_signin(client.get("/"))


# ---------------------------------------------------------------------------- XSS


@pytest.fixture(scope="module")
def evil(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Ws:
    """The site with session A's F5 reopened and a review whose artifacts carry markup."""
    ws = site.ws.copy(tmp_path_factory.mktemp("evil") / "ws")
    ws.ok("stage", "reopen", "cte", site.p.a, "--reason", "again", "--as", ANN)
    done = ws.propose_json(site.p.a, "cte", XSS_ARTIFACTS)
    assert done.code == 0, done.stderr
    return ws


def test_questions_labels_payloads_and_artifacts_are_rendered_inert(
    site: Site, evil: Ws, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_env(monkeypatch, evil)
    client, _ = signed_in(evil, site.tokens[ANN])
    inbox = client.get("/").text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in inbox
    b = client.get(site.url("/sessions/{b}")).text
    assert "&lt;img src=x onerror=&#34;window.__pwned = 2&#34;&gt;" in b
    assert "&lt;b onmouseover=&#34;window.__pwned = 3&#34;&gt;" in b
    assert "\\u003cscript\\u003ewindow.__pwned = 4" in b  # the payload, as escaped JSON
    a = client.get(site.url("/sessions/{a}")).text
    assert "&lt;script&gt;window.__pwned = 5&lt;/script&gt;" in a  # markdown: raw HTML is text
    assert "&lt;/pre&gt;&lt;script&gt;window.__pwned = 6" in a  # SQL: every character escaped
    assert "<h1>Notes</h1>" in a  # the markdown itself is rendered
    for html in (inbox, b, a):
        assert_inert(html)


ACTIVE = {"script", "iframe", "object", "embed", "svg", "math", "style", "base", "form", "input",
          "link", "meta", "frame", "frameset", "template"}  # fmt: skip
PIECES = ["<script>", "</script>", '<img src=x onerror="alert(1)">', "javascript:", "[a](", "![i](",
          "](javascript:alert(1))", '<a href="', "</pre>", "<!--", "-->", "<svg onload=x>", "```\n",
          "<style>", "&lt;", "&#106;avascript:", "<javascript:x>", "data:text/html,", "\n\n", "`",
          "<https://example.org>", "vbscript:"]  # fmt: skip
SCRIPT_URLS = ("javascript:", "vbscript:", "data:text")
CHARS = st.text("<>/=\"' &;:!()[]`#*-\nabjsv", max_size=30)
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), CHARS), max_size=12).map("".join)


@given(text=TEXT, name=st.sampled_from(["a.md", "cte/1.sql", "a.txt", "a.json"]))
def test_any_artifact_text_renders_without_active_markup(text: str, name: str) -> None:
    """Whatever a proposal's artifact says, its HTML has no active element, no handler, no
    script URL (a Markdown link to one is dropped; SQL and text are escaped character by
    character)."""
    app = SimpleNamespace(kernel=SimpleNamespace(artifact=lambda _s, _n: text.encode()))
    view = render_artifact(app, "S", SimpleNamespace(effective_artifact=lambda _n: None), name)
    for tag, attrs in tags_of(str(view.html)):
        assert tag not in ACTIVE, (tag, text)
        for key, value in attrs.items():
            url = value.strip().lower()
            assert not key.startswith("on") and not url.startswith(SCRIPT_URLS), (key, text)


def test_in_chromium_nothing_injected_runs_or_is_even_attempted(
    site: Site, evil: Ws, page: Any
) -> None:
    """``window.__pwned`` is never set, and no CSP violation is reported (a blocked injected
    script would be one: the escaping, not the CSP, is what keeps them out)."""
    server = Server(evil)
    try:
        page.add_init_script(
            "document.addEventListener('securitypolicyviolation', function (e) {"
            " window.__csp = (window.__csp || []).concat([e.violatedDirective]); });"
        )
        page.goto(server.url + "/signin")
        page.fill("input[name=token]", site.tokens[ANN])
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/")
        for path in ("/", site.url("/sessions/{b}"), site.url("/sessions/{a}")):
            page.goto(server.url + path)
            for summary in page.locator("details summary").all():
                summary.click()
            for label in page.locator("label.option, .artifact, .prompt").all():
                label.hover()
            assert page.evaluate("[window.__pwned, window.__csp]") == [None, None], path
    finally:
        server.stop()


# ---------------------------------------------------------------------------- headers


def test_every_response_carries_the_strict_csp(site: Site, ws: Ws) -> None:
    client, _ = signed_in(ws, site.tokens[ANN])
    anonymous = web_client(ws.root)
    auth = {"Authorization": f"Bearer {site.tokens[ANN]}"}
    responses = [
        anonymous.get("/signin"), anonymous.get("/"), anonymous.get("/healthz"),
        anonymous.get("/static/style.css"), anonymous.get("/static/live.js"),
        anonymous.get("/static/hl.css"), anonymous.get("/nowhere"),
        anonymous.get("/signout"), anonymous.get("/", headers={"host": "evil.example"}),
        anonymous.get("/api/sessions"), anonymous.get("/api/sessions", headers=auth),
        client.get("/"), client.get(site.url("/sessions/{a}")), client.get("/signin"),
        client.post(site.url(POSTS[5]), data={}),
    ]  # fmt: skip
    assert {r.status_code for r in responses} >= {200, 303, 400, 401, 403, 404, 405}
    for r in responses:
        csp = r.headers.get("content-security-policy", "")
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, (r.url, csp)
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert "frame-ancestors 'none'" in csp and r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
    cookie = sign_in(web_client(ws.root), token=site.tokens[ANN]).headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie


def test_a_host_header_not_allowed_is_400(site: Site, ws: Ws) -> None:
    client = web_client(ws.root)
    for host in ("evil.example", "127.0.0.1.evil.example", "attacker:8765"):
        assert client.get("/signin", headers={"host": host}).status_code == 400, host
    for host in ("127.0.0.1:8765", "localhost", "[::1]:8765"):
        assert client.get("/signin", headers={"host": host}).status_code == 200, host


# ---------------------------------------------------------------------------- 404, 409, 4xx


def test_unknown_or_bad_input_is_a_404_or_400_page_with_nothing_written(site: Site, ws: Ws) -> None:
    """Unknown session or seq: 404 (never a 500); a bad form: 400 with its message."""
    client, csrf = signed_in(ws, site.tokens[ANN])
    before = files_of(ws.root)
    unknown = "/sessions/01AAAAAAAAAAAAAAAAAAAAAAAA"
    for path in (unknown, "/sessions/not-a-session", "/nowhere", f"{unknown}/events",
                 "/static/../workspace.yaml", "/static/app.py"):  # fmt: skip
        done = client.get(path)
        assert done.status_code == 404 and "<h1>Not found</h1>" in done.text, path
    for route in ("/sessions/{b}/reviews/999/answer", "/sessions/{b}/reviews/1/answer",
                  f"{unknown}/reviews/6/answer", "/sessions/{a}/decisions/999/retract",
                  "/sessions/{a}/stages/nowhere/reopen", "/sessions/{a}/stages/cte/explode",
                  "/sessions/{a}/lifecycle/explode", "/sessions/{b}/reviews/abc/answer",
                  "/sessions/{b}/reviews/-1/answer", "/sessions/{b}/reviews/1.5/answer",
                  "/sessions/{a}/decisions/x/retract"):  # fmt: skip
        done = client.post(site.url(route), data={**FORM, "csrf": csrf})
        assert done.status_code == 404 and 'class="flash error"' in done.text, route
    for form, message in [
        ({}, "no answer given"),
        ({"decision": "maybe"}, "no answer given"),
        ({"decision": "choose"}, "choose at least one option"),
        ({"decision": "choose", "choose": ""}, "choose at least one option"),
        ({"decision": "choose", "choose": "osc", "rationale": "x" * 4001}, "longer than 4000"),
        ({"decision": "choose", "choose": "nope"}, "unknown option(s) nope"),
        ({"decision": "approve"}, "answered with"),
        ({"decision": "choose", "choose": "osc", "blob": "x" * 300_000}, "too large"),
        ({"reason": "r" * 4001, "route": POSTS[2]}, "longer than 4000"),
    ]:
        route = form.pop("route", POSTS[1])
        done = client.post(site.url(route), data={**form, "csrf": csrf})
        assert done.status_code == 400, (form.keys(), done.status_code)
        assert 'class="flash error"' in done.text and message in done.text, done.text
    assert files_of(ws.root) == before


def test_a_stale_answer_is_409_naming_who_answered_and_when(site: Site, ws: Ws) -> None:
    client, csrf = signed_in(ws, site.tokens[ANN])
    for session, review, how, form in [
        (site.p.b, site.p.select, ("--choose", "all"), {"decision": "choose", "choose": "osc"}),
        (site.p.a, site.p.confirm, ("--approve",), {"decision": "approve"}),
    ]:
        ws.ok("review", "answer", str(review), session, *how, "--as", BOB)
        answered = next(e for e in ws.events(session)
                        if e["type"] == "review_answered" and e["causation"] == review)  # fmt: skip
        before = files_of(ws.root)
        done = client.post(
            f"/sessions/{session}/reviews/{review}/answer", data={**form, "csrf": csrf}
        )
        assert done.status_code == 409, done.text
        assert f"already answered by {BOB} at seq {answered['seq']}" in done.text
        assert files_of(ws.root) == before


# ---------------------------------------------------------------------------- the server


def test_tht_serve_binds_loopback_by_default(site: Site, ws: Ws) -> None:
    server = Server(ws)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        port = int(server.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=False)
        if listening.returncode == 0:
            mine = [line.split()[3] for line in listening.stdout.splitlines()
                    if line.split()[3].endswith(f":{port}")]  # fmt: skip
            assert mine == [f"127.0.0.1:{port}"], mine
        try:  # this machine's address on its default route (no packet is sent)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect(("192.0.2.1", 9))
                outward = str(probe.getsockname()[0])
        except OSError:  # no route: loopback is all there is
            outward = "127.0.0.1"
        if not outward.startswith("127."):
            with pytest.raises(OSError):
                socket.create_connection((outward, port), timeout=2).close()
    finally:
        server.stop()
