"""``tht store migrate``: fs → postgres → fs is byte for byte, verified before the switch,
resumable after an interruption (an injected failure, a SIGKILL), refused for a damaged source
(exit 7) or a diverging target (exit 4), and the switch edits only ``store:`` in workspace.yaml.

Every test runs against the real PostgreSQL server of ``tests/support/postgres.py`` (one
database for this file, one ``store.workspace`` namespace per test)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kernel import catalog_events as cev
from kernel import events as ev
from kernel.clock import FixedClock
from kernel.errors import ConflictError
from kernel.store.fs import FileSystemStore
from tests.golden.scenarios import SCENARIOS, Run, make_kernel
from tests.tht.conftest import Result, run_tht
from tht import store_runtime
from tht.store_switch import switched_text

if TYPE_CHECKING:
    from kernel.store.base import SessionStore
    from tests.support.postgres import PostgresServer

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sessions"
H = ("--as", "human:ann")
ROUND_TRIP = sorted(name for name in SCENARIOS if name != "torn_tail")


@pytest.fixture(scope="module")
def dsn(postgres_server: PostgresServer) -> str:
    from kernel.store.postgres import init_schema

    url = postgres_server.dsn(postgres_server.create_database("tht_store_migrate"))
    init_schema(url)
    return url


@pytest.fixture
def env(tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {
        "THT_WORKSPACE": str(tmp_path / "ws"),
        "THT_STORE_URL": dsn,
        "THT_HOME": str(tmp_path / "home"),
        "THT_CLOCK": "fixed:2026-01-01T00:00:00Z",
        "THT_SEED": "7",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    for var in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(var, raising=False)
    return values


def _namespace() -> str:
    return f"migrate-{uuid.uuid4().hex[:12]}"


def _sync_started(run: str) -> ev.EventDraft:
    return ev.EventDraft(
        type="catalog_sync_started",
        actor="module:catalog",
        subject=run,
        payload=cev.CatalogSyncStartedPayload(run=run, binding="sqlite:///x.db", dialect="sqlite"),
    )


def _scenario(root: Path, name: str, namespace: str) -> Run:
    """An fs workspace holding a golden scenario's session(s) and a catalog ledger with an
    object, its store namespaced by ``namespace`` on the server (still kind fs)."""
    run = make_kernel(root)
    SCENARIOS[name](run)
    store = run.kernel.store
    store.put_workspace_object("catalog", b'{"tables": ["procedures"]}')
    catalog = store.workspace_ledger("catalog")
    catalog.append([_sync_started("01RUN")], expected_last_seq=0, clock=FixedClock())
    catalog.append([_sync_started("02RUN")], expected_last_seq=1, clock=FixedClock())
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f'\n# the store\nstore: {{kind: fs, workspace: "{namespace}"}}  # moved later\n')
    return run


def _tree(root: Path) -> dict[str, bytes]:
    """What the fs store holds: sessions/ and catalog/, lock files aside."""
    files = {}
    for top in ("sessions", "catalog"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and not path.name.endswith(".lock"):
                files[str(path.relative_to(root))] = path.read_bytes()
    return files


def _pg(dsn: str, namespace: str) -> SessionStore:
    from kernel.store.postgres import connect_store

    store: SessionStore = connect_store(dsn, workspace=namespace)
    return store


def _migrate(to: str, *extra: str) -> Result:
    return run_tht("store", "migrate", "--to", to, *H, *extra, "--json")


def _kind(root: Path) -> Any:
    return yaml.safe_load((root / "workspace.yaml").read_text())["store"]["kind"]


# ------------------------------------------------------------------ the round trip


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_golden_sessions_go_to_postgres_and_back_byte_for_byte(
    name: str, tmp_path: Path, env: dict[str, str], dsn: str
) -> None:
    root = tmp_path / "ws"
    namespace = _namespace()
    run = _scenario(root, name, namespace)
    before = _tree(root)
    settings_before = (root / "workspace.yaml").read_text()
    session = (GOLDEN / name / "session.txt").read_text().strip()
    assert (
        before[f"sessions/{session}/ledger.jsonl"] == (GOLDEN / name / "ledger.jsonl").read_bytes()
    )

    up = _migrate("postgres")
    assert up.code == 0, up.stderr
    body = up.json()
    sessions = len(run.kernel.session_ids())
    assert (body["from"], body["to"], body["switched"]) == ("fs", "postgres", True)
    assert body["sessions"] == sessions and body["workspace_ledgers"] == 1
    assert body["events"] == body["copied"]["events"] > 0
    assert body["objects"] == body["copied"]["objects"] > 0
    text = (root / "workspace.yaml").read_text()
    assert (
        text.replace(
            f'store: {{kind: postgres, workspace: "{namespace}", url_env: THT_STORE_URL}}',
            f'store: {{kind: fs, workspace: "{namespace}"}}',
        )
        == settings_before
    )  # only the store entry changed, its comment kept
    assert dsn not in text
    pg = _pg(dsn, namespace)
    assert pg.session_ids() == run.kernel.session_ids()
    for sid in pg.session_ids():
        assert pg.ledger(sid).verify().ok

    # the CLI now reads the server: the same status as the fs store had
    status = run_tht("session", "status", session, "--json")
    assert status.code == 0, status.stderr
    assert status.json()["head"] == run.kernel.load(session).head

    # back to an empty fs store: every file as it was
    aside = tmp_path / "aside"
    aside.mkdir()
    for top in ("sessions", "catalog"):
        (root / top).rename(aside / top)
    down = _migrate("fs")
    assert down.code == 0, down.stderr
    assert (down.json()["switched"], _kind(root)) == (True, "fs")
    assert _tree(root) == before
    assert (root / "workspace.yaml").read_text() == settings_before.replace(
        f'{{kind: fs, workspace: "{namespace}"}}',
        f'{{kind: fs, workspace: "{namespace}", url_env: THT_STORE_URL}}',
    )
    again = _migrate("postgres")  # a second trip finds everything there: nothing copied
    assert again.code == 0, again.stderr
    assert again.json()["copied"] == {"events": 0, "objects": 0}
    assert again.json()["skipped_ledgers"] == sessions + 1


def test_events_added_on_postgres_come_back_onto_the_old_fs_files(
    tmp_path: Path, env: dict[str, str], dsn: str
) -> None:
    """The fs files left behind are a prefix of the server's ledger: going back appends only
    what was added meanwhile (the resumable path)."""
    root = tmp_path / "ws"
    namespace = _namespace()
    run = _scenario(root, "retraction", namespace)
    session = run.session
    assert _migrate("postgres").code == 0
    paused = run_tht("session", "pause", session, *H, "--json")
    assert paused.code == 0, paused.stderr
    assert (root / "sessions" / session / "ledger.jsonl").read_bytes().count(b"\n") == 15
    down = _migrate("fs")
    assert down.code == 0, down.stderr
    assert down.json()["copied"]["events"] == 1
    lines = _pg(dsn, namespace).ledger(session).lines_after(0, 0)
    assert lines is not None
    assert (root / "sessions" / session / "ledger.jsonl").read_bytes() == b"".join(
        line + b"\n" for line in lines
    )
    assert run_tht("ledger", "verify", session, "--json").json()["ok"] is True


def test_a_dry_run_writes_nothing_anywhere(tmp_path: Path, env: dict[str, str], dsn: str) -> None:
    root = tmp_path / "ws"
    namespace = _namespace()
    _scenario(root, "happy_path", namespace)
    before = (root / "workspace.yaml").read_bytes()
    done = _migrate("postgres", "--dry-run")
    assert done.code == 0, done.stderr
    body = done.json()
    assert (body["dry_run"], body["switched"], body["sessions"]) == (True, False, 1)
    assert body["copied"]["events"] == body["events"] == 54 + 2
    assert (root / "workspace.yaml").read_bytes() == before
    assert _pg(dsn, namespace).session_ids() == []


# ------------------------------------------------------------------ refusals


def test_a_tampered_source_ledger_is_refused_before_anything_is_copied(
    tmp_path: Path, env: dict[str, str], dsn: str
) -> None:
    root = tmp_path / "ws"
    namespace = _namespace()
    run = _scenario(root, "happy_path", namespace)
    path = root / "sessions" / run.session / "ledger.jsonl"
    data = path.read_bytes()
    assert b"flag_ablazione" in data
    path.write_bytes(data.replace(b"flag_ablazione", b"flag_ablaziome", 1))  # an edited line
    before = (root / "workspace.yaml").read_bytes()
    done = _migrate("postgres")
    assert done.code == 7, done.stderr
    assert done.json()["error"]["code"] == "integrity"
    assert f"session {run.session} does not verify" in done.stderr
    assert (root / "workspace.yaml").read_bytes() == before
    assert _pg(dsn, namespace).session_ids() == []
    assert dsn not in done.stdout + done.stderr


def test_a_torn_source_ledger_is_refused_until_a_human_repairs_it(
    tmp_path: Path, env: dict[str, str], dsn: str
) -> None:
    root = tmp_path / "ws"
    _scenario(root, "torn_tail", _namespace())
    done = _migrate("postgres")
    assert done.code == 7 and "torn_tail" in done.stderr
    assert _kind(root) == "fs"


def test_an_altered_object_stops_the_copy_and_nothing_is_switched(
    tmp_path: Path, env: dict[str, str]
) -> None:
    root = tmp_path / "ws"
    run = _scenario(root, "happy_path", _namespace())
    victim = next((root / "sessions" / run.session / "objects").rglob("*"))
    while victim.is_dir():
        victim = next(victim.iterdir())
    victim.write_bytes(b"altered")
    done = _migrate("postgres")
    assert done.code == 7, done.stderr
    assert _kind(root) == "fs"


def test_a_target_that_diverges_from_the_source_is_refused(
    tmp_path: Path, env: dict[str, str], dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two golden scenarios share a session id (seeded ids): the second workspace finds the
    first one's session under that id on the server, with other events."""
    namespace = _namespace()
    first = _scenario(tmp_path / "a", "retraction", namespace)
    monkeypatch.setenv("THT_WORKSPACE", str(tmp_path / "a"))
    assert _migrate("postgres").code == 0
    second = _scenario(tmp_path / "b", "pause_resume", namespace)
    assert second.session == first.session
    monkeypatch.setenv("THT_WORKSPACE", str(tmp_path / "b"))
    before = (tmp_path / "b" / "workspace.yaml").read_bytes()
    done = _migrate("postgres")
    assert done.code == 4, done.stderr
    assert "diverges" in done.stderr and first.session in done.stderr
    assert (tmp_path / "b" / "workspace.yaml").read_bytes() == before
    assert _pg(dsn, namespace).ledger(first.session).tail().last_seq == 15  # untouched


