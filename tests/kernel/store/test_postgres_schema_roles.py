"""The PostgreSQL store's schema and docs/operations.md's two roles
(kernel/store/postgres_schema.py): the everyday role, with only the documented grants, runs
``tht store init`` on a current store (``applied: []``, no DDL, nothing changed) and
``tht store migrate --to postgres`` onto a store the owner initialised; on a store that needs a
migration it is refused with exit 5, naming the owner role, and the schema is left as it was;
the owner role still applies what is missing.

Real PostgreSQL (``tests/support/postgres.py``): a database per test, the documented SQL block
run as written, with role names of its own (roles are the whole cluster's: the CLI suite creates
``tht_store_owner`` and ``tht_store`` themselves)."""

from __future__ import annotations

import itertools
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from kernel.clock import FixedClock
from kernel.errors import PolicyError
from kernel.store import postgres_schema
from kernel.store.postgres import PostgresStore, init_schema, schema_version
from kernel.store.postgres_schema import LATEST, MIGRATIONS
from tests.support.postgres import PostgresServer
from tests.support.store_drafts import SESSION, created, receipt

DOC = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
ALL = ["0001_ledgers_objects_caches", "0002_outbox", "0003_write_rules"]
PASSWORD = "role-pw"  # a test server's throw-away roles, on 127.0.0.1 only
_numbers = itertools.count()


@dataclass(frozen=True)
class Roles:
    db: str
    owner: str  # the role names
    everyday: str
    owner_dsn: str
    everyday_dsn: str
    after_init: list[str]  # the block's statements for after `tht store init`


def _documented_block() -> tuple[list[str], list[str]]:
    """docs/operations.md's SQL block, split at its ``-- after `tht store init`:`` line (as
    tests/tht/test_store_cli.py reads it)."""
    block = DOC.read_text(encoding="utf-8").split("```sql\n", 1)[1].split("```", 1)[0]
    before, after = block.split("-- after `tht store init`:", 1)

    def statements(text: str) -> list[str]:
        lines = [line.split("--", 1)[0] for line in text.splitlines()]
        return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]

    return statements(before), statements(after)


def _roles(server: PostgresServer) -> Roles:
    """A new database set up by the documented block (its part before `tht store init`)."""
    n = f"{next(_numbers)}_{uuid.uuid4().hex[:8]}"
    db = server.create_database(f"tht_store_roles_{n}")
    owner, everyday = f"tht_roles_owner_{n}", f"tht_roles_everyday_{n}"

    def renamed(sql: str) -> str:
        sql = re.sub(r"\btht_store_owner\b", owner, sql)
        return re.sub(r"\btht_store\b", everyday, sql).replace("'…'", f"'{PASSWORD}'")

    before, after = _documented_block()
    assert before and after
    for statement in before:
        server.execute(db, renamed(statement))
    return Roles(
        db=db,
        owner=owner,
        everyday=everyday,
        owner_dsn=server.dsn(db, user=owner, password=PASSWORD),
        everyday_dsn=server.dsn(db, user=everyday, password=PASSWORD),
        after_init=[renamed(s) for s in after],
    )


def _owner_init(
    server: PostgresServer, roles: Roles, monkeypatch: pytest.MonkeyPatch, *, up_to: int
) -> None:
    """The owner's `tht store init` of a tht whose last migration is ``up_to``, then the
    block's grants for after it (none when ``up_to`` is 0: the owner never ran it)."""
    if up_to == 0:
        return
    with monkeypatch.context() as patch:
        patch.setattr(postgres_schema, "MIGRATIONS", MIGRATIONS[:up_to])
        assert init_schema(roles.owner_dsn) == ALL[:up_to]
    for statement in roles.after_init:
        server.execute(roles.db, statement)


