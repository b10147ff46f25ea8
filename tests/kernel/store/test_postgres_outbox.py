"""The outbox on the PostgreSQL store (kernel/store/postgres_outbox.py): its table is schema
migration 2 (an old schema is the store's "run tht store init"); a claim keeps an item from
every other runner until its lease runs out; concurrent runners split the work and run each item
exactly once; on a ``store: {kind: postgres}`` workspace finalize enqueues on the server (no
``.tht/outbox/`` file) and ``tht outbox run`` executes it; ``tht store migrate`` carries pending
items; an unreachable server is exit 6 with nothing written. The contract itself (both ports):
tests/contract/test_outbox_contract.py."""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kernel.clock import FixedClock
from kernel.errors import UnavailableError, UsageError
from kernel.outbox import Outbox, OutboxItem
from kernel.store import postgres_schema
from kernel.store.postgres import PostgresStore, init_schema, schema_version
from kernel.store.postgres_conn import Database
from kernel.store.postgres_outbox import PostgresOutbox
from kernel.store.postgres_schema import LATEST, MIGRATIONS

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer

H = ("--as", "human:ann")


def _outbox(dsn: str, workspace: str, *, lease_s: int = 900) -> tuple[Outbox, Database]:
    db = Database(dsn, required_version=LATEST)
    return Outbox(port=PostgresOutbox(db, workspace=workspace, lease_s=lease_s)), db


def _port(outbox: Outbox) -> PostgresOutbox:
    assert isinstance(outbox.port, PostgresOutbox)
    return outbox.port


def _ok(item: OutboxItem) -> None:
    return None


# --------------------------------------------------------------------------- schema


def test_the_outbox_table_is_migration_2_and_an_old_schema_asks_for_store_init(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [m.label for m in MIGRATIONS][:2] == ["0001_ledgers_objects_caches", "0002_outbox"]
    dsn = postgres_server.dsn(postgres_server.create_database("tht_outbox_schema"))
    with monkeypatch.context() as patch:  # a database of the previous tht: version 1 only
        patch.setattr(postgres_schema, "MIGRATIONS", MIGRATIONS[:1])
        assert init_schema(dsn) == ["0001_ledgers_objects_caches"]
    assert schema_version(dsn) == 1
    outbox, db = _outbox(dsn, "w")
    with pytest.raises(
        UsageError, match=rf"schema version 1, this tht needs {LATEST}: run `tht store init`"
    ):
        outbox.enqueue("S1", ("a",), FixedClock())
    with pytest.raises(UsageError, match="tht store init"):
        PostgresStore(dsn, workspace="w").connect()
    assert init_schema(dsn)[0] == "0002_outbox"  # the upgrade adds the table (then the next)
    assert init_schema(dsn) == []
    outbox.enqueue("S1", ("a",), FixedClock())
    assert [i.id for i in outbox.items()] == ["S1.a"]
    db.close()


def test_workspaces_on_one_server_have_their_own_outboxes(pg_dsn: str) -> None:
    one, db1 = _outbox(pg_dsn, f"a-{uuid.uuid4().hex[:8]}")
    two, db2 = _outbox(pg_dsn, f"b-{uuid.uuid4().hex[:8]}")
    one.enqueue("S1", ("a",), FixedClock())
    assert two.items() == [] and two.run({"a": _ok}, FixedClock()).done == ()
    assert one.items()[0].status == "pending"
    db1.close()
    db2.close()


# --------------------------------------------------------------------------- claims


def test_a_claimed_item_is_left_alone_by_every_other_runner(pg_dsn: str, workspace_id: str) -> None:
    mine, db1 = _outbox(pg_dsn, workspace_id)
    other, db2 = _outbox(pg_dsn, workspace_id)
    mine.enqueue("S1", ("a",), FixedClock())
    claimed = _port(mine).claim("S1.a", due_by=None)
    assert claimed is not None and claimed.status == "pending"
    ran: list[str] = []
    result = other.run({"a": lambda i: ran.append(i.id)}, FixedClock(), force=True)
    assert (result.done, result.retrying, result.not_due, ran) == ((), (), (), [])
    assert _port(other).claim("S1.a", due_by=None) is None
    assert _port(other).record(claimed) is False  # an outcome only from the claim's holder
    assert _port(mine).claim("S1.a", due_by=None) is not None  # its own claim, again (a retry)
    assert mine.run({"a": _ok}, FixedClock()).done == ("S1.a",)
    assert _port(mine).claim("S1.a", due_by=None) is None  # done: never claimed again
    db1.close()
    db2.close()


def test_a_claim_whose_lease_ran_out_goes_to_another_runner(pg_dsn: str, workspace_id: str) -> None:
    dead, db1 = _outbox(pg_dsn, workspace_id, lease_s=0)
    alive, db2 = _outbox(pg_dsn, workspace_id)
    dead.enqueue("S1", ("a",), FixedClock())
    stale = _port(dead).claim("S1.a", due_by=None)
    assert stale is not None
    time.sleep(0.01)  # the lease (0 s, server time) is over
    assert alive.run({"a": _ok}, FixedClock()).done == ("S1.a",)
    late = OutboxItem(**{**_fields(stale), "attempts": 1, "last_error": "late"})
    assert _port(dead).record(late) is False  # the late outcome does not overwrite
    item = alive.items()[0]
    assert (item.status, item.attempts, item.last_error) == ("done", 1, None)
    db1.close()
    db2.close()


def _fields(item: OutboxItem) -> dict[str, object]:
    return {f: getattr(item, f) for f in item.__struct_fields__}


def test_concurrent_runners_split_the_work_and_run_each_item_exactly_once(
    pg_dsn: str, workspace_id: str
) -> None:
    runners = [_outbox(pg_dsn, workspace_id) for _ in range(3)]
    sessions = [f"S{n:02d}" for n in range(30)]
    for sid in sessions:
        runners[0][0].enqueue(sid, ("a", "b"), FixedClock())
    calls: Counter[str] = Counter()
    by_runner: list[set[str]] = [set() for _ in runners]
    lock = threading.Lock()
    start = threading.Barrier(len(runners))

    def work(n: int) -> None:
        def handler(item: OutboxItem) -> None:
            with lock:
                calls[item.id] += 1
                by_runner[n].add(item.id)
            time.sleep(0.002)  # long enough for the others to reach the same items

        start.wait()
        runners[n][0].run({"a": handler, "b": handler}, FixedClock())

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(runners))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    expected = {f"{sid}.{t}" for sid in sessions for t in ("a", "b")}
    assert set(calls) == expected and set(calls.values()) == {1}
    assert sum(len(s) for s in by_runner) == len(expected)
    assert sum(1 for s in by_runner if s) >= 2  # the work was split, not serialized
    assert {i.status for i in runners[0][0].items()} == {"done"}
    for _, db in runners:
        db.close()


