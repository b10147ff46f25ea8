"""Adversarial regressions: each test is what an attacker would try, on real files, real
processes and the real CLI where it matters. Each failed on the code the probe found."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from modules.routing.evaluator import RoutingEvaluatorPlug
from modules.routing.gate import GATE_CONFIG, assess_ambiguity
from modules.routing.pack import open_pack
from modules.routing.router import route
from tests.support.cli import run_tht
from tests.support.openai_server import OpenAITestServer

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "golden" / "routing" / "compiled" / "tesisquare.pack"

# --- 1. secrets reach the provider ------------------------------------------------------------

LEAKS = [
    ("DB_PASSWORD=hunter2 and then", "hunter2"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("export GITHUB_TOKEN=abc123def456ghi789", "abc123def456ghi789"),
    ("connect to postgresql://u:pa/ss@h/db please", "pa/ss"),
    ("il codice fiscale è RSSMRA85T10A562S", "RSSMRA85T10A562S"),
    ("bonifico su IT60 X054 2811 1010 0000 0123 456 grazie", "X054 2811"),
    ("bonifico su IT60X0542811101000000123456 grazie", "X0542811101000000123456"),
    ("curl -H 'Authorization: Bearer abc'", "Bearer abc"),
    ("curl -H 'Authorization: token ghx_shortish'", "ghx_shortish"),
    ("db:\n  password: correct horse battery\n  user: app", "horse battery"),
    ('{"dbPassword": "s3cr et", "user": "x"}', "s3cr et"),
    ("mysql --password=toor42 -u root", "toor42"),
    ("PGPASS=pgsecret99 psql", "pgsecret99"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAA",
    ),
]


def _plug(server: OpenAITestServer, state: Path) -> RoutingEvaluatorPlug:
    section = {
        "version": 2,
        "enabled": True,
        "mode": "force-evaluate",
        "profiles": {"ollama-local": {"baseUrl": server.base_url}},
    }
    return RoutingEvaluatorPlug(section, {}, state_dir=state)


ANSWER = json.dumps(
    {
        "schemaVersion": 1,
        "decision": "none",
        "skills": [],
        "mcps": [],
        "confidence": 0.9,
        "ambiguityResolved": True,
    }
)


@pytest.mark.parametrize(("text", "secret"), LEAKS, ids=[s for _, s in LEAKS])
def test_no_secret_reaches_the_provider_request_body(
    text: str, secret: str, tmp_path: Path
) -> None:
    """The real evaluator plug (the path that calls ``redact_prompt`` before the client) talks
    to the real 127.0.0.1 server; the captured request body holds none of the secret."""
    pack = open_pack(PACK)
    with OpenAITestServer(models=["ministral-3:3b"], default_answer=ANSWER) as server:
        routing = route(f"crea un word con la procedura {text}", pack.lookup_many, pack.target)
        verdict = assess_ambiguity(routing, config={**GATE_CONFIG, "enabled": True})
        outcome = _plug(server, tmp_path)(routing, verdict)
        requests = server.chat_requests()
    assert outcome.status == "completed", outcome.telemetry
    assert len(requests) == 1
    body = json.dumps(requests[0].body, ensure_ascii=False)
    assert "[REDACTED" in body
    assert secret not in body
    assert secret not in json.dumps(requests[0].body)


# --- shared: the real CLI in a subprocess ------------------------------------------------------


def tht(
    *args: str, cwd: Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_tht(*args, cwd=cwd, env=env, timeout=timeout)


def _tree(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (symlinks not followed) → its bytes."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


# --- 2. symlinked evidence sources are followed -----------------------------------------------

EVIDENCE_FIXTURES = ROOT / "tests" / "fixtures" / "evidence" / "sources"


@pytest.fixture
def evidence_ws(tmp_path: Path) -> Path:
    from kernel.workspace import init_workspace

    workspace, _ = init_workspace(tmp_path / "ws")
    for source in EVIDENCE_FIXTURES.iterdir():
        shutil.copy(source, workspace.sources_dir / source.name)
    return workspace.root


def _secret_file(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\n\nroot:x:0:0:TOP-SECRET-OUTSIDE-LINE:/root:/bin/bash\n")
    return secret


@pytest.mark.parametrize("how", ["file-link", "etc-passwd", "dir-link"])
def test_prepare_refuses_a_symlinked_source(evidence_ws: Path, tmp_path: Path, how: str) -> None:
    sources = evidence_ws / "evidence" / "sources"
    secret = _secret_file(tmp_path)
    if how == "file-link":
        (sources / "leak.md").symlink_to(secret)
    elif how == "etc-passwd":
        (sources / "passwd.md").symlink_to("/etc/passwd")
    else:
        (sources / "sub").symlink_to(secret.parent, target_is_directory=True)
    before = _tree(evidence_ws)
    done = tht("evidence", "prepare", cwd=evidence_ws)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "symbolic link" in done.stderr
    after = _tree(evidence_ws)
    assert after == before  # nothing staged, nothing written
    blob = b"".join(after.values())
    assert b"TOP-SECRET-OUTSIDE-LINE" not in blob and b"root:x:0:0" not in blob
    # --source on the link is refused the same way; the JSON error names the source
    name = {"file-link": "leak.md", "etc-passwd": "passwd.md", "dir-link": "sub"}[how]
    one = tht("evidence", "prepare", "--source", name, "--json", cwd=evidence_ws)
    assert one.returncode == 2
    assert _tree(evidence_ws) == before


def test_prepare_refuses_a_fifo_source_without_blocking(evidence_ws: Path) -> None:
    fifo = evidence_ws / "evidence" / "sources" / "pipe.md"
    os.mkfifo(fifo)
    before = _tree(evidence_ws)
    done = tht("evidence", "prepare", cwd=evidence_ws, timeout=30)  # a hang raises here
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "not a regular file" in done.stderr
    assert _tree(evidence_ws) == before


def test_regular_sources_still_prepare(evidence_ws: Path) -> None:
    done = tht("evidence", "prepare", "--json", cwd=evidence_ws)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["created"]


# --- 3. `evidence publish` has no lock --------------------------------------------------------


@pytest.fixture
def publish_ws(evidence_ws: Path) -> Path:
    settings = evidence_ws / "workspace.yaml"
    text = settings.read_text(encoding="utf-8")
    settings.write_text(
        text.replace("evidence:\n", "evidence:\n  embedder: hashing\n"), encoding="utf-8"
    )
    assert tht("evidence", "prepare", cwd=evidence_ws).returncode == 0
    return evidence_ws


def _state(ws: Path) -> dict[str, bytes]:
    return {k: v for k, v in _tree(ws).items() if not k.startswith(".home/")}


HOLD_LOCK = """
import sys, time
from pathlib import Path
from typing import Any
from modules.evidence.publish import publish_lock
with publish_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(60)
"""


def test_a_second_publish_while_one_runs_exits_4_and_changes_nothing(publish_ws: Path) -> None:
    state_dir = publish_ws / ".tht" / "evidence"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(state_dir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        before = _state(publish_ws)
        done = tht("evidence", "publish", "--json", cwd=publish_ws, timeout=30)
        assert done.returncode == 4, (done.stdout, done.stderr)
        assert f"another `tht evidence publish` is running (pid {holder.pid})" in done.stderr
        assert json.loads(done.stdout)["error"]["code"] == "conflict"
        assert _state(publish_ws) == before
    finally:
        holder.kill()
        holder.wait()
    # the lock is released with its holder: a publish now succeeds
    after = tht("evidence", "publish", "--json", cwd=publish_ws)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["status"] == "activated"


def test_two_real_publishes_at_once_never_both_activate(publish_ws: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("THT_WORKSPACE", "THT_SESSION")}
    env["THT_HOME"] = str(publish_ws / ".home")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tht", "evidence", "publish", "--json"],
            cwd=publish_ws,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(rc for rc, _, _ in results)
    assert codes in ([0, 0], [0, 4]), results
    statuses = sorted(json.loads(out)["status"] for rc, out, _ in results if rc == 0)
    assert statuses in (["activated"], ["activated", "unchanged"]), results
    for rc, _, err in results:
        if rc == 4:
            assert "another `tht evidence publish` is running (pid" in err
    # the index left behind is whole: a search finds the published units
    found = tht("search", "find", "tasso", "--json", cwd=publish_ws)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"]


# --- 4. the routing hook: SIGBUS on a catalog rewritten in place, hang on a FIFO ---------------

HOOK = [sys.executable, "-m", "tht.hooks.route_hook"]


def _hook_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    env.update(THT_HOME=str(home), THT_CONFIG=str(home / "config.yaml"))
    return env


def _hook(
    catalog: Path | str, home: Path, timeout: float = 10
) -> subprocess.CompletedProcess[bytes]:
    payload = json.dumps(
        {
            "session_id": "s1",
            "cwd": str(home),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "crea un word con la procedura di qualità",
        }
    ).encode()
    return subprocess.run(
        [*HOOK, "--catalog", str(catalog)],
        input=payload,
        capture_output=True,
        env=_hook_env(home),
        check=False,
        timeout=timeout,  # a hang fails the test
    )


def _hook_events(home: Path) -> list[dict[str, object]]:
    log = home / "logs" / "route-hook.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines() if x] if log.exists() else []


def test_the_hook_on_a_fifo_catalog_exits_0_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "catalog.pack"
    os.mkfifo(fifo)
    done = _hook(fifo, tmp_path, timeout=10)
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"not a regular file" in done.stderr
    assert [e["fallback_reason"] for e in _hook_events(tmp_path)] == ["catalog-unavailable"]


def test_the_hook_on_a_device_catalog_exits_0_at_once(tmp_path: Path) -> None:
    done = _hook("/dev/zero", tmp_path, timeout=10)
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"not a regular file" in done.stderr


@pytest.mark.parametrize("keep", [0.5, 0.1, 0.999])
def test_the_hook_on_a_truncated_catalog_exits_0_without_a_hint(
    tmp_path: Path, keep: float
) -> None:
    data = PACK.read_bytes()
    catalog = tmp_path / "catalog.pack"
    catalog.write_bytes(data[: int(len(data) * keep)])
    done = _hook(catalog, tmp_path)
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"tht-route-hook: no routing hint" in done.stderr


TRUNCATE_WHILE_OPEN = """
import os, sys
from modules.routing.pack import open_pack
from modules.routing.router import route
path = sys.argv[1]
pack = open_pack(path)
with open(path, "r+b") as handle:   # rewritten in place: same inode, shorter
    handle.truncate(0)
    handle.write(b"{}\\n")
