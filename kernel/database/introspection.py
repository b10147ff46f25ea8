"""Introspection: what the Workspace Database's schema holds, observed with SQLAlchemy 2 Core.

``introspect(binding, scope=None, progress=None)`` returns an
:class:`~kernel.database.types.Introspection`: tables and views, their columns (1-based position,
type, nullability, primary-key membership and position), the physical relationships (declared
foreign keys: constraint and ordered column pairs) and the indexes, sorted by name, with the
structure version it was observed at. SQLAlchemy is imported here, on first use; the inspector
runs on one read-only connection (:mod:`kernel.database.readonly`) and uses the multi-table
calls (``get_multi_columns`` …), one query each on PostgreSQL (inside one ``REPEATABLE READ``
read-only transaction, so every category sees the same snapshot).

Introspection Capability: each category (:data:`~kernel.database.types.CAPABILITY_CATEGORIES`)
is ``observed`` when the backend answered, ``unavailable`` when it cannot (the dialect does not
implement it, or the role may not read it), and then its facts are absent, never an empty list
that would pass for "observed, none".

Naming: SQLite foreign keys are often unnamed; they get PostgreSQL's default name,
``<table>_<columns>_fkey`` (a digit appended while it collides), so the same schema has the
same relationship names on both backends.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kernel.database.binding import DatabaseBinding
from kernel.database.errors import DatabaseUnavailable
from kernel.database.readonly import (
    connect_postgres,
    connect_sqlite,
    postgres_reason,
    require_schema,
)
from kernel.database.types import (
    CAPABILITY_CATEGORIES,
    Capability,
    Introspection,
    ObservedColumn,
    ObservedIndex,
    ObservedTable,
    PhysicalRelationship,
)
from kernel.database.version import postgres_structure_version, sqlite_structure_version
from kernel.errors import NotFoundError
from kernel.log import get_logger

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = ["introspect"]

logger = get_logger(__name__)

Progress = Callable[[int, int, str], None]
T = TypeVar("T")
_Key = tuple[str | None, str]


def introspect(
    binding: DatabaseBinding,
    *,
    scope: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> Introspection:
    """Observe the bound schema, or only the tables and views named in ``scope`` (an unknown
    name is NotFoundError, exit 3). ``progress(done, total, table)`` follows each table."""
    import sqlalchemy as sa

    engine = _engine(binding)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sa.exc.SAWarning)  # unknown types: reported as ""
            with engine.connect() as conn:
                return _observe(binding, conn, scope, progress)
    except sa.exc.DBAPIError as err:
        reason = postgres_reason(binding, err.orig if err.orig is not None else err)
    finally:
        engine.dispose()
    # outside the except block: SQLAlchemy's error (it quotes the SQL) is not kept as context
    raise DatabaseUnavailable(f"workspace database {binding.display}: {reason}")


def _engine(binding: DatabaseBinding) -> Engine:
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    if binding.dialect == "sqlite":
        return sa.create_engine(
            "sqlite+pysqlite://", creator=lambda: connect_sqlite(binding)[0], poolclass=NullPool
        )

    def postgres() -> Any:
        import psycopg

        conn = connect_postgres(binding, timeout_ms=binding.timeout_ms)
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        return conn

    return sa.create_engine("postgresql+psycopg://", creator=postgres, poolclass=NullPool)


def _observe(
    binding: DatabaseBinding,
    conn: Connection,
    scope: Sequence[str] | None,
    progress: Progress | None,
) -> Introspection:
    from sqlalchemy import inspect
    from sqlalchemy.engine.reflection import ObjectKind

    raw: Any = conn.connection.dbapi_connection  # the driver's connection under SQLAlchemy
    schema = binding.schema
    if binding.dialect == "sqlite":
        version = sqlite_structure_version(raw)
    else:
        require_schema(binding, raw)
        version = postgres_structure_version(raw, schema or "public")
    inspector = inspect(conn)
    kinds: dict[str, Literal["table", "view"]] = dict.fromkeys(
        inspector.get_table_names(schema=schema), "table"
    )
    views = inspector.get_view_names(schema=schema)
    if binding.dialect == "postgresql":
        views += inspector.get_materialized_view_names(schema=schema)
    kinds.update(dict.fromkeys(views, "view"))
    names = sorted(kinds) if scope is None else _resolve_scope(binding, scope, kinds)
    wanted = None if scope is None else names
    caps: dict[str, Capability] = {"tables": "observed"}

    def observe(category: str, call: Callable[[], Mapping[_Key, T]]) -> Mapping[_Key, T] | None:
        return _category(conn, caps, category, call) if names else _empty(caps, category)

    table_kinds = ObjectKind.TABLE  # (SQLite has no materialized views to look for)
    if binding.dialect == "postgresql":
        table_kinds |= ObjectKind.MATERIALIZED_VIEW
    columns = observe("columns", lambda: _columns(inspector, schema, names, kinds, wanted))
    pks = observe(
        "primary_keys",
        lambda: inspector.get_multi_pk_constraint(schema=schema, filter_names=wanted),
    )
    fks = observe(
        "relationships",
        lambda: inspector.get_multi_foreign_keys(schema=schema, filter_names=wanted),
    )
    indexes = observe(
        "indexes",
        lambda: inspector.get_multi_indexes(schema=schema, filter_names=wanted, kind=table_kinds),
    )
    comments = _comments(inspector, schema, wanted) if names else {}
    tables = []
    for done, name in enumerate(names, 1):
        key = (schema, name)
        tables.append(
            _table(
                binding,
                conn,
                name,
                kinds[name],
                (columns or {}).get(key, []),
                (pks or {}).get(key) or {},
                comments.get(key) or {},
            )
        )
        if progress is not None:
            progress(done, len(names), name)
    return Introspection(
        dialect=binding.dialect,
        schema=schema,
        scope=None if scope is None else tuple(names),
        tables=tuple(tables),
        relationships=_relationships(schema, names, fks) if fks is not None else (),
        indexes=_indexes(schema, names, indexes) if indexes is not None else (),
        capabilities={category: caps[category] for category in CAPABILITY_CATEGORIES},
        version=version,
    )


def _resolve_scope(
    binding: DatabaseBinding, scope: Sequence[str], kinds: Mapping[str, str]
) -> list[str]:
    """The real names of the scoped tables: exact, else the one case-insensitive match."""
    resolved, unknown = set(), []
    for asked in scope:
        if asked in kinds:
            resolved.add(asked)
            continue
        folded = [n for n in kinds if n.lower() == asked.lower()]
        if len(folded) == 1:
            resolved.add(folded[0])
        else:
            unknown.append(asked)
    if unknown:
        where = f"schema {binding.schema}" if binding.schema else "the database"
        shown = ", ".join(repr(u) for u in unknown)
        raise NotFoundError(
            f"workspace database {binding.display}: no table or view named {shown} in {where}",
            details={"unknown": unknown},
        )
    return sorted(resolved)


def _empty(caps: dict[str, Capability], category: str) -> dict[_Key, Any]:
    caps[category] = "observed"
    return {}


def _category(
    conn: Connection,
    caps: dict[str, Capability],
    category: str,
    call: Callable[[], Mapping[_Key, T]],
) -> Mapping[_Key, T] | None:
    """One category's facts, or None (``unavailable``) when the backend cannot give them."""
    import sqlalchemy as sa

    try:
        found = call()
    except NotImplementedError:
        caps[category] = "unavailable"
        return None
    except sa.exc.DBAPIError as err:
        state = getattr(err.orig, "sqlstate", None)
        if state != "42501":  # insufficient privilege: that category only
            raise
        conn.rollback()
        caps[category] = "unavailable"
        return None
    caps[category] = "observed"
    return found


