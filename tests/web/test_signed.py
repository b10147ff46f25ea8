"""Signed mode in the reviewer web UI (ARCHITECTURE §3.9, §5; docs/security.md): a reviewer signs
in with the passphrase of their reviewer key (made at a terminal, ``tht reviewer add``); the key
is held unlocked in this server's memory for that browser session only, so every answer given in
the page is a signed human event that verifies with the registry's public key. Without such a
session — a wrong passphrase, an unknown reviewer, a token, the JSON API, after signing out or
idling — nothing is recorded. The key never leaves memory: no response, cookie or file holds it.
The sign-in throttle of both modes (five failures: every attempt refused for a minute).
"""

from __future__ import annotations

import base64
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernel import events as ev
from kernel.reviewer_registry import ReviewerRegistry
from kernel.signing import open_key, sig_key_id, verify_signature
from tests.adversarial.test_ledger_forgery import F1_PROPOSAL, cli_env, tht
from tests.adversarial.test_signed_mode import at_terminal
from tests.tht.memory.support import Ws
from tests.web.conftest import files_of, hidden, is_signin, sign_in, web_client
from tht.web.auth import FAILURE_WINDOW, IDLE_SECONDS, MAX_FAILURES, Sessions, Throttle

ANN = "human:ann"
PASSPHRASE = "ann's long web passphrase"


@dataclass
class Signed:
    ws: Path
    session: str
    review: int
    token: str  # a solo-mode token made for ann anyway: it cannot sign

    @property
    def home(self) -> Path:
        return self.ws.parent / "home"

    @property
    def ledger(self) -> Path:
        return self.ws / "sessions" / self.session / "ledger.jsonl"

    def events(self) -> list[ev.Event]:
        return [ev.decode_event(line) for line in self.ledger.read_bytes().splitlines() if line]


def _json(done: Any) -> Any:
    import json

    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    ws = tmp_path_factory.mktemp("signed-web") / "ws"
    assert tht(ws, "workspace", "init", str(ws)).returncode == 0
    added = at_terminal(ws, "reviewer", "add", ANN, "--json", typed=(PASSPHRASE, PASSPHRASE))
    assert added.returncode == 0, added.stderr
    session = _json(tht(ws, "session", "new", "How many ablations in 2023?", "--json"))["session"]
    review = _json(tht(ws, "propose", "disambiguation", "--file", F1_PROPOSAL, session, "--json"))
    token = _json(tht(ws, "serve", "token", "add", ANN, "--json"))["token"]
    return Signed(ws, session, int(review["review"]), str(token))