routing = route("crea un word con la procedura", pack.lookup_many, pack.target)
print(len(pack.keys()), routing.ranked("skill")[0].id)
"""


def test_a_catalog_truncated_in_place_while_open_cannot_crash_the_reader(tmp_path: Path) -> None:
    """What the hook does between opening its catalog and routing, while a `tht route catalog
    build` rewrites the file in place: on a memory map this dies with SIGBUS."""
    catalog = tmp_path / "catalog.pack"
    catalog.write_bytes(PACK.read_bytes())
    done = subprocess.run(
        [sys.executable, "-c", TRUNCATE_WHILE_OPEN, str(catalog)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert int(done.stdout.split()[0]) > 1000


def test_the_hook_survives_a_catalog_rewritten_while_it_runs(tmp_path: Path) -> None:
    import threading

    data = PACK.read_bytes()
    catalog = tmp_path / "catalog.pack"
    catalog.write_bytes(data)
    stop = threading.Event()

    def rewrite() -> None:
        while not stop.is_set():
            with open(catalog, "r+b") as handle:
                handle.truncate(len(data) // 3)
                handle.seek(0, 2)
                handle.write(data[len(data) // 3 :])

    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    try:
        for _ in range(8):
            done = _hook(catalog, tmp_path)
            assert done.returncode == 0, done.stderr
    finally:
        stop.set()
        writer.join()


# --- a session driven through the real CLI (subprocesses) -------------------------------------

QUESTION = "Quante procedure di ablazione nel 2023 per ospedale?"
HUMAN = ("--as", "human:ann")


class Cli:
    """``python -m tht`` in a deterministic workspace, one subprocess per command."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "ws"
        self.tmp = tmp_path
        self.env = {
            "THT_WORKSPACE": str(self.root),
            "THT_CLOCK": "fixed:2026-01-01T00:00:00Z",
            "THT_SEED": "7",
            "THT_HOME": str(tmp_path / "home"),
        }
        self.count = 0

    def __call__(
        self, *args: str, stdin: bytes | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]:
        full = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
        full.update(self.env)
        return subprocess.run(
            [sys.executable, "-m", "tht", *args],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            check=False,
            cwd=self.tmp,
            env=full,
            timeout=timeout,
        )

    def ok(self, *args: str) -> Any:
        done = self(*args, "--json")
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    def proposal(self, body: dict[str, Any]) -> str:
        self.count += 1
        path = self.tmp / f"proposal-{self.count}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        return str(path)

    def propose(self, stage: str, body: dict[str, Any]) -> Any:
        return self.ok("propose", stage, "--file", self.proposal(body))

    def sessions(self) -> dict[str, bytes]:
        return _tree(self.root / "sessions")


