"""A workspace on the PostgreSQL store: every CLI flow works through the port (the same JSON as
on the filesystem, byte for byte), nothing lands in ``sessions/``; ``tht store init | status``;
a missing URL variable is exit 2 naming the variable, a server that is down exit 6, both with
nothing written and never the URL or its password in any output; ``tht doctor``'s store check;
the deprecated ``dsn_env``; the documented role grants; the Qdrant server by URL variable.

Real PostgreSQL (``tests/support/postgres.py``): one database for this file, one
``store.workspace`` namespace per test."""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kernel.errors import UsageError
from tests.golden.scenarios import Run, start, to_finalize
from tests.tht.conftest import Result, run_tht
from tests.tht.test_cli_golden import SELECT
from tests.tht.test_cli_golden import test_cli_json_outputs_match_their_golden_files as golden_flow

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer

QUESTION = "How many ablation procedures were performed in 2023?"
H = ("--as", "human:ann")


@pytest.fixture(scope="module")
def dsn(postgres_server: PostgresServer) -> str:
    from kernel.store.postgres import init_schema

    url = postgres_server.dsn(postgres_server.create_database("tht_store_cli"))
    init_schema(url)
    return url


def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str | None) -> Path:
    root = tmp_path / "ws"
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    monkeypatch.setenv("THT_SEED", "7")
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    for var in ("THT_ACTOR", "THT_SESSION", "THT_STORE_URL"):
        monkeypatch.delenv(var, raising=False)
    if url is not None:
        monkeypatch.setenv("THT_STORE_URL", url)
    return root


def _init(root: Path, store: str) -> None:
    assert run_tht("workspace", "init", str(root)).code == 0
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"\n{store}\n")


def _store_line(namespace: str, extra: str = "url_env: THT_STORE_URL") -> str:
    return f'store: {{kind: postgres, {extra}, workspace: "{namespace}"}}'


@pytest.fixture
def pg(tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh workspace on the server (its own namespace), THT_STORE_URL set."""
    root = _environment(monkeypatch, tmp_path, dsn)
    _init(root, _store_line(f"cli-{uuid.uuid4().hex[:12]}"))
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _no_secret(done: Result, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in done.stdout and secret not in done.stderr, secret


# ------------------------------------------------------------------ the flows, on the server


def test_the_cli_golden_session_gives_the_same_json_on_postgres(
    pg: Path, tmp_path: Path, dsn: str
) -> None:
    """The CLI contract's whole golden scenario (session new, propose, review list/show/answer,
    decision retract, stage reopen/skip, pause, resume, status, log, list, ledger verify and
    the error cases) against the server: every output byte-identical to the fs store's."""
    proposals = tmp_path / "proposals"
    proposals.mkdir()
    golden_flow(pg, run_tht, proposals, update_golden=False)
    assert list((pg / "sessions").iterdir()) == []  # everything went to the server
    status = run_tht("store", "status", "--json")
    assert status.code == 0, status.stderr
    body = status.json()
    assert (body["kind"], body["reachable"], body["sessions"], body["events"]) == (
        "postgres",
        True,
        1,
        18,  # the CLI golden session: F2 ran by itself when F1 was skipped
    )
    assert body["url_env"] == "THT_STORE_URL" and body["schema_version"] == 3
    _no_secret(status, dsn)