def _schema(server: PostgresServer, db: str) -> dict[str, list[tuple[Any, ...]]]:
    """What a migration would change, read as the superuser: the recorded migrations (with
    when), every relation of ``public`` with its owner, every constraint, every domain."""
    found = server.execute(db, "SELECT to_regclass('tht_schema_migrations') IS NOT NULL")
    recorded = (
        server.execute(db, "SELECT version, name, applied_at FROM tht_schema_migrations ORDER BY 1")
        if found[0][0]
        else []
    )
    return {
        "migrations": recorded,
        "relations": server.execute(
            db,
            "SELECT c.relname::text, c.relkind::text, pg_get_userbyid(c.relowner)::text "
            "FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace ORDER BY 1",
        ),
        "constraints": server.execute(
            db,
            "SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE connamespace = 'public'::regnamespace ORDER BY 1",
        ),
        "domains": server.execute(
            db,
            "SELECT typname::text FROM pg_type "
            "WHERE typnamespace = 'public'::regnamespace AND typtype = 'd' ORDER BY 1",
        ),
    }


def _use(dsn: str, workspace: str) -> None:
    """A session created and two appends: the store works for that role."""
    store = PostgresStore(dsn, workspace=workspace)
    try:
        store.create_session(SESSION, b"workflow: yes\n")
        ledger = store.ledger(SESSION)
        ledger.append([created()], expected_last_seq=0, clock=FixedClock())
        ledger.append([receipt("r0")], expected_last_seq=1, clock=FixedClock())
        assert ledger.tail().last_seq == 2 and ledger.verify().ok
    finally:
        store.close()


# ------------------------------------------------------------------ the kernel's init_schema