def _new_session(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    assert cli("workspace", "init", str(cli.root)).returncode == 0
    cli.env["THT_SESSION"] = cli.ok("session", "new", QUESTION)["session"]
    return cli


def _drive_to_cte(cli: Cli) -> None:
    """F1 confirmed (F2 then runs by itself: nothing to recall), F3 and F4 confirmed with their
    artifacts: F5 (cte) is current."""
    review = cli.propose("disambiguation", {"kind": "confirm", "prompt": "Close F1?"})["review"]
    cli.ok("review", "answer", str(review), "--approve", *HUMAN)
    _rewrite(cli, "Ablations in 2023, by hospital")
    close = {"kind": "confirm"}  # question.md is rendered by tht
    cli.ok("review", "answer", str(cli.propose("rewriting", close)["review"]), "--approve", *HUMAN)
    body = {"kind": "confirm", "artifacts": [{"name": "schema_linking.json", "content": "{}\n"}]}
    review = cli.propose("schema_linking", body)["review"]
    cli.ok("review", "answer", str(review), "--approve", *HUMAN)
    assert cli.ok("session", "status")["current_stage"] == "cte"


def _rewrite(cli: Cli, question: str) -> None:
    """F3's decision: the reviewer chooses the rewritten question."""
    event = {"type": "question_rewritten", "payload": {"question": question}}
    option = {"id": "q", "label": question, "events": [event]}
    body = {"kind": "select", "prompt": "Rewrite?", "options": [option]}
    cli.ok(
        "review", "answer", str(cli.propose("rewriting", body)["review"]), "--choose", "q", *HUMAN
    )


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return _new_session(tmp_path)


# --- 5. control characters reach the reviewer's terminal raw ----------------------------------

NASTY = (
    "\x1b[2J\x1b[H"  # clear screen
    "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07"  # OSC 8 hyperlink
    "\x1b]0;pwned title\x07"  # window title
    "approve all\rOK   "  # CR overwrites the line
    "ab\x08\x08"  # backspaces
    "nul\x00 del\x7f c1\x9b "
    "\u202etxt.exe\u202c \u2028sep"
)
RAW = ("\x1b", "\x07", "\r", "\x08", "\x00", "\x7f", "\x9b", "\u202e", "\u2028")


def _nasty_select() -> dict[str, Any]:
    return {
        "kind": "select",
        "prompt": f"What does it mean? {NASTY}",
        "options": [
            {
                "id": "flag",
                "label": f"label {NASTY}",
                "events": [
                    {
                        "type": "concept_clarified",
                        "subject": f"abl{NASTY}",
                        "payload": {"meaning": f"m {NASTY}"},
                    }
                ],
            },
            {"id": "text", "label": "free text", "events": []},
        ],
    }


def test_control_characters_are_escaped_in_every_human_view(cli: Cli) -> None:
    review = cli.propose("disambiguation", _nasty_select())["review"]
    cli.ok("review", "answer", str(review), "--choose", "flag", *HUMAN)
    again = cli.propose("disambiguation", _nasty_select())["review"]
    for args in (
        ("review", "list"),
        ("review", "show", str(again)),
        ("session", "status"),
        ("session", "log"),
    ):
        done = cli(*args)
        assert done.returncode == 0, (args, done.stderr)
        out = done.stdout.decode("utf-8")
        for raw in RAW:
            assert raw not in out, (args, repr(raw))
        assert "\\x1b" in out, args  # shown, visibly, never interpreted
    shown = cli("review", "show", str(again)).stdout.decode()
    assert "\\x1b]0;pwned title\\x07" in shown and "\\u202etxt.exe" in shown
    # JSON stays exact
    body = cli.ok("review", "show", str(again))
    assert body["prompt"] == f"What does it mean? {NASTY}"
    assert body["options"][0]["events"][0]["payload"]["meaning"] == f"m {NASTY}"


# --- 6. `tht review show` never shows what an option would record -----------------------------


def test_review_show_and_list_say_what_each_option_records(cli: Cli) -> None:
    select = {
        "kind": "select",
        "prompt": "What does ablazione mean?",
        "options": [
            {
                "id": "flag",
                "label": "the flag column",
                "events": [
                    {
                        "type": "concept_clarified",
                        "subject": "ablazione",
                        "payload": {"meaning": "DROP the flag"},
                    }
                ],
            },
            {"id": "text", "label": "free text", "events": []},
        ],
    }
    seq = str(cli.propose("disambiguation", select)["review"])
    shown = cli("review", "show", seq).stdout.decode()
    assert "option [flag] the flag column" in shown
    assert 'records: concept_clarified subject=ablazione payload={"meaning": "DROP the flag"}' in (
        shown
    )
    assert "option [text] free text" in shown
    listed = cli("review", "list").stdout.decode()
    assert "flag: the flag column" in listed and "text: free text" in listed
    body = cli.ok("review", "show", seq)
    assert body["options"][0]["events"] == select["options"][0]["events"]  # type: ignore[index]
    assert body["artifacts"] == [] and body["artifact_contents"] == []


def test_review_show_of_a_confirm_shows_the_verified_artifact_content(cli: Cli) -> None:
    import hashlib

    review = cli.propose("disambiguation", {"kind": "confirm", "prompt": "Close F1?"})["review"]
    cli.ok("review", "answer", str(review), "--approve", *HUMAN)
    _rewrite(cli, "Ablations in 2023, by hospital RECORDED-MARKER")
    seq = str(cli.propose("rewriting", {"kind": "confirm"})["review"])
    content = cli.ok("review", "show", seq)["artifact_contents"][0]["content"]
    assert "RECORDED-MARKER" in content  # rendered by tht from the chosen rewriting
    # an attacker rewrites the materialized file after the proposal: show must not trust it
    for path in (cli.root / "sessions").rglob("question.md"):
        if path.is_file():
            path.write_text("TAMPERED-CONTENT\n")
    shown = cli("review", "show", seq).stdout.decode()
    digest = hashlib.sha256(content.encode()).hexdigest()
    assert f"artifact question.md (sha256 {digest}, {len(content)} bytes):" in shown
    assert "RECORDED-MARKER" in shown and "TAMPERED" not in shown
    assert "--approve completes the stage" in shown
    data = cli.ok("review", "show", seq)
    assert data["artifacts"] == ["question.md"]  # the documented shape, unchanged
    assert data["artifact_contents"] == [
        {
            "name": "question.md",
            "sha256": digest,
            "size": len(content),
            "content": content,
            "truncated": False,
        }
    ]


def test_review_show_truncates_a_large_artifact_with_a_note(cli: Cli) -> None:
    _drive_to_cte(cli)
    big = ("SELECT 1;\n" * 20_000) + "TAIL-MARKER\n"
    body = {"kind": "confirm", "artifacts": [{"name": "cte/big.sql", "content": big}]}
    seq = str(cli.propose("cte", body)["review"])
    shown = cli("review", "show", seq).stdout.decode()
    assert "… truncated: first 65536 of" in shown and "TAIL-MARKER" not in shown
    view = cli.ok("review", "show", seq)["artifact_contents"][0]
    assert view["truncated"] is True and view["size"] == len(big)
    assert big.startswith(view["content"]) and len(view["content"]) == 65536


# --- 7. a 231+ character artifact name commits the ledger, then fails with exit 1 -------------


@pytest.mark.parametrize(
    "name",
    [
        "cte/" + "a" * 231 + ".sql",  # one component past the file system's limit with a suffix
        "cte/" + "a" * 197 + ".sql",  # 201 bytes
        "cte/" + "è" * 101 + ".sql",  # 105 characters, 206 bytes
        "cte/" + "/".join(["d" * 150] * 7) + ".sql",  # components fine, 1000+ bytes in all
        "cte/a\x1b[2J.sql",
        "cte/a\rb.sql",
        "cte/\u202elqs.exe",
        "cte/cafe\u0301.sql",  # NFD: café twice, two artifacts
    ],
    ids=["231", "201-bytes", "utf8-bytes", "total", "esc", "cr", "bidi", "nfd"],
)
def test_a_bad_artifact_name_exits_2_and_leaves_the_ledger_byte_identical(
    cli: Cli, name: str
) -> None:
    _drive_to_cte(cli)
    before = cli.sessions()
    body = {"kind": "confirm", "artifacts": [{"name": name, "content": "SELECT 1\n"}]}
    done = cli("propose", "cte", "--file", cli.proposal(body), "--json")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == "usage"
    assert cli.sessions() == before
    assert cli("ledger", "verify").returncode == 0


def test_a_long_but_valid_artifact_name_still_works(cli: Cli) -> None:
    _drive_to_cte(cli)
    name = "cte/" + "a" * 196 + ".sql"  # a 200-byte component
    body = {"kind": "confirm", "artifacts": [{"name": name, "content": "SELECT 1\n"}]}
    assert cli.propose("cte", body)["state"] == "awaiting_human"
    assert cli("artifact", "show", name).stdout == b"SELECT 1\n"


# --- 8. exit 1 instead of 2 for deep JSON and `--file /dev/zero` --------------------------------


def _refused(cli: Cli, done: subprocess.CompletedProcess[bytes], before: dict[str, bytes]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout[:500], done.stderr[-2000:])
    assert cli.sessions() == before
    return done.stderr.decode()


def test_propose_from_dev_zero_exits_2_at_once(cli: Cli) -> None:
    before = cli.sessions()
    done = cli("propose", "disambiguation", "--file", "/dev/zero", timeout=20)
    assert "not a regular file" in _refused(cli, done, before)


def test_propose_from_a_fifo_exits_2_without_blocking(cli: Cli) -> None:
    fifo = cli.tmp / "proposal.fifo"
    os.mkfifo(fifo)
    before = cli.sessions()
    done = cli("propose", "disambiguation", "--file", str(fifo), timeout=20)
    assert "not a regular file" in _refused(cli, done, before)


def test_propose_from_a_huge_file_exits_2_without_reading_it(cli: Cli) -> None:
    huge = cli.tmp / "huge.json"
    with open(huge, "wb") as handle:  # sparse: 8 GiB claimed, nothing on disk
        handle.truncate(8 * 1024**3)
    before = cli.sessions()
    done = cli("propose", "disambiguation", "--file", str(huge), timeout=20)
    assert "larger than" in _refused(cli, done, before)


def test_propose_from_a_huge_stdin_exits_2(cli: Cli) -> None:
    before = cli.sessions()
    done = cli("propose", "disambiguation", "--file", "-", stdin=b" " * (5 * 1024 * 1024))
    assert "larger than" in _refused(cli, done, before)


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000,
        b"{" * 100_000,
        b'{"kind":"auto","events":[{"type":"concept_clarified","payload":{"meaning":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}]}",
        b'{"kind":"select","prompt":"p","options":[{"id":"a","label":"l","events":[{"type":'
        b'"concept_clarified","subject":"s","payload":{"m":'
        + b'{"a":' * 5_000
        + b"1"
        + b"}" * 5_000
        + b"}}]}]}",
    ],
    ids=["array", "object", "payload-array", "payload-object"],
)
def test_deeply_nested_json_exits_2(cli: Cli, data: bytes) -> None:
    path = cli.tmp / "deep.json"
    path.write_bytes(data)
    before = cli.sessions()
    for args in (("--file", str(path)), ("--file", "-")):
        done = cli("propose", "disambiguation", *args, stdin=data)
        assert "nested deeper than 64 levels" in _refused(cli, done, before)