@pytest.fixture
def signed(base: Signed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    """A copy (workspace and THT_HOME, the sealed key) whose environment the app reads."""
    copy = Signed(tmp_path / "ws", base.session, base.review, base.token)
    shutil.copytree(base.ws, copy.ws)
    shutil.copytree(base.home, copy.home)
    for key, value in cli_env(copy.ws).items():
        monkeypatch.setenv(key, value)
    for key in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(key, raising=False)
    return copy


def answer_url(s: Signed) -> str:
    return f"/sessions/{s.session}/reviews/{s.review}/answer"


CHOOSE = {"decision": "choose", "choose": "flag", "rationale": "the flag column"}


def test_an_answer_in_the_page_is_a_signed_event_that_verifies(signed: Signed) -> None:
    client = web_client(signed.ws)
    assert sign_in(client, reviewer=ANN, passphrase=PASSPHRASE).status_code == 303
    page = client.get(f"/sessions/{signed.session}")
    assert page.status_code == 200 and 'title="every answer you give here is signed' in page.text
    before = len(signed.events())
    done = client.post(answer_url(signed), data={**CHOOSE, "csrf": hidden(page.text, "csrf")})
    assert done.status_code == 303 and done.headers["location"].endswith("?done=answered")
    new = signed.events()[before:]
    assert [ev.info_of(e).type for e in new] == ["review_answered", "concept_clarified"]
    registry = ReviewerRegistry(signed.ws / "reviewers").state()
    for event in new:
        assert event.actor == ANN and event.sig is not None and event.sig.startswith("ed25519:")
        record = registry.key(str(sig_key_id(event.sig)))
        assert record is not None and record.reviewer == ANN and record.active
        assert verify_signature(record.public_key, ev.canonical_bytes(event), event.sig)
    other = new[1]  # the check can fail: a signature is of its own event only
    assert not verify_signature(record.public_key, ev.canonical_bytes(new[0]), str(other.sig))
    verified = _json(tht(signed.ws, "ledger", "verify", signed.session, "--json"))
    assert verified["ok"] is True and verified["problems"] == []
    assert (
        client.get(f"/sessions/{signed.session}").text.count('<span class="badge ok">signed') >= 2
    )


@pytest.mark.parametrize(
    "fields, status",
    [
        ({"reviewer": ANN, "passphrase": "not the passphrase"}, 401),
        ({"reviewer": ANN, "passphrase": ""}, 401),
        ({"reviewer": "human:zed", "passphrase": PASSPHRASE}, 401),
        ({"reviewer": "ann", "passphrase": PASSPHRASE}, 400),
        ({"reviewer": "agent", "passphrase": PASSPHRASE}, 400),
        ({"token": "{token}"}, 400),
    ],
    ids=["wrong-passphrase", "no-passphrase", "unknown-reviewer", "not-human", "agent", "token"],
)
def test_a_sign_in_without_the_reviewer_key_opens_no_session(
    signed: Signed, fields: dict[str, str], status: int
) -> None:
    client = web_client(signed.ws)
    fields = {k: v.format(token=signed.token) for k, v in fields.items()}
    done = sign_in(client, **fields)
    assert is_signin(done, status), done.text
    assert "tht_session" not in done.headers.get("set-cookie", "")
    assert client.app.state.ctx.sessions.count() == 0
    before = files_of(signed.ws, signed.home)
    assert is_signin(client.post(answer_url(signed), data={**CHOOSE, "csrf": "x"}))
    assert files_of(signed.ws, signed.home) == before


def test_a_token_cannot_answer_in_signed_mode_through_the_api(signed: Signed) -> None:
    client = web_client(signed.ws)
    auth = {"Authorization": f"Bearer {signed.token}"}
    assert client.get(f"/api/sessions/{signed.session}", headers=auth).status_code == 200
    before = files_of(signed.ws, signed.home)
    url = f"/api{answer_url(signed)}"
    done = client.post(url, json={"choose": ["flag"]}, headers=auth)
    assert done.status_code == 403, done.text
    assert (
        done.json()["error"]["code"] == "refused" and "sign in" in done.json()["error"]["message"]
    )
    assert files_of(signed.ws, signed.home) == before


def test_signing_out_or_idling_drops_the_key(signed: Signed) -> None:
    client = web_client(signed.ws)
    now = [0.0]
    sessions = client.app.state.ctx.sessions = Sessions(clock=lambda: now[0])
    for leave in ("sign out", "idle"):
        client.cookies.clear()
        assert sign_in(client, reviewer=ANN, passphrase=PASSPHRASE).status_code == 303
        browser = sessions.get(client.cookies["tht_session"])
        assert browser is not None and browser.key is not None and browser.reviewer == ANN
        csrf = hidden(client.get("/").text, "csrf")
        if leave == "sign out":
            assert client.post("/signout", data={"csrf": csrf}).status_code == 303
            client.cookies.clear()
            client.cookies.set("tht_session", browser.id)  # the old cookie, kept
        else:
            now[0] += IDLE_SECONDS + 1
        before = files_of(signed.ws, signed.home)
        assert is_signin(client.post(answer_url(signed), data={**CHOOSE, "csrf": csrf}))
        assert files_of(signed.ws, signed.home) == before
        assert browser.key is None and sessions.count() == 0, leave


def test_five_wrong_tokens_refuse_the_right_one_for_a_minute(tmp_path: Path) -> None:
    """Solo mode's throttle (per client address): a right token too, until the window ends."""
    ws = Ws(tmp_path / "solo")
    assert ws.tht("workspace", "init", str(ws.root)).code == 0
    token = str(ws.ok("serve", "token", "add", ANN)["token"])
    client = web_client(ws.root)
    now = [1000.0]
    client.app.state.ctx.throttle = Throttle(clock=lambda: now[0])
    for _ in range(MAX_FAILURES):
        done = sign_in(client, token=f"tht_{token[4:20]}_{'B' * 43}")  # this workspace's form
        assert is_signin(done) and "Unknown token." in done.text
    blocked = sign_in(client, token=token)
    assert is_signin(blocked) and "Too many failed sign-ins" in blocked.text
    now[0] += FAILURE_WINDOW - 1
    assert "Too many failed sign-ins" in sign_in(client, token=token).text
    now[0] += 2
    assert sign_in(client, token=token).status_code == 303
    assert client.get("/").status_code == 200


def test_five_wrong_passphrases_refuse_the_right_one_for_a_minute(signed: Signed) -> None:
    client = web_client(signed.ws)
    now = [0.0]
    client.app.state.ctx.throttle = Throttle(clock=lambda: now[0])
    for _ in range(MAX_FAILURES):
        assert is_signin(sign_in(client, reviewer=ANN, passphrase="guess"))
    refused = sign_in(client, reviewer=ANN, passphrase=PASSPHRASE)
    assert is_signin(refused) and "Too many failed sign-ins" in refused.text
    now[0] += FAILURE_WINDOW + 1
    assert sign_in(client, reviewer=ANN, passphrase=PASSPHRASE).status_code == 303


def _spellings(secret: bytes) -> list[bytes]:
    encoded = [base64.b64encode(secret), base64.urlsafe_b64encode(secret), secret.hex().encode()]
    return [secret, *encoded, *(e.rstrip(b"=") for e in encoded), secret.hex().upper().encode()]


def test_the_key_is_in_no_response_cookie_or_file(signed: Signed) -> None:
    seed = open_key((signed.home / "keys" / "human_ann.key").read_bytes(), PASSPHRASE)._seed()
    client = web_client(signed.ws)
    seen: list[bytes] = []

    def keep(response: Any) -> Any:
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
        seen.append(headers.encode() + b"\n" + response.content)
        return response

    keep(client.get("/signin"))
    keep(sign_in(client, reviewer=ANN, passphrase=PASSPHRASE))
    page = keep(client.get(f"/sessions/{signed.session}"))
    csrf = hidden(page.text, "csrf")
    keep(client.post(answer_url(signed), data={**CHOOSE, "csrf": csrf}))
    for path in ("/", f"/sessions/{signed.session}", f"/api/sessions/{signed.session}"):
        keep(client.get(path, headers={"Authorization": f"Bearer {signed.token}"}))
    seen.append(str(dict(client.cookies)).encode())
    keep(client.post("/signout", data={"csrf": csrf}))
    assert signed.events()[-1].sig is not None  # the key did sign, in memory
    written = files_of(signed.ws, signed.home)
    assert any(name.endswith("human_ann.key") for name in written)
    for spelling in _spellings(seed):
        assert not any(spelling in blob for blob in seen)
        assert not [name for name, data in written.items() if spelling in data]