def _comments(inspector: Any, schema: str | None, wanted: list[str] | None) -> Mapping[_Key, Any]:
    import sqlalchemy as sa

    try:
        found: Mapping[_Key, Any] = inspector.get_multi_table_comment(
            schema=schema, filter_names=wanted
        )
    except (NotImplementedError, sa.exc.DBAPIError) as err:
        # comments are context, not a capability category: without them the tables stand
        logger.debug("table comments not read: %s", type(err).__name__)
        return {}
    return found


def _columns(
    inspector: Any,
    schema: str | None,
    names: Sequence[str],
    kinds: Mapping[str, str],
    wanted: list[str] | None,
) -> Mapping[_Key, Any]:
    """Columns of tables, then of views only when there are any (one call per kind: asking
    for every kind at once makes SQLAlchemy look for each kind's names, per table on SQLite)."""
    from sqlalchemy.engine.reflection import ObjectKind

    found = dict(inspector.get_multi_columns(schema=schema, filter_names=wanted))
    views = [n for n in names if kinds[n] == "view"]
    if views:
        view_kinds = ObjectKind.VIEW | ObjectKind.MATERIALIZED_VIEW
        found.update(
            inspector.get_multi_columns(schema=schema, filter_names=views, kind=view_kinds)
        )
    return found


