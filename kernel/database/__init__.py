"""The Workspace Database mechanism (ARCHITECTURE §3.6, §3.8; docs/database.md).

- :class:`DatabaseBinding` / :func:`binding_from_settings`: how ``workspace.yaml`` reaches the
  Workspace Database (a SQLite file in the workspace, or a PostgreSQL URL from the environment);
  its ``display`` is safe to print, its URL and password never leave it;
- :func:`introspect`: tables, columns, physical relationships and indexes with an explicit
  Introspection Capability per category (SQLAlchemy 2 Core, imported on first use);
- :func:`structure_version`: a one-query fingerprint of the structure (Catalog Freshness);
- :func:`run_read_only`: one read-only query with a row limit, a timeout and cancellation;
  :func:`read_only_session`: many such queries on one connection (a value index rebuild);
- :func:`check_reachable`: open it read-only, or say why not (exit 6).

Every connection is read-only at the connection level (:mod:`kernel.database.readonly`):
tht never writes to the Workspace Database. Importing this package is cheap: SQLAlchemy and
psycopg are imported by the calls that need them.
"""

from kernel.database.binding import (
    DEFAULT_ROW_LIMIT,
    DEFAULT_TIMEOUT_MS,
    DatabaseBinding,
    Dialect,
    binding_from_settings,
    binding_from_url,
)
from kernel.database.errors import DatabaseUnavailable, QueryFailed, QueryRefused, QueryTimeout
from kernel.database.executor import ReadOnlySession, read_only_session, run_read_only
from kernel.database.introspection import introspect
from kernel.database.readonly import check_reachable
from kernel.database.types import (
    CAPABILITY_CATEGORIES,
    Capability,
    Introspection,
    ObservedColumn,
    ObservedIndex,
    ObservedTable,
    PhysicalRelationship,
    QueryResult,
    ResultColumn,
)
from kernel.database.version import structure_version

__all__ = [
    "CAPABILITY_CATEGORIES",
    "DEFAULT_ROW_LIMIT",
    "DEFAULT_TIMEOUT_MS",
    "Capability",
    "DatabaseBinding",
    "DatabaseUnavailable",
    "Dialect",
    "Introspection",
    "ObservedColumn",
    "ObservedIndex",
    "ObservedTable",
    "PhysicalRelationship",
    "QueryFailed",
    "QueryRefused",
    "QueryResult",
    "QueryTimeout",
    "ReadOnlySession",
    "ResultColumn",
    "binding_from_settings",
    "binding_from_url",
    "check_reachable",
    "introspect",
    "read_only_session",
    "run_read_only",
    "structure_version",
]
