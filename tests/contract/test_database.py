"""The Workspace Database contract (kernel.database), run against SQLite and a real PostgreSQL
server with the same fixture schema (tests/support/workspace_database.py): introspection,
capabilities, the structure version, the read-only executor (rows, limits, truncation, timeout,
cancellation), error mapping, and the password that never leaks."""

from __future__ import annotations

import threading
import zlib
from pathlib import Path

import msgspec
import pytest

from kernel.database import (
    DatabaseBinding,
    DatabaseUnavailable,
    Introspection,
    ObservedColumn,
    ObservedIndex,
    ObservedTable,
    PhysicalRelationship,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    binding_from_url,
    check_reachable,
    introspect,
    run_read_only,
    structure_version,
)
from kernel.errors import NotFoundError, ThtError
from tests.support.postgres import PostgresServer
from tests.support.workspace_database import (
    PASSWORD,
    Backend,
    postgres_backend,
    sqlite_backend,
)

BACKENDS = ["sqlite", "postgresql"]


def _make(request: pytest.FixtureRequest, root: Path, dbname: str) -> Backend:
    if request.param == "sqlite":
        return sqlite_backend(root)
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return postgres_backend(server, root, dbname)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Backend:
    """The fixture database, shared by the tests that only read."""
    return _make(
        request, tmp_path_factory.mktemp(f"contract-{request.param}") / "ws", "contract_shop"
    )


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A database of its own, for a test that changes the structure."""
    name = f"fresh_{zlib.crc32(request.node.name.encode()):08x}"
    return _make(request, tmp_path / "ws", name)


def _column(
    name: str, position: int, type_: str, *, nullable: bool = True, pk: int = 0
) -> ObservedColumn:
    return ObservedColumn(
        name=name, position=position, type=type_, nullable=nullable, pk=pk > 0, pk_position=pk
    )


EXPECTED_TABLES = (
    ObservedTable(
        name="big_orders",
        kind="view",
        columns=(_column("order_id", 1, "INTEGER"), _column("customer", 2, "TEXT")),
    ),
    ObservedTable(
        name="customers",
        columns=(
            _column("id", 1, "INTEGER", nullable=False, pk=1),
            _column("name", 2, "TEXT", nullable=False),
            _column("email", 3, "VARCHAR(120)"),
        ),
    ),
    ObservedTable(
        name="order_lines",
        columns=(
            _column("order_id", 1, "INTEGER", nullable=False, pk=1),
            _column("line_no", 2, "INTEGER", nullable=False, pk=2),
            _column("sku", 3, "TEXT", nullable=False),
            _column("variant", 4, "INTEGER", nullable=False),
            _column("qty", 5, "INTEGER", nullable=False),
        ),
    ),
    ObservedTable(
        name="orders",
        columns=(
            _column("id", 1, "INTEGER", nullable=False, pk=1),
            _column("customer_id", 2, "INTEGER", nullable=False),
            _column("placed_on", 3, "DATE"),
        ),
    ),
    ObservedTable(
        name="products",
        columns=(
            _column("sku", 1, "TEXT", nullable=False, pk=1),
            _column("variant", 2, "INTEGER", nullable=False, pk=2),
            _column("title", 3, "TEXT"),
            _column("price", 4, "NUMERIC(10, 2)"),
        ),
    ),
)
EXPECTED_RELATIONSHIPS = (
    PhysicalRelationship(
        constraint="fk_line_product",
        from_table="order_lines",
        from_columns=("sku", "variant"),
        to_table="products",
        to_columns=("sku", "variant"),
    ),
    # unnamed in the DDL: PostgreSQL names it so; SQLite's gets the same name from tht
    PhysicalRelationship(
        constraint="order_lines_order_id_fkey",
        from_table="order_lines",
        from_columns=("order_id",),
        to_table="orders",
        to_columns=("id",),
    ),
    PhysicalRelationship(
        constraint="orders_customer_id_fkey",
        from_table="orders",
        from_columns=("customer_id",),
        to_table="customers",
        to_columns=("id",),
    ),
)
EXPECTED_INDEXES = (
    ObservedIndex(name="ux_customers_email", table="customers", columns=("email",), unique=True),
    ObservedIndex(name="ix_orders_customer", table="orders", columns=("customer_id", "placed_on")),
)
ALL_OBSERVED = dict.fromkeys(
    ("tables", "columns", "primary_keys", "relationships", "indexes"), "observed"
)


# -- introspection --------------------------------------------------------------------------


def test_introspection_observes_the_fixture_schema(backend: Backend) -> None:
    seen: list[tuple[int, int, str]] = []
    found = introspect(backend.binding, progress=lambda *a: seen.append(a))
    expected = Introspection(
        dialect=backend.name,
        schema=None if backend.name == "sqlite" else "public",
        tables=EXPECTED_TABLES,
        relationships=EXPECTED_RELATIONSHIPS,
        indexes=EXPECTED_INDEXES,
        capabilities=ALL_OBSERVED,  # type: ignore[arg-type]
        version=found.version,
    )
    assert found == expected
    assert found.version == structure_version(backend.binding)
    assert seen == [(i, 5, t.name) for i, t in enumerate(EXPECTED_TABLES, 1)]


def test_introspection_encodes_to_the_same_bytes_every_time(backend: Backend) -> None:
    first = msgspec.json.encode(introspect(backend.binding))
    assert msgspec.json.encode(introspect(backend.binding)) == first


def test_scope_restricts_to_the_named_tables(backend: Backend) -> None:
    found = introspect(backend.binding, scope=["ORDERS", "order_lines"])
    assert [t.name for t in found.tables] == ["order_lines", "orders"]
    assert found.scope == ("order_lines", "orders")
    assert {r.from_table for r in found.relationships} == {"order_lines", "orders"}
    assert [i.name for i in found.indexes] == ["ix_orders_customer"]
    assert found.capabilities == ALL_OBSERVED


def test_an_unknown_scoped_table_is_not_found_and_named(backend: Backend) -> None:
    with pytest.raises(NotFoundError) as caught:
        introspect(backend.binding, scope=["orders", "no_such_table"])
    assert caught.value.exit_code == 3
    assert "'no_such_table'" in caught.value.message


def test_an_empty_scope_observes_nothing_but_says_so(backend: Backend) -> None:
    found = introspect(backend.binding, scope=[])
    assert found.tables == () and found.relationships == () and found.indexes == ()
    assert found.capabilities == ALL_OBSERVED  # observed, empty: a fact, not a gap


# -- structure version ------------------------------------------------------------------------

STRUCTURE_CHANGES = {
    "add a column": "ALTER TABLE customers ADD COLUMN phone TEXT",
    "add a table": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
    "drop an index": "DROP INDEX ix_orders_customer",
    "add an index": "CREATE INDEX ix_products_title ON products (title)",
    "add a foreign key": (
        "CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders (id))"
    ),
    "drop a view": "DROP VIEW big_orders",
}


def test_the_structure_version_ignores_data_changes(fresh: Backend) -> None:
    before = structure_version(fresh.binding)
    assert structure_version(fresh.binding) == before
    fresh.write(
        "INSERT INTO customers (id, name) VALUES (4, 'Dee'); DELETE FROM order_lines WHERE qty = 3;"
    )
    assert structure_version(fresh.binding) == before


def test_the_structure_version_changes_with_every_structure_change(fresh: Backend) -> None:
    versions = [structure_version(fresh.binding)]
    for statement in STRUCTURE_CHANGES.values():
        fresh.write(statement)
        versions.append(structure_version(fresh.binding))
    assert len(set(versions)) == len(versions), versions
    assert introspect(fresh.binding).version == versions[-1]


def test_changing_a_foreign_key_target_or_nullability_changes_the_version(fresh: Backend) -> None:
    before = structure_version(fresh.binding)
    if fresh.name == "postgresql":
        fresh.write(
            "DELETE FROM order_lines WHERE order_id = 12;DELETE FROM orders WHERE placed_on IS NULL"
        )
        assert structure_version(fresh.binding) == before
        fresh.write("ALTER TABLE orders ALTER COLUMN placed_on SET NOT NULL")
    else:  # SQLite has no ALTER COLUMN: the table is rebuilt, as its documentation says
        fresh.write(
            "CREATE TABLE orders2 (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL "
            "REFERENCES customers (id), placed_on DATE);"
            "DROP VIEW big_orders; DROP TABLE orders; ALTER TABLE orders2 RENAME TO orders;"
        )
    assert structure_version(fresh.binding) != before


# -- the executor ----------------------------------------------------------------------------


def test_a_query_returns_columns_rows_and_a_stable_hash(backend: Backend) -> None:
    sql = "SELECT id, name, email FROM customers ORDER BY id"
    result = run_read_only(backend.binding, sql, limit=10, timeout_ms=10_000)
    assert [c.name for c in result.columns] == ["id", "name", "email"]
    assert [c.type.upper() for c in result.columns][:2] in (["INTEGER", "TEXT"], ["INT4", "TEXT"])
    assert result.rows == (
        (1, "Ann", "ann@example.org"),
        (2, "Bob", None),
        (3, "Çelik", "c@example.org"),
    )
    assert result.row_count == 3 and not result.truncated and result.elapsed_ms >= 0
    again = run_read_only(backend.binding, sql, limit=10, timeout_ms=10_000)
    assert again.sha256 == result.sha256 and len(result.sha256) == 64
    other = run_read_only(
        backend.binding, sql.replace("ORDER BY id", "ORDER BY id DESC"), limit=10, timeout_ms=10_000
    )
    assert other.sha256 != result.sha256


@pytest.mark.parametrize(
    ("limit", "rows", "truncated"), [(0, 0, True), (2, 2, True), (3, 3, False), (50, 3, False)]
)
def test_the_row_limit_truncates_and_says_so(
    backend: Backend, limit: int, rows: int, truncated: bool
) -> None:
    result = run_read_only(
        backend.binding, "SELECT id FROM customers ORDER BY id", limit=limit, timeout_ms=10_000
    )
    assert (result.row_count, len(result.rows), result.truncated) == (rows, rows, truncated)


def test_a_large_result_is_cut_at_the_limit(backend: Backend) -> None:
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
        "SELECT i FROM n"
    )
    result = run_read_only(backend.binding, sql, limit=5, timeout_ms=30_000)
    assert result.rows == ((1,), (2,), (3,), (4,), (5,)) and result.truncated


def test_values_are_converted_to_their_canonical_json(backend: Backend) -> None:
    sql = "SELECT price, placed_on FROM products JOIN orders ON orders.id = 10 WHERE variant = 1"
    result = run_read_only(backend.binding, sql, limit=5, timeout_ms=10_000)
    price, placed = result.rows[0]
    assert placed == "2024-01-31"
    assert price == ("12.50" if backend.name == "postgresql" else 12.5)  # Decimal → exact text


def test_a_query_past_its_timeout_is_stopped(backend: Backend) -> None:
    with pytest.raises(QueryTimeout) as caught:
        run_read_only(backend.binding, backend.slow_sql, limit=5, timeout_ms=300)
    assert caught.value.exit_code == 6 and caught.value.details["why"] == "timeout"
    # the connection was not left broken: the next query runs
    assert run_read_only(backend.binding, "SELECT 1 AS one", limit=1, timeout_ms=5_000).rows == (
        (1,),
    )


def test_a_running_query_is_cancelled_by_its_event(backend: Backend) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    try:
        with pytest.raises(QueryTimeout) as caught:
            run_read_only(
                backend.binding, backend.slow_sql, limit=5, timeout_ms=120_000, cancel=cancel
            )
    finally:
        timer.cancel()
    assert caught.value.details["why"] == "cancelled"


def test_a_query_cancelled_before_it_starts_never_runs(backend: Backend) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(QueryTimeout):
        run_read_only(backend.binding, "SELECT 1", limit=1, timeout_ms=1_000, cancel=cancel)


@pytest.mark.parametrize(
    ("sql", "error", "mentions"),
    [
        ("SELECT nope FROM customers", QueryFailed, "nope"),
        ("SELECT * FROM no_such_table", QueryFailed, "no_such_table"),
        ("SELEC 1", QueryFailed, "SELEC"),
        ("   ", QueryFailed, "empty"),
        ("DELETE FROM customers", QueryRefused, "read-only"),
        ("SELECT 1; SELECT 2", QueryRefused, "more than one statement"),
    ],
)
def test_errors_map_to_their_exit_codes(
    backend: Backend, sql: str, error: type[ThtError], mentions: str
) -> None:
    with pytest.raises(error) as caught:
        run_read_only(backend.binding, sql, limit=5, timeout_ms=5_000)
    assert mentions in caught.value.message
    assert "\n" not in caught.value.message
    assert caught.value.exit_code == {QueryFailed: 2, QueryRefused: 5}[error]


def test_a_syntax_error_gives_its_position_in_the_users_sql(backend: Backend) -> None:
    with pytest.raises(QueryFailed) as caught:
        run_read_only(
            backend.binding, "SELECT id,\n  nope\nFROM customers", limit=5, timeout_ms=5_000
        )
    if backend.name == "postgresql":  # SQLite does not report positions
        assert "(line 2, column 3)" in caught.value.message


def test_check_reachable_accepts_the_fixture(backend: Backend) -> None:
    check_reachable(backend.binding)


# -- unavailable, and the password that never leaks -------------------------------------------


def test_a_missing_sqlite_file_is_unavailable_and_never_created(tmp_path: Path) -> None:
    binding = binding_from_url(tmp_path, "sqlite:///data/missing.db")
    calls = [
        lambda: check_reachable(binding),
        lambda: introspect(binding),
        lambda: structure_version(binding),
        lambda: run_read_only(binding, "SELECT 1", limit=1, timeout_ms=1000),
    ]
    for call in calls:
        with pytest.raises(DatabaseUnavailable) as caught:
            call()
        assert caught.value.exit_code == 6 and "does not exist" in caught.value.message
    assert list(tmp_path.rglob("*")) == []


def _broken_bindings(server: PostgresServer, root: Path) -> dict[str, DatabaseBinding]:
    good = server.dsn("contract_shop", user="tht_owner", password=PASSWORD)
    return {
        "wrong password": binding_from_url(
            root, server.dsn("contract_shop", user="tht_owner", password="x" + PASSWORD)
        ),
        "unreachable host": binding_from_url(
            root, f"postgresql://tht_owner:{PASSWORD}@127.0.0.1:1/shop"
        ),
        "bad database name": binding_from_url(root, good.rsplit("/", 1)[0] + "/no_such_db"),
        "bad percent-encoding": binding_from_url(
            root, f"postgresql://tht_owner:{PASSWORD}%zz@127.0.0.1:1/x"
        ),
        "bad port": binding_from_url(root, f"postgresql://tht_owner:{PASSWORD}@127.0.0.1:port/x"),
    }


def _texts(err: BaseException) -> list[str]:
    """Everything an error could show: message, repr, JSON, and its whole cause chain."""
    out: list[str] = []
    seen: BaseException | None = err
    while seen is not None:
        out += [str(seen), repr(seen)]
        if isinstance(seen, ThtError):
            out.append(msgspec.json.encode(seen.to_json()).decode())
        seen = seen.__cause__ or seen.__context__
    return out


LEAK_CASES = [
    "wrong password",
    "unreachable host",
    "bad database name",
    "bad percent-encoding",
    "bad port",
]


@pytest.mark.parametrize("case", LEAK_CASES)
def test_the_password_never_appears_on_any_error_path(
    postgres_server: PostgresServer,
    tmp_path: Path,
    case: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernel import log

    binding = _broken_bindings(postgres_server, tmp_path)[case]
    assert PASSWORD not in binding.display + repr(binding) + str(binding)
    calls = {
        "check_reachable": lambda: check_reachable(binding),
        "introspect": lambda: introspect(binding),
        "structure_version": lambda: structure_version(binding),
        "run_read_only": lambda: run_read_only(binding, "SELECT 1", limit=1, timeout_ms=2000),
    }
    monkeypatch.setattr(log, "_enabled", True)  # what --debug turns on
    caplog.set_level("DEBUG")
    messages = []
    for name, call in calls.items():
        with pytest.raises(DatabaseUnavailable) as caught:
            call()
        leaked = [t for t in _texts(caught.value) if PASSWORD in t]
        assert leaked == [], (name, leaked)
        assert caught.value.exit_code == 6
        messages.append(caught.value.message)
    assert caplog.records, "the failed connections are logged under --debug"
    assert PASSWORD not in caplog.text
    if case == "wrong password":
        assert all("password authentication failed" in m for m in messages)


def test_a_binding_whose_schema_is_missing_is_not_found(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    binding = binding_from_url(tmp_path, postgres_server.dsn("postgres"), schema="no_such_schema")
    for call in (introspect, check_reachable):
        with pytest.raises(NotFoundError, match="no_such_schema"):
            call(binding)


def test_a_server_that_goes_away_is_unavailable_until_it_is_back(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    binding = binding_from_url(tmp_path, postgres_server.dsn("postgres"))
    check_reachable(binding)
    postgres_server.stop()
    try:
        assert not postgres_server.running
        with pytest.raises(DatabaseUnavailable, match="cannot reach"):
            run_read_only(binding, "SELECT 1", limit=1, timeout_ms=2_000)
    finally:
        postgres_server.start()
    assert postgres_server.pg_ctl("status").returncode == 0
    check_reachable(binding)


def test_the_reader_role_of_the_test_server_can_query(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    postgres_server.create_database("reader_probe")
    postgres_server.execute("reader_probe", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")
    binding = binding_from_url(tmp_path, postgres_server.reader_dsn("reader_probe"))
    assert run_read_only(binding, "SELECT x FROM t", limit=5, timeout_ms=5_000).rows == ((1,),)
    superuser = binding_from_url(tmp_path, postgres_server.dsn("reader_probe"))
    with pytest.raises(QueryRefused, match="can write files on the database server"):
        run_read_only(superuser, "SELECT x FROM t", limit=5, timeout_ms=5_000)