def _type_text(coltype: Any, compile_type: Callable[[Any], str]) -> str:
    from sqlalchemy.types import NullType

    if isinstance(coltype, NullType):
        return ""
    try:
        return str(compile_type(coltype))
    except Exception:  # a type the dialect cannot render: its class name still says something
        return type(coltype).__name__.upper()


def _table(
    binding: DatabaseBinding,
    conn: Connection,
    name: str,
    kind: Literal["table", "view"],
    columns: Sequence[Mapping[str, Any]],
    pk: Mapping[str, Any],
    comment: Mapping[str, Any],
) -> ObservedTable:
    pk_columns = list(pk.get("constrained_columns") or [])
    pk_positions = {column: position for position, column in enumerate(pk_columns, 1)}
    rowid_alias = binding.dialect == "sqlite" and len(pk_columns) == 1
    compile_type = conn.dialect.type_compiler_instance.process
    observed = []
    for position, column in enumerate(columns, 1):
        type_text = _type_text(column["type"], compile_type)
        pk_position = pk_positions.get(column["name"], 0)
        nullable = bool(column.get("nullable", True))
        if rowid_alias and pk_position and type_text == "INTEGER":
            nullable = False  # the rowid alias: SQLite never stores NULL there
        observed.append(
            ObservedColumn(
                name=column["name"],
                position=position,
                type=type_text,
                nullable=nullable,
                pk=pk_position > 0,
                pk_position=pk_position,
                comment=column.get("comment") or "",
            )
        )
    return ObservedTable(
        name=name, columns=tuple(observed), kind=kind, comment=comment.get("text") or ""
    )


def _relationships(
    schema: str | None, names: Sequence[str], found: Mapping[_Key, Sequence[Mapping[str, Any]]]
) -> tuple[PhysicalRelationship, ...]:
    out: list[PhysicalRelationship] = []
    for table in names:
        fks = list(found.get((schema, table)) or [])
        taken = {fk["name"] for fk in fks if fk.get("name")}
        unnamed = sorted(
            (fk for fk in fks if not fk.get("name")),
            key=lambda fk: (
                fk["referred_table"],
                fk["constrained_columns"],
                fk["referred_columns"],
            ),
        )
        named = [(fk["name"], fk) for fk in fks if fk.get("name")]
        for fk in unnamed:
            base = f"{table}_{'_'.join(fk['constrained_columns'])}_fkey"
            name, suffix = base, 0
            while name in taken:
                suffix += 1
                name = f"{base}{suffix}"
            taken.add(name)
            named.append((name, fk))
        for name, fk in named:
            referred = fk["referred_table"]
            other = fk.get("referred_schema")
            if other and other != schema:
                referred = f"{other}.{referred}"
            out.append(
                PhysicalRelationship(
                    constraint=name,
                    from_table=table,
                    from_columns=tuple(fk["constrained_columns"]),
                    to_table=referred,
                    to_columns=tuple(fk["referred_columns"]),
                )
            )
    return tuple(sorted(out, key=lambda r: (r.from_table, r.constraint)))


def _indexes(
    schema: str | None, names: Sequence[str], found: Mapping[_Key, Sequence[Mapping[str, Any]]]
) -> tuple[ObservedIndex, ...]:
    out = []
    for table in names:
        for index in found.get((schema, table)) or []:
            expressions = list(index.get("expressions") or [])
            columns = tuple(
                column
                if column is not None
                else str(expressions[i] if i < len(expressions) else "")
                for i, column in enumerate(index.get("column_names") or [])
            )
            out.append(
                ObservedIndex(
                    name=str(index["name"]),
                    table=table,
                    columns=columns,
                    unique=bool(index.get("unique")),
                )
            )
    return tuple(sorted(out, key=lambda i: (i.table, i.name)))