def test_migrating_to_the_store_in_use_is_a_usage_error(
    env: dict[str, str], tmp_path: Path
) -> None:
    _scenario(tmp_path / "ws", "pause_resume", _namespace())
    done = _migrate("fs")
    assert done.code == 2 and "already uses the fs store" in done.stderr


def test_an_agent_cannot_migrate(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scenario(tmp_path / "ws", "pause_resume", _namespace())
    monkeypatch.setenv("THT_ACTOR", "agent")
    assert _migrate("postgres").code == 5
    assert _kind(tmp_path / "ws") == "fs"


# ------------------------------------------------------------------ interruptions


_REAL_CHUNKS = store_runtime._chunks


def _failing_chunks(after: int, failure: BaseException | None) -> Any:
    """``store_runtime._chunks`` that stops the process (or raises) after ``after`` chunks."""
    real = _REAL_CHUNKS
    count = {"chunks": 0}

    def chunks(lines: Any) -> Iterator[list[bytes]]:
        for chunk in real(lines):
            if count["chunks"] == after:
                if failure is None:
                    os.kill(os.getpid(), signal.SIGKILL)
                raise failure
            count["chunks"] += 1
            yield chunk

    return chunks


def test_an_interrupted_migration_resumes_from_the_target_tail(
    tmp_path: Path, env: dict[str, str], dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    namespace = _namespace()
    run = _scenario(root, "happy_path", namespace)
    before = _tree(root)
    monkeypatch.setattr(store_runtime, "CHUNK_LINES", 5)
    monkeypatch.setattr(store_runtime, "_chunks", _failing_chunks(3, RuntimeError("power cut")))
    broken = _migrate("postgres")
    assert broken.code == 1 and "power cut" in broken.stderr
    assert _kind(root) == "fs"
    partial = _pg(dsn, namespace).ledger(run.session)
    copied = partial.tail().last_seq
    assert 15 <= copied < 54 and partial.verify().ok  # whole batches only: never torn
    monkeypatch.setattr(store_runtime, "_chunks", _REAL_CHUNKS)
    done = _migrate("postgres")
    assert done.code == 0, done.stderr
    body = done.json()
    assert (body["events"], body["switched"]) == (54 + 2, True)
    assert body["copied"]["events"] == 54 + 2 - copied  # the rest only
    assert _pg(dsn, namespace).ledger(run.session).tail().last_seq == 54
    (root / "sessions").rename(tmp_path / "old-sessions")
    (root / "catalog").rename(tmp_path / "old-catalog")
    assert _migrate("fs").code == 0
    assert _tree(root) == before


def test_a_migration_killed_mid_ledger_resumes(
    tmp_path: Path, env: dict[str, str], dsn: str
) -> None:
    """A real SIGKILL of the migrating process (no handler runs) half-way through a ledger."""
    root = tmp_path / "ws"
    namespace = _namespace()
    run = _scenario(root, "happy_path", namespace)
    probe = (
        "import sys\n"
        "from tests.tht.test_store_migrate import _failing_chunks\n"
        "from tht import store_runtime\n"
        "from tht.cli import main\n"
        "store_runtime.CHUNK_LINES = 4\n"
        "store_runtime._chunks = _failing_chunks(2, None)\n"
        "main(['store', 'migrate', '--to', 'postgres', '--as', 'human:ann'])\n"
    )
    killed = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **env},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _kind(root) == "fs"
    copied = _pg(dsn, namespace).ledger(run.session).tail().last_seq
    assert 0 < copied < 54
    done = _migrate("postgres")
    assert done.code == 0, done.stderr
    assert done.json()["copied"]["events"] == 54 + 2 - copied
    assert _pg(dsn, namespace).ledger(run.session).verify().ok


def test_a_source_that_moves_during_the_copy_is_not_switched(tmp_path: Path, dsn: str) -> None:
    """A writer appending to the source while it is copied: the proof before the switch sees
    the source's tail move and refuses (exit 4)."""
    run = _scenario(tmp_path / "ws", "pause_resume", _namespace())
    source: FileSystemStore = run.kernel.store  # type: ignore[assignment]
    target = _pg(dsn, _namespace())

    def writer(label: str) -> None:  # called after each ledger is copied
        if label == f"session {run.session}":
            run.kernel.resume(run.session, actor="human:ann")  # the scenario ends paused

    with pytest.raises(ConflictError, match="changed on the source"):
        store_runtime.migrate(source, target, names=("fs", "postgres"), progress=writer)


# ------------------------------------------------------------------ the workspace.yaml edit

_OTHER = st.sampled_from(
    [
        "# a comment",
        "name: shop",
        "languages: [it, en]",
        "scope:\n  description: x  # kept\n  refuse: []",
        "",
        "human_decisions: unsigned",
    ]
)
_ENTRY = st.sampled_from(
    [
        "store: {kind: fs}",
        "store: {kind: 'fs', workspace: \"a, b\"}  # mine",
        "store:\n  kind: fs\n",
        "store:\n  kind: fs  # c\n  url_env: MY_URL\n\n  # trailing",
        "store:\n  workspace: team",
        None,
    ]
)


@given(before=st.lists(_OTHER, max_size=4), entry=_ENTRY, after=st.lists(_OTHER, max_size=4))
def test_switching_edits_only_the_store_entry(
    before: list[str], entry: str | None, after: list[str]
) -> None:
    parts = [*before, *([entry] if entry else []), *after]
    text = "\n".join(parts) + "\n"
    values = {"kind": "postgres", "url_env": "THT_STORE_URL", "workspace": '"team"'}
    new = switched_text(text, values, source="workspace.yaml")
    old_data, new_data = yaml.safe_load(text) or {}, yaml.safe_load(new)
    assert new_data["store"] == {
        **(old_data.get("store") or {}),
        "kind": "postgres",
        "url_env": "THT_STORE_URL",
        "workspace": "team",
    }
    assert {k: v for k, v in new_data.items() if k != "store"} == {
        k: v for k, v in old_data.items() if k != "store"
    }
    # every line outside the entry is kept, in order, comments included
    if before:
        assert new.startswith("\n".join(before) + "\n")
    if entry and after:
        assert new.endswith("\n".join(after) + "\n")
    back = switched_text(new, {"kind": "fs"}, source="workspace.yaml")
    assert yaml.safe_load(back)["store"]["kind"] == "fs"


@pytest.mark.parametrize(
    "entry",
    ["store: &s {kind: fs}", "store: {kind: [fs]}", "store:\n  kind:\n    nested: 1", "store: fs"],
)
def test_a_store_entry_in_another_shape_is_refused_before_copying(
    entry: str, tmp_path: Path, env: dict[str, str], dsn: str
) -> None:
    root = tmp_path / "ws"
    run = make_kernel(root)
    text = (root / "workspace.yaml").read_text()
    (root / "workspace.yaml").write_text(text + "\n" + entry + "\n")
    done = _migrate("postgres")
    assert done.code == 2, done.stderr
    assert run.kernel.session_ids() == []


def test_json_summary_has_the_documented_keys(tmp_path: Path, env: dict[str, str]) -> None:
    _scenario(tmp_path / "ws", "pause_resume", _namespace())
    body = json.loads(_migrate("postgres", "--dry-run").stdout)
    assert {"from", "to", "sessions", "events", "objects", "workspace_ledgers", "switched"} <= set(
        body
    )


def test_a_workspace_without_a_store_entry_gets_one_with_its_pinned_namespace(
    tmp_path: Path, env: dict[str, str], dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"Team Shop {uuid.uuid4().hex[:8]}"
    root = tmp_path / "team"
    run = make_kernel(root)
    text = (root / "workspace.yaml").read_text()
    (root / "workspace.yaml").write_text(text.replace('name: "team"', f'name: "{name}"'))
    SCENARIOS["pause_resume"](run)
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("TEAM_PG", dsn)
    refused = _migrate("postgres", "--url-env", dsn)
    assert refused.code == 2 and "--url-env" in refused.stderr
    assert dsn not in refused.stdout + refused.stderr
    done = _migrate("postgres", "--url-env", "TEAM_PG")
    assert done.code == 0, done.stderr
    namespace = store_runtime.namespace_of(name)
    assert namespace == name.replace(" ", "-")
    after = (root / "workspace.yaml").read_text()
    assert after.startswith(text.replace('name: "team"', f'name: "{name}"'))
    assert after.endswith(
        f'\nstore:\n  kind: postgres\n  url_env: TEAM_PG\n  workspace: "{namespace}"\n'
    )
    assert _pg(dsn, namespace).session_ids() == [run.session]
    assert run_tht("session", "status", run.session, "--json").code == 0


@pytest.mark.parametrize(
    ("name", "namespace"),
    [("shop", "shop"), ("Scuole della California", "Scuole-della-California"), ("__", "workspace")],
)
def test_the_default_namespace_is_the_name_as_a_store_id(name: str, namespace: str) -> None:
    from kernel.store.postgres import WORKSPACE_ID

    assert store_runtime.namespace_of(name) == namespace
    assert WORKSPACE_ID.match(store_runtime.namespace_of(name * 40))
