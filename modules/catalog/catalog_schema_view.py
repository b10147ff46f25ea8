"""``CatalogSchemaView``: the kernel's :class:`~kernel.schema_view.SchemaView` over the folded
catalog — what Disambiguation, schema linking and SQL validation see of the Workspace Database.

Tables with their columns (types, key flags, Sensitive Data Flags, Descriptions) and the
**active** relationships only (physical ones between Catalog Tables, and active Logical
Relationships). ``version`` is ``catalog:<seq>:<head[:12]>``: the catalog's logical position,
so a view of the same catalog always has the same version.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel.schema_view import SchemaColumn, SchemaRelationship, SchemaTable
from modules.catalog.records import CatalogState, CatalogTable
from modules.catalog.relationship_map import active_relationships

__all__ = ["CatalogSchemaView", "sqlglot_dialect"]

_SQLGLOT = {"postgresql": "postgres"}


def sqlglot_dialect(dialect: str) -> str:
    """The binding's dialect (``sqlite`` | ``postgresql``) as sqlglot names it."""
    return _SQLGLOT.get(dialect, dialect)


def _schema_table(table: CatalogTable) -> SchemaTable:
    return SchemaTable(
        name=table.name,
        description=table.description,
        columns=tuple(
            SchemaColumn(
                name=c.name,
                type=c.type,
                position=c.position,
                nullable=c.nullable,
                pk=c.pk,
                sensitive=c.sensitive,
                description=c.description,
            )
            for c in table.columns
        ),
    )


class CatalogSchemaView:
    """A read-only view of one folded catalog state (built lazily, then kept)."""

    def __init__(self, state: CatalogState, head: str) -> None:
        self._state = state
        self._version = f"catalog:{state.last_seq}:{head[:12]}"
        self._tables: dict[str, SchemaTable] | None = None
        self._relationships: list[SchemaRelationship] | None = None

    @property
    def dialect(self) -> str:
        return sqlglot_dialect(self._state.dialect or "sqlite")

    @property
    def version(self) -> str:
        return self._version

    @property
    def binding(self) -> str:
        """The redacted Database Binding of the last completed sync ("" before any)."""
        run = self._state.runs.get(self._state.last_completed or "")
        return run.binding if run is not None else ""

    def _built(self) -> dict[str, SchemaTable]:
        if self._tables is None:
            self._tables = {
                name: _schema_table(self._state.tables[name]) for name in sorted(self._state.tables)
            }
        return self._tables

    def tables(self) -> Sequence[SchemaTable]:
        return tuple(self._built().values())

    def table(self, name: str) -> SchemaTable | None:
        built = self._built()
        found = built.get(name)
        if found is not None:
            return found
        folded = [t for t in built.values() if t.name.lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None

    def relationships(self) -> Sequence[SchemaRelationship]:
        if self._relationships is None:
            self._relationships = active_relationships(self._state)
        return tuple(self._relationships)