# --------------------------------------------------------------------------- unreachable


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: nothing listens there


def test_an_unreachable_server_is_unavailable_and_the_dsn_is_never_shown(tmp_path: Path) -> None:
    url = f"postgresql://tht:pw-s3cret@127.0.0.1:{_closed_port()}/team?connect_timeout=2"
    outbox, db = _outbox(url, "w")
    for call in (
        lambda: outbox.enqueue("S1", ("a",), FixedClock()),
        outbox.items,
        lambda: outbox.run({"a": _ok}, FixedClock()),
    ):
        with pytest.raises(UnavailableError) as caught:
            call()
        assert caught.value.exit_code == 6 and "pw-s3cret" not in str(caught.value)
    db.close()


# --------------------------------------------------------------------------- the workspace


@pytest.fixture
def pg_workspace(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str, Path]:
    """A workspace on the server (its own namespace) with one after-finalize command."""
    from tests.tht.conftest import run_tht

    root = tmp_path / "ws"
    namespace = f"ob-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    monkeypatch.setenv("THT_SEED", "7")
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("THT_STORE_URL", pg_dsn)
    for var in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(var, raising=False)
    assert run_tht("workspace", "init", str(root)).code == 0
    out = tmp_path / "hook.json"
    hook = [sys.executable, "-c", f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read())"]
    settings = root / "workspace.yaml"
    text = settings.read_text().replace(
        "after_finalize: []",
        "after_finalize:\n  - name: notify\n    command: " + json.dumps(hook),
    )
    settings.write_text(
        text + f'\nstore: {{kind: postgres, url_env: THT_STORE_URL, workspace: "{namespace}"}}\n'
    )
    return root, namespace, out


def _finalized(root: Path) -> str:
    from tests.golden import scenarios
    from tht.composition import open_app

    app = open_app(root)
    run = scenarios.Run(app.kernel, app.workspace)
    scenarios.start(run)
    scenarios.to_finalize(run)
    app.finalize(run.session, actor="human:ann")  # enqueues; the CLI would run them at once
    return run.session


def test_finalize_on_a_postgres_workspace_enqueues_on_the_server_and_outbox_run_runs_it(
    pg_workspace: tuple[Path, str, Path], pg_dsn: str
) -> None:
    from tests.tht.conftest import run_tht

    root, namespace, out = pg_workspace
    session = _finalized(root)
    assert not (root / ".tht" / "outbox").exists()  # nothing on the machine's disk
    on_server, db = _outbox(pg_dsn, namespace)
    ids = [f"{session}.command-notify", f"{session}.memory-solved_question"]
    assert [(i.id, i.status) for i in on_server.items()] == [(i, "pending") for i in ids]
    listed = run_tht("outbox", "list", "--json")
    assert listed.code == 0, listed.stderr
    assert [i["id"] for i in listed.json()] == ids
    done = run_tht("outbox", "run", "--json")
    assert done.code == 0, done.stderr
    assert sorted(done.json()["done"]) == ids
    assert json.loads(out.read_text())["session"] == session
    assert {i.status for i in on_server.items()} == {"done"}
    again = run_tht("outbox", "run", "--json", "--force")
    assert again.json()["done"] == []  # run once: another machine's run finds nothing either
    assert not (root / ".tht" / "outbox").exists()
    db.close()