def test_the_everyday_role_runs_init_on_a_current_store_and_nothing_changes(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    roles = _roles(postgres_server)
    _owner_init(postgres_server, roles, monkeypatch, up_to=LATEST)
    before = _schema(postgres_server, roles.db)
    assert [row[1] for row in before["migrations"]] == [m.name for m in MIGRATIONS]
    assert init_schema(roles.everyday_dsn) == []
    assert init_schema(roles.everyday_dsn) == []
    assert _schema(postgres_server, roles.db) == before
    assert schema_version(roles.everyday_dsn) == LATEST
    _use(roles.everyday_dsn, "everyday")
    with (
        psycopg.connect(roles.everyday_dsn, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):  # still the role of the docs: it may not create a table
        conn.execute("CREATE TABLE IF NOT EXISTS tht_schema_migrations (version integer)")


@pytest.mark.parametrize("version", [0, 2], ids=["never-initialised", "one-migration-behind"])
def test_the_everyday_role_is_refused_a_migration_naming_the_owner_role_and_nothing_changes(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    roles = _roles(postgres_server)
    _owner_init(postgres_server, roles, monkeypatch, up_to=version)
    before = _schema(postgres_server, roles.db)
    with pytest.raises(PolicyError) as caught:
        init_schema(roles.everyday_dsn)
    refused = caught.value
    assert (refused.exit_code, refused.code) == (5, "refused")
    assert refused.message.startswith(
        f"the PostgreSQL store's tables are at schema version {version}, this tht needs "
        f"{LATEST}, and the role {roles.everyday} may not change the schema (permission denied "
    )
    assert refused.message.endswith(
        "run `tht store init` as the store's owner role (the one that may CREATE in its "
        "database; docs/operations.md); nothing was changed"
    )
    assert PASSWORD not in refused.message and roles.everyday_dsn not in refused.message
    assert refused.__context__ is None  # the driver's error is not kept (it may quote the URL)
    assert _schema(postgres_server, roles.db) == before
    assert schema_version(roles.everyday_dsn) == version
    # the refusal left no transaction or advisory lock behind: the owner applies at once
    assert init_schema(roles.owner_dsn) == ALL[version:]


def test_the_owner_role_applies_what_is_missing_and_the_everyday_role_then_finds_it_current(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    roles = _roles(postgres_server)
    _owner_init(postgres_server, roles, monkeypatch, up_to=2)
    with pytest.raises(PolicyError):
        init_schema(roles.everyday_dsn)
    assert init_schema(roles.owner_dsn) == ["0003_write_rules"]
    after = _schema(postgres_server, roles.db)
    assert [row[0] for row in after["migrations"]] == [1, 2, 3]
    assert ("tht_ledger_kinds", "r", roles.owner) in after["relations"]
    assert after["domains"] == [("tht_last_seq",), ("tht_seq",)]
    assert init_schema(roles.owner_dsn) == []
    assert init_schema(roles.everyday_dsn) == []
    assert _schema(postgres_server, roles.db) == after
    _use(roles.everyday_dsn, "after-upgrade")


# ------------------------------------------------------------------ the CLI, as the everyday role


def _cli_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str) -> Path:
    root = tmp_path / "ws"
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    monkeypatch.setenv("THT_SEED", "7")
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("THT_STORE_URL", url)
    for var in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(var, raising=False)
    return root


def _postgres_workspace(root: Path, namespace: str) -> None:
    from tests.tht.conftest import run_tht

    assert run_tht("workspace", "init", str(root)).code == 0
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f'\nstore: {{kind: postgres, url_env: THT_STORE_URL, workspace: "{namespace}"}}\n')


def _fs_workspace_with_a_session(root: Path, namespace: str) -> str:
    from tests.golden.scenarios import SCENARIOS, make_kernel

    run = make_kernel(root)
    SCENARIOS["pause_resume"](run)
    with (root / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f'\nstore: {{kind: fs, workspace: "{namespace}"}}\n')
    return run.session


def _refusal(done: Any, roles: Roles) -> None:
    assert done.code == 5, done.stderr
    error = done.json()["error"]
    assert (error["code"], error["exit_code"]) == ("refused", 5)
    for said in (f"the role {roles.everyday}", "`tht store init` as the store's owner role"):
        assert said in error["message"]
    assert error["message"].endswith("nothing was changed")
    for secret in (roles.everyday_dsn, PASSWORD):
        assert secret not in done.stdout + done.stderr


def test_store_init_as_the_everyday_role_is_a_no_op_when_current_and_exit_5_when_behind(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.tht.conftest import run_tht

    current, behind = _roles(postgres_server), _roles(postgres_server)
    _owner_init(postgres_server, current, monkeypatch, up_to=LATEST)
    _owner_init(postgres_server, behind, monkeypatch, up_to=2)
    root = _cli_environment(monkeypatch, tmp_path, current.everyday_dsn)
    _postgres_workspace(root, "roles-cli")
    before = _schema(postgres_server, current.db)
    done = run_tht("store", "init", "--as", "human:ann", "--json")
    assert done.code == 0, done.stderr
    assert done.json() == {
        "kind": "postgres",
        "applied": [],
        "schema_version": LATEST,
        "by": "human:ann",
    }
    assert _schema(postgres_server, current.db) == before
    monkeypatch.setenv("THT_STORE_URL", behind.everyday_dsn)
    before = _schema(postgres_server, behind.db)
    _refusal(run_tht("store", "init", "--as", "human:ann", "--json"), behind)
    assert _schema(postgres_server, behind.db) == before


def test_store_migrate_as_the_everyday_role_copies_onto_the_owners_store_or_is_refused(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.tht.conftest import run_tht

    behind, current = _roles(postgres_server), _roles(postgres_server)
    _owner_init(postgres_server, behind, monkeypatch, up_to=2)
    _owner_init(postgres_server, current, monkeypatch, up_to=LATEST)
    root = _cli_environment(monkeypatch, tmp_path, behind.everyday_dsn)
    session = _fs_workspace_with_a_session(root, "roles-migrate")
    settings = (root / "workspace.yaml").read_bytes()
    migrate = ("store", "migrate", "--to", "postgres", "--as", "human:reviewer", "--json")
    before = _schema(postgres_server, behind.db)
    _refusal(run_tht(*migrate), behind)  # before anything is copied or switched
    assert _schema(postgres_server, behind.db) == before
    assert postgres_server.execute(behind.db, "SELECT count(*) FROM tht_ledger_events") == [(0,)]
    assert (root / "workspace.yaml").read_bytes() == settings
    monkeypatch.setenv("THT_STORE_URL", current.everyday_dsn)
    done = run_tht(*migrate)
    assert done.code == 0, done.stderr
    body = done.json()
    assert (body["switched"], body["sessions"], body["by"]) == (True, 1, "human:reviewer")
    assert yaml.safe_load((root / "workspace.yaml").read_text())["store"]["kind"] == "postgres"
    assert run_tht("session", "status", session, "--json").code == 0