def test_a_session_is_finalized_verified_and_read_back_on_postgres(pg: Path) -> None:
    from tht.composition import open_app

    app = open_app(pg)
    run = Run(app.kernel, app.workspace)
    start(run)
    to_finalize(run)
    session = run.session
    done = run_tht("session", "finalize", session, *H, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["lifecycle"] == "finalized"
    report = run_tht("artifact", "show", "report.md", session)
    assert report.code == 0 and report.stdout.startswith("#")
    verified = run_tht("ledger", "verify", session, "--json")
    assert verified.code == 0 and verified.json()["ok"] is True
    log = run_tht("session", "log", session, "--json")
    assert log.json()[-1]["type"] == "session_finalized"
    assert run_tht("session", "status", session, "--json").json()["lifecycle"] == "finalized"
    refused = run_tht("session", "pause", session, *H)
    assert refused.code == 5
    assert list((pg / "sessions").iterdir()) == []


def test_analytics_reads_the_session_ledgers_through_the_store(pg: Path, tmp_path: Path) -> None:
    session = run_tht("session", "new", QUESTION, "--json").json()["session"]
    db = str(tmp_path / "analytics.sqlite")
    first = run_tht("analytics", "scan", "--sessions", str(pg), "--db", db, "--json")
    assert first.code == 0, first.stderr
    (source,) = first.json()["sources"]
    assert (source["kind"], source["action"], source["imported"]) == ("session_ledger", "new", 4)
    again = run_tht("analytics", "scan", "--sessions", str(pg), "--db", db, "--json")
    assert again.json()["sources"][0]["action"] == "unchanged"
    assert run_tht("session", "pause", session, *H).code == 0
    more = run_tht("analytics", "scan", "--sessions", str(pg), "--db", db, "--json")
    assert (more.json()["sources"][0]["action"], more.json()["imported"]) == ("append", 1)


# ------------------------------------------------------------------ store init / status


def test_store_init_applies_the_schema_once_and_is_human_only(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_server.dsn(postgres_server.create_database("tht_store_cli_init"))
    root = _environment(monkeypatch, tmp_path, url)
    _init(root, _store_line("init"))
    before = run_tht("session", "list", "--json")
    assert before.code == 2 and "tht store init" in before.stderr  # no tables yet
    status = run_tht("store", "status", "--json")
    assert status.code == 2 and status.json()["schema_version"] == 0
    assert "tht store init" in status.json()["error"]
    assert run_tht("store", "init").code == 2  # --as is required
    monkeypatch.setenv("THT_ACTOR", "agent")
    assert run_tht("store", "init", *H).code == 5
    monkeypatch.delenv("THT_ACTOR")
    first = run_tht("store", "init", *H, "--json")
    assert first.code == 0, first.stderr
    assert first.json() == {
        "kind": "postgres",
        "applied": ["0001_ledgers_objects_caches", "0002_outbox", "0003_write_rules"],
        "schema_version": 3,
        "by": "human:ann",
    }
    second = run_tht("store", "init", *H, "--json")
    assert second.json()["applied"] == []
    assert run_tht("session", "list", "--json").code == 0
    _no_secret(first, url, postgres_server.password)


def test_store_status_on_the_fs_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _environment(monkeypatch, tmp_path, None)
    assert run_tht("workspace", "init", str(root)).code == 0
    run_tht("session", "new", QUESTION)
    body = run_tht("store", "status", "--json").json()
    assert body == {
        "kind": "fs",
        "reachable": True,
        "schema_version": None,
        "sessions": 1,
        "events": 4,
        "workspace_ledgers": {"catalog": 0, "memory": 0},
    }
    assert run_tht("store", "init", *H, "--json").json()["applied"] == []


# ------------------------------------------------------------------ failures write nothing

_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("session", "new", QUESTION),
    ("session", "list"),
    ("session", "status", "01KDVDNA004TFF59TDWH9EDD1R"),
    ("session", "log", "01KDVDNA004TFF59TDWH9EDD1R"),
    ("session", "pause", "01KDVDNA004TFF59TDWH9EDD1R", *H),
    ("ledger", "verify", "--all"),
    ("store", "status"),
    ("store", "init", *H),
)


def test_an_unset_url_variable_is_exit_2_naming_it_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _environment(monkeypatch, tmp_path, None)
    _init(root, _store_line("unset", "url_env: TEAM_STORE_URL"))
    before = _files(root)
    for argv in _COMMANDS:
        done = run_tht(*argv, "--json")
        assert done.code == 2, (argv, done.stderr)
        assert "TEAM_STORE_URL" in done.stderr and "store.kind" in done.stderr, argv
        assert done.json()["error"]["details"] == {"variable": "TEAM_STORE_URL"}
    assert _files(root) == before


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: nothing listens there


def test_a_server_that_is_down_is_exit_6_without_the_url_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = "s3cret-Pa55"
    url = f"postgresql://tht:{password}@127.0.0.1:{_closed_port()}/team?connect_timeout=3"
    root = _environment(monkeypatch, tmp_path, url)
    _init(root, _store_line("down"))
    before = _files(root)
    for argv in _COMMANDS:
        done = run_tht(*argv, "--json")
        assert done.code == 6, (argv, done.stderr)
        _no_secret(done, url, password, "tht:")
        assert "Traceback" not in done.stderr
    status = run_tht("store", "status", "--json")
    assert status.json()["reachable"] is False  # the report, then exit 6
    doctor = run_tht("doctor", "--json")
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert checks["store"]["verdict"] == "fail" and doctor.json()["ok"] is False
    assert checks["sessions"]["verdict"] == "warn"  # not reported as an integrity failure
    _no_secret(doctor, url, password)
    assert _files(root) == before


def test_a_url_written_into_the_settings_is_refused_and_never_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "postgresql://tht:hunter2@db.internal:5432/team"
    root = _environment(monkeypatch, tmp_path, None)
    assert run_tht("workspace", "init", str(root)).code == 0
    base = (root / "workspace.yaml").read_text()
    for entry, field in (
        (f'store: {{kind: "{secret}"}}', "store.kind"),
        (f'store: {{kind: postgres, url_env: "{secret}"}}', "store.url_env"),
        (f'store:\n  kind: postgres\n  dsn_env: "{secret}"', "store.dsn_env"),
        (f'vector_store: {{kind: server, url_env: "{secret}"}}', "vector_store.url_env"),
    ):
        text = base.replace("vector_store:\n  kind: edge", "") if "vector" in entry else base
        (root / "workspace.yaml").write_text(text + "\n" + entry + "\n")
        done = run_tht("session", "new", QUESTION, "--json")
        assert done.code == 2 and field in done.stderr, (entry, done.stderr)
        _no_secret(done, "hunter2", "db.internal")
        doctor = run_tht("doctor", "--json")
        _no_secret(doctor, "hunter2", "db.internal")


def test_an_unknown_store_kind_is_exit_2_never_the_fs_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _environment(monkeypatch, tmp_path, None)
    _init(root, "store:\n  kind: mysql  # not one")
    done = run_tht("session", "new", QUESTION, "--json")
    assert done.code == 2 and "store.kind" in done.stderr and "'mysql'" in done.stderr
    assert list((root / "sessions").iterdir()) == []


# ------------------------------------------------------------------ doctor, dsn_env, roles


def test_doctor_checks_reachability_and_the_schema_version(
    pg: Path, tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = run_tht("doctor", "--json")
    checks = {c["name"]: c for c in done.json()["checks"]}
    assert checks["store"]["verdict"] == "ok", checks["store"]
    assert "reachable, schema version 3" in checks["store"]["detail"]
    assert checks["sessions"]["verdict"] == "ok"
    empty = postgres_server.dsn(postgres_server.create_database("tht_store_cli_empty"))
    monkeypatch.setenv("THT_STORE_URL", empty)
    stale = run_tht("doctor", "--json")
    store = next(c for c in stale.json()["checks"] if c["name"] == "store")
    assert stale.code == 2 and store["verdict"] == "fail" and "schema version 0" in store["detail"]
    assert store["fix"] == "tht store init --as human:ID"
    _no_secret(stale, empty, postgres_server.password)


def test_dsn_env_is_still_accepted_as_the_old_name_of_url_env(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _environment(monkeypatch, tmp_path, None)
    monkeypatch.setenv("OLD_PG_DSN", dsn)
    _init(root, _store_line(f"dsn-{uuid.uuid4().hex[:8]}", "dsn_env: OLD_PG_DSN"))
    done = run_tht("session", "new", QUESTION, "--json")
    assert done.code == 0, done.stderr
    assert list((root / "sessions").iterdir()) == []
    both = _store_line("x", "url_env: A_URL, dsn_env: OLD_PG_DSN")
    (root / "workspace.yaml").write_text((root / "workspace.yaml").read_text() + f"\n{both}\n")
    assert run_tht("session", "list").code == 2


def _documented_roles_sql() -> tuple[list[str], list[str]]:
    """The SQL block of docs/operations.md, split at its ``-- after `tht store init`:`` line."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    block = doc.split("```sql\n", 1)[1].split("```", 1)[0]
    before, after = block.split("-- after `tht store init`:", 1)

    def statements(text: str) -> list[str]:
        lines = [line.split("--", 1)[0] for line in text.splitlines()]
        return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]

    return statements(before), statements(after)


def test_the_documented_roles_are_enough_and_the_everyday_one_creates_nothing(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/operations.md's recipe, verbatim: an owner role runs `tht store init`, the
    everyday role (SELECT, INSERT, UPDATE; DELETE on the events; USAGE on sequences) runs a
    session, a review and a human's repair — and cannot create a table."""
    db = postgres_server.create_database("tht_store_cli_roles")
    before, after = _documented_roles_sql()
    for statement in before:
        postgres_server.execute(db, statement.replace("'…'", "'pw'"))
    owner = postgres_server.dsn(db, user="tht_store_owner", password="pw")
    everyday = postgres_server.dsn(db, user="tht_store", password="pw")
    root = _environment(monkeypatch, tmp_path, owner)
    _init(root, _store_line("roles"))
    assert run_tht("store", "init", *H).code == 0
    for statement in after:
        postgres_server.execute(db, statement)
    monkeypatch.setenv("THT_STORE_URL", everyday)
    proposal = tmp_path / "select.json"
    proposal.write_text(json.dumps(SELECT))
    session = run_tht("session", "new", QUESTION, "--json").json()["session"]
    review = run_tht("propose", "disambiguation", "--file", str(proposal), session, "--json")
    assert review.code == 0, review.stderr
    seq = str(review.json()["review"])
    answered = run_tht("review", "answer", seq, session, "--choose", "flag", *H, "--json")
    assert answered.code == 0, answered.stderr
    assert run_tht("ledger", "verify", session, "--json").json()["ok"] is True
    from kernel.store.postgres import connect_store

    store = connect_store(everyday, workspace="roles")
    last = store.ledger(session).tail().last_seq
    cut = store.ledger(session).repair(cut_seq=last)  # what `verify --repair` runs: DELETE
    assert cut.last_seq < last and cut.moved  # the whole last batch went to quarantine
    store.close()
    import psycopg

    with psycopg.connect(everyday, autocommit=True) as conn, pytest.raises(psycopg.Error):
        conn.execute("CREATE TABLE tht_more (x int)")


# ------------------------------------------------------------------ the Qdrant server by URL


def _vector_workspace(tmp_path: Path, entry: str) -> object:
    from kernel.workspace import init_workspace

    workspace, _ = init_workspace(tmp_path / "vws", name="Team Shop")
    text = workspace.settings_file.read_text(encoding="utf-8")
    workspace.settings_file.write_text(text.replace("vector_store:\n  kind: edge", entry))
    return workspace


def test_the_qdrant_server_url_comes_from_the_environment(tmp_path: Path) -> None:
    from kernel.vectors.factory import open_vector_store
    from kernel.vectors.qdrant_server import QdrantServerVectorStore

    url = "https://qdrant.internal:6333"
    workspace = _vector_workspace(
        tmp_path,
        "vector_store:\n  kind: server\n  url_env: THT_QDRANT_URL\n  api_key_env: THT_QDRANT_KEY",
    )
    store = open_vector_store(
        workspace,  # type: ignore[arg-type]
        environ={"THT_QDRANT_URL": url, "THT_QDRANT_KEY": "k"},
    )
    assert isinstance(store, QdrantServerVectorStore)
    assert store.collection == "tht_team_shop"
    assert url not in store._where and "THT_QDRANT_URL" in store._where
    with pytest.raises(UsageError, match="THT_QDRANT_URL") as unset:
        open_vector_store(workspace, environ={"THT_QDRANT_KEY": "k"})  # type: ignore[arg-type]
    assert "vector_store.url_env" in unset.value.message


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("vector_store: {kind: server, url: 'http://a:6333', url_env: B}", "vector_store.url_env"),
        ("vector_store: {kind: server}", "vector_store.url"),
    ],
)
def test_a_qdrant_server_needs_exactly_one_of_url_and_url_env(
    tmp_path: Path, entry: str, field: str
) -> None:
    from kernel.vectors.factory import open_vector_store

    workspace = _vector_workspace(tmp_path, entry)
    with pytest.raises(UsageError, match=field.replace(".", r"\.")):
        open_vector_store(workspace, environ={"B": "http://b:6333"})  # type: ignore[arg-type]


def test_a_qdrant_url_in_the_file_still_works(tmp_path: Path) -> None:
    from kernel.vectors.factory import open_vector_store

    workspace = _vector_workspace(tmp_path, "vector_store: {kind: server, url: 'http://a:6333'}")
    store = open_vector_store(workspace, environ={})  # type: ignore[arg-type]
    assert store.collection == "tht_team_shop"  # type: ignore[attr-defined]
