"""The JSON API's contract (ARCHITECTURE §5): ``GET /api/sessions`` is ``tht session list --json``,
``GET /api/sessions/{id}`` is ``tht session status --json``, ``POST .../answer`` is ``tht review
answer --json`` (the same body, the same ledger events), each on the same workspace; bad bodies
are 400 with the CLI's ``{"error": {...}}`` shape and nothing written; two servers answering the
same review at once: one 200, one 409, one answer in a ledger that verifies.

Golden files: ``golden/web/`` (``pytest --update-golden`` rewrites them); a verification's
``elapsed_ms`` (a measured time) is written as 0."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.errors import UsageError
from tests.tht.memory.support import REPO, Ws
from tests.web.conftest import Prepared, Server, files_of, use_env, web_client
from tht.web.api import _answer_body

GOLDEN = REPO / "golden" / "web"
ANN = "human:ann"


def untimed(value: Any) -> Any:
    """``value`` with every ``elapsed_ms`` set to 0 (and, in a ledger line, no ``prev``: it
    hashes the line before, elapsed time included)."""
    if isinstance(value, dict):
        return {k: 0 if k == "elapsed_ms" else untimed(v) for k, v in value.items() if k != "prev"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def check_golden(name: str, body: Any, update: bool) -> None:
    path = GOLDEN / f"{name}.json"
    text = json.dumps(untimed(body), indent=2, ensure_ascii=False) + "\n"
    if update:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path.name} missing: run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{name}: the API changed (golden/web/)"


@pytest.fixture(scope="module")
def base(prepared: Prepared, tmp_path_factory: pytest.TempPathFactory) -> tuple[Ws, str]:
    """The prepared workspace with ann's token (made before any copy: every copy's clock is
    then at the same point, so the API's and the CLI's answers are stamped alike)."""
    ws = prepared.ws.copy(tmp_path_factory.mktemp("api") / "ws")
    return ws, str(ws.ok("serve", "token", "add", ANN)["token"])


@pytest.fixture
def pair(base: tuple[Ws, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Two identical copies: one answered through the API (whose env the app reads), one
    through the CLI; and the API's client with ann's token."""
    ws, token = base
    api, cli = ws.copy(tmp_path / "api"), ws.copy(tmp_path / "cli")
    use_env(monkeypatch, api)
    client = web_client(api.root)
    client.headers["Authorization"] = f"Bearer {token}"
    return api, cli, client


def test_get_sessions_and_a_session_are_the_cli_list_and_status(
    pair: Any, prepared: Prepared, update_golden: bool
) -> None:
    api, _, client = pair
    listed = client.get("/api/sessions")
    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
    assert listed.json() == api.ok("session", "list")
    check_golden("sessions", listed.json(), update_golden)
    for name, session in (("session_a", prepared.a), ("session_b", prepared.b)):
        status = client.get(f"/api/sessions/{session}")
        assert status.status_code == 200
        assert status.json() == api.ok("session", "status", session)
        check_golden(name, status.json(), update_golden)


def _answered_alike(api: Ws, cli: Ws, session: str, body: dict[str, Any], argv: list[str]) -> None:
    """The CLI's answer on the twin workspace: the same body and the same ledger events."""
    by_cli = cli.ok("review", "answer", *argv, session, "--as", ANN)
    assert untimed(body) == untimed(by_cli)
    assert list(body) == list(by_cli)  # the same keys, in the same order
    assert untimed(api.events(session)) == untimed(cli.events(session))


def test_post_answer_is_the_cli_answer(pair: Any, prepared: Prepared, update_golden: bool) -> None:
    api, cli, client = pair
    p = prepared
    cases = [
        ("answer_choose", p.b, p.select, {"choose": ["osc"], "rationale": "home"},
         [str(p.select), "--choose", "osc", "--rationale", "home"]),
        ("answer_approve", p.a, p.confirm, {"approve": True},
         [str(p.confirm), "--approve"]),
    ]  # fmt: skip
    for name, session, seq, request, argv in cases:
        done = client.post(f"/api/sessions/{session}/reviews/{seq}/answer", json=request)
        assert done.status_code == 200, done.text
        check_golden(name, done.json(), update_golden)
        _answered_alike(api, cli, session, done.json(), argv)
    assert "ran" in done.json()  # approving F6 ran F7, as at the terminal
    answered = [e for e in api.events(p.b) if e["type"] == "review_answered"]
    assert answered[-1]["actor"] == ANN and answered[-1]["payload"]["rationale"] == "home"


def test_post_reject_is_the_cli_reject(pair: Any, prepared: Prepared, update_golden: bool) -> None:
    api, cli, client = pair
    url = f"/api/sessions/{prepared.a}/reviews/{prepared.confirm}/answer"
    done = client.post(url, json={"reject": True, "rationale": "wrong join"})
    assert done.status_code == 200, done.text
    check_golden("answer_reject", done.json(), update_golden)
    argv = [str(prepared.confirm), "--reject", "--rationale", "wrong join"]
    _answered_alike(api, cli, prepared.a, done.json(), argv)