def test_an_unreachable_server_is_exit_6_for_the_outbox_commands_with_nothing_written(
    pg_workspace: tuple[Path, str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.tht.conftest import run_tht

    root, _, out = pg_workspace
    url = f"postgresql://tht:pw-s3cret@127.0.0.1:{_closed_port()}/team?connect_timeout=2"
    monkeypatch.setenv("THT_STORE_URL", url)
    before = sorted(p for p in root.rglob("*"))
    for argv in (("outbox", "run"), ("outbox", "list"), ("outbox", "run", "--force")):
        done = run_tht(*argv, "--json")
        assert done.code == 6, (argv, done.stderr)
        assert done.json()["error"]["code"] == "unavailable"  # --json: the error body
        assert "Traceback" not in done.stderr
        assert "pw-s3cret" not in done.stdout + done.stderr
    assert sorted(p for p in root.rglob("*")) == before and not out.exists()


def test_store_migrate_carries_the_pending_outbox_items(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.kernel.store.postgres_support import fresh_database
    from tests.tht.conftest import run_tht

    dsn = fresh_database(postgres_server, "outbox_migrate")
    root = tmp_path / "ws"
    monkeypatch.setenv("THT_WORKSPACE", str(root))
    monkeypatch.setenv("THT_STORE_URL", dsn)
    monkeypatch.setenv("THT_HOME", str(tmp_path / "home"))
    assert run_tht("workspace", "init", str(root)).code == 0
    files = Outbox(root / ".tht" / "outbox", max_attempts=2)
    clock = FixedClock()
    files.enqueue("S1", ("a", "b", "c"), clock)
    files.run({"a": _ok, "b": _fail}, clock)  # a done, b retrying (pending), c no handler
    files.run({}, clock, session="S1", force=True)  # c failed, b failed too
    files.enqueue("S2", ("a",), clock)
    before = {i.id: i for i in files.items()}
    assert [i for i, v in before.items() if v.status == "pending"] == ["S2.a"]
    moved = run_tht("store", "migrate", "--to", "postgres", *H, "--json")
    assert moved.code == 0, moved.stderr
    assert moved.json()["outbox_items"] == 1
    namespace = json.loads(run_tht("store", "status", "--json").stdout)["workspace"]
    on_server, db = _outbox(dsn, namespace)
    assert on_server.items() == [before["S2.a"]]  # exactly as it was, done/failed left behind
    assert {i.id: i for i in files.items()} == before  # the source is untouched
    listed = run_tht("outbox", "list", "--json")
    assert [i["id"] for i in listed.json()] == ["S2.a"]
    db.close()


def _fail(item: OutboxItem) -> None:
    raise OSError("nope")


def test_outbox_items_keep_their_clock_timestamps_on_the_server(
    pg_dsn: str, workspace_id: str
) -> None:
    class Later:
        def now(self) -> datetime:
            return datetime(2030, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)

    outbox, db = _outbox(pg_dsn, workspace_id)
    outbox.enqueue("S1", ("a",), Later())
    outbox.run({"a": _ok}, Later())
    item = outbox.items()[0]
    assert (item.created_at, item.done_at) == ("2030-05-06T07:08:09.123Z",) * 2
    db.close()


def test_the_documented_everyday_role_runs_the_outbox(postgres_server: PostgresServer) -> None:
    """docs/operations.md's roles: the everyday one (no DELETE but on the events) enqueues,
    claims and records (the table's grants come from the owner's default privileges)."""
    from tests.tht.test_store_cli import _documented_roles_sql

    db = postgres_server.create_database("tht_outbox_roles")
    before, after = _documented_roles_sql()

    def renamed(statement: str) -> str:  # roles are the cluster's: apart from the CLI test's
        statement = statement.replace("tht_store_owner", "ob_owner").replace("'…'", "'pw'")
        return re.sub(r"\btht_store\b", "ob_everyday", statement)

    for statement in before:
        postgres_server.execute(db, renamed(statement))
    init_schema(postgres_server.dsn(db, user="ob_owner", password="pw"))
    for statement in after:
        postgres_server.execute(db, renamed(statement))
    outbox, conn = _outbox(postgres_server.dsn(db, user="ob_everyday", password="pw"), "roles")
    outbox.enqueue("S1", ("a", "b"), FixedClock())
    result = outbox.run({"a": _ok, "b": _fail}, FixedClock())
    assert (result.done, result.retrying) == (("S1.a",), ("S1.b",))
    conn.close()
