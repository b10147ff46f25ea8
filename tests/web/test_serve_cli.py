"""`tht serve` and `tht serve token add | list | revoke`: shapes, human-only rules, bad input
(clear message, documented exit code, nothing written)."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest

from tests.tht.conftest import run_tht
from tests.tht.memory.support import environment
from tht.web.tokens import TokenStore


@pytest.fixture
def ws(tmp_path: Path):
    root = tmp_path / "ws"
    with environment({"THT_ACTOR": None, "THT_HOME": str(tmp_path / "home"),
                      "THT_CLOCK": "fixed:2026-12-01T10:00:00Z"}):  # fmt: skip
        assert run_tht("workspace", "init", str(root)).code == 0
        yield root


def tokens_file(root: Path) -> Path:
    return root / ".tht" / "serve" / "tokens.json"


def test_token_add_prints_the_token_once_and_stores_only_its_hash(ws: Path) -> None:
    done = run_tht("serve", "token", "add", "human:ann", "--workspace", str(ws), "--json")
    assert done.code == 0, done.stderr
    body = done.json()
    assert set(body) == {"reviewer", "token", "id"} and body["reviewer"] == "human:ann"
    stored = tokens_file(ws).read_text()
    assert body["token"] not in stored
    assert stat.S_IMODE(tokens_file(ws).stat().st_mode) == 0o600
    assert TokenStore(ws / ".tht").check(body["token"]).reviewer == "human:ann"
    listed = run_tht("serve", "token", "list", "--workspace", str(ws), "--json").json()
    assert listed == [
        {"id": body["id"], "reviewer": "human:ann", "created": "2026-12-01T10:00:00.000Z"}
    ]
    assert body["token"] not in json.dumps(listed)


def test_revoke_withdraws_the_tokens_of_one_reviewer(ws: Path) -> None:
    ann = run_tht("serve", "token", "add", "human:ann", "--workspace", str(ws), "--json").json()
    bob = run_tht("serve", "token", "add", "human:bob", "--workspace", str(ws), "--json").json()
    done = run_tht("serve", "token", "revoke", "human:ann", "--workspace", str(ws), "--json")
    assert done.code == 0 and done.json() == {"reviewer": "human:ann", "revoked": [ann["id"]]}
    store = TokenStore(ws / ".tht")
    assert store.check(ann["token"]).reviewer is None
    assert store.check(bob["token"]).reviewer == "human:bob"
    again = run_tht("serve", "token", "revoke", "human:ann", "--workspace", str(ws))
    assert again.code == 3 and "no web token" in again.stderr


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("serve", "token", "add", "agent"), 5, "may not take a human-only decision"),
        (("serve", "token", "add", "ann"), 2, "expected human:<id>"),
        (("serve", "token", "add", "human:a/../b"), 2, "expected human:<id>"),
        (("serve", "--port", "70000"), 2, "expected 0-65535"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(
    ws: Path, args: tuple[str, ...], code: int, needle: str
) -> None:
    done = run_tht(*args, "--workspace", str(ws))
    assert done.code == code, (done.stdout, done.stderr)
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert not tokens_file(ws).exists()


def test_an_agent_cannot_make_or_revoke_a_token(ws: Path) -> None:
    with environment({"THT_ACTOR": "agent"}):
        for verb in ("add", "revoke"):
            done = run_tht("serve", "token", verb, "human:ann", "--workspace", str(ws))
            assert done.code == 5 and "human-only" in done.stderr
    assert not tokens_file(ws).exists()


def test_serve_outside_a_workspace_is_exit_3(tmp_path: Path) -> None:
    done = run_tht("serve", "--workspace", str(tmp_path), "--port", "0")
    assert done.code == 3 and "not a tht workspace" in done.stderr


def test_serve_on_a_port_in_use_is_exit_6(ws: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        done = run_tht("serve", "--workspace", str(ws), "--port", str(port))
        assert done.code == 6 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    finally:
        taken.close()


def test_a_corrupt_token_file_is_a_clear_error(ws: Path) -> None:
    path = tokens_file(ws)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    done = run_tht("serve", "token", "add", "human:ann", "--workspace", str(ws))
    assert done.code == 2 and "cannot read the reviewer tokens" in done.stderr
    assert path.read_text() == "{not json"