def _bad_requests(p: Prepared) -> list[tuple[str, str, bytes | dict[str, Any]]]:
    select = f"/api/sessions/{p.b}/reviews/{p.select}/answer"
    return [
        ("not_json", select, b"{not json"),
        ("not_utf8", select, b"\xff\xfe{}"),
        ("not_an_object", select, b'["osc"]'),
        ("empty_object", select, {}),
        ("unknown_key", select, {"choose": ["osc"], "why": "x"}),
        ("choose_and_approve", select, {"choose": ["osc"], "approve": True}),
        ("approve_and_reject", select, {"approve": True, "reject": True}),
        ("choose_not_a_list", select, {"choose": "osc"}),
        ("choose_not_text", select, {"choose": [1]}),
        ("choose_empty", select, {"choose": []}),
        ("approve_not_bool", select, {"approve": "yes"}),
        ("rationale_not_text", select, {"choose": ["osc"], "rationale": 5}),
        ("rationale_too_long", select, {"choose": ["osc"], "rationale": "x" * 4001}),
        ("body_too_large", select, {"choose": ["osc"], "rationale": "x" * 70_000}),
        ("unknown_option", select, {"choose": ["nope"]}),
        ("approve_a_select", select, {"approve": True}),
        ("unknown_session", "/api/sessions/01AAAAAAAAAAAAAAAAAAAAAAAA", b""),
        ("unknown_session_answer", "/api/sessions/01AAAAAAAAAAAAAAAAAAAAAAAA/reviews/6/answer",
         {"approve": True}),
        ("not_a_review", f"/api/sessions/{p.b}/reviews/1/answer", {"approve": True}),
        ("seq_past_the_end", f"/api/sessions/{p.b}/reviews/999/answer", {"approve": True}),
    ]  # fmt: skip


def test_bad_requests_are_errors_in_the_cli_shape_and_write_nothing(
    pair: Any, prepared: Prepared, update_golden: bool
) -> None:
    api, _, client = pair
    before = files_of(api.root)
    errors: dict[str, Any] = {}
    for name, url, body in _bad_requests(prepared):
        if url.endswith("/answer"):
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            done = client.post(url, content=raw, headers={"content-type": "application/json"})
        else:
            done = client.get(url)
        assert done.headers["content-type"] == "application/json", name
        error = done.json()["error"]
        assert set(error) == {"code", "exit_code", "message"} and error["message"], name
        assert 400 <= done.status_code < 500, (name, done.status_code)
        errors[name] = {"status": done.status_code, **done.json()}
    assert {
        errors[n]["status"] for n in errors if not n.startswith(("unknown_s", "not_a", "seq"))
    } == {400}
    check_golden("errors", errors, update_golden)
    assert files_of(api.root) == before


KEYS = st.sampled_from(["choose", "approve", "reject", "rationale", "why"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=8,
)


@given(body=JSON)
def test_any_json_body_is_exactly_one_answer_or_a_usage_error(body: Any) -> None:
    """The body check never lets through an ambiguous answer, nor fails any other way."""
    try:
        choose, approve, reject, rationale = _answer_body(json.dumps(body).encode())
    except UsageError:
        return
    assert isinstance(body, dict) and set(body) <= {"choose", "approve", "reject", "rationale"}
    assert sum((bool(choose), approve, reject)) == 1 and isinstance(rationale, str)
    assert all(isinstance(c, str) and c for c in choose) and list(choose) == body.get("choose", [])


def test_a_stale_answer_is_409_naming_who_answered(pair: Any, prepared: Prepared) -> None:
    api, _, client = pair
    api.ok("review", "answer", str(prepared.select), prepared.b, "--choose", "all",
           "--as", "human:bob")  # fmt: skip
    before = files_of(api.root)
    done = client.post(f"/api/sessions/{prepared.b}/reviews/{prepared.select}/answer",
                       json={"choose": ["osc"]})  # fmt: skip
    assert done.status_code == 409
    error = done.json()["error"]
    answered = [e for e in api.events(prepared.b) if e["type"] == "review_answered"][-1]
    assert error["code"] == "conflict"
    assert f"already answered by human:bob at seq {answered['seq']}" in error["message"]
    assert files_of(api.root) == before


def _race(servers: list[Server], url: str, token: str, bodies: Any) -> list[httpx.Response]:
    """Each server gets one of ``bodies`` posted to ``url`` at the same moment."""
    barrier = threading.Barrier(len(servers))
    results: list[httpx.Response] = []

    def answer(server: Server, body: dict[str, Any]) -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            barrier.wait()
            auth = {"Authorization": f"Bearer {token}"}
            results.append(client.post(url, json=body, headers=auth))

    threads = [threading.Thread(target=answer, args=a) for a in zip(servers, bodies, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_two_servers_answering_one_review_at_once_one_wins(
    base: tuple[Ws, str], prepared: Prepared, tmp_path: Path
) -> None:
    """Two ``tht serve`` processes on one workspace, each answering the same review at the
    same moment: the kernel's expected-last-seq append lets one through; the other is told
    who answered; the ledger verifies with exactly one answer."""
    ws, token = base
    ws = ws.copy(tmp_path / "ws")
    servers = [Server(ws), Server(ws)]
    try:
        for session, seq, bodies in [
            (prepared.b, prepared.select, ({"choose": ["osc"]}, {"choose": ["all"]})),
            (prepared.a, prepared.confirm, ({"approve": True}, {"reject": True})),
        ]:
            url = f"/api/sessions/{session}/reviews/{seq}/answer"
            results = _race(servers, url, token, bodies)
            assert sorted(r.status_code for r in results) == [200, 409], [r.text for r in results]
            lost = next(r for r in results if r.status_code == 409).json()["error"]["message"]
            answers = [e for e in ws.events(session)
                       if e["type"] == "review_answered" and e["causation"] == seq]  # fmt: skip
            assert len(answers) == 1 and f"at seq {answers[0]['seq']}" in lost
            verified = ws.tht("ledger", "verify", session, "--json")
            assert verified.code == 0 and json.loads(verified.stdout)["ok"] is True
    finally:
        for server in servers:
            server.stop()
