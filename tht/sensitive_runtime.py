"""The Sensitive Data Policy downstream, composed (docs/catalog.md "Sensitive data").

Which columns are sensitive: the Sensitive Data Flags of the live Metadata Catalog and, for a
session, those of its Effective Relationship Snapshot too (the union: a column flagged after
the session's F4 is still sensitive, and one cleared since is still treated as the session saw
it). A masking decision folds the **verified** catalog ledger, never its cache (ARCHITECTURE
§3.9 rule 4: anyone in the shell can write the cache; a crafted one must not unflag a column).

- :func:`sensitive_read` — the sensitive columns a checked SQL reads (``tht sql check``);
- :func:`result_mask` — the result columns to mask (F7's ``result_sample.json``,
  ``tht sql run``), by :func:`kernel.database.sensitive_lineage.masked_positions`;
- :func:`redact_reason` — a database's error message about a query that reads a sensitive
  column, with its quoted fragments removed (PostgreSQL quotes the offending value:
  ``invalid input syntax for type integer: "…"``), before it reaches a ledger or an output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel.schema_view import SchemaView
    from kernel.workflow_kernel import LoadedSession
    from tht.composition import App

__all__ = ["flagged", "reads_sensitive", "redact_reason", "result_mask", "sensitive_read"]

Pair = tuple[str, str]
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


def flagged(
    app: App, loaded: LoadedSession | None = None, *, verified: bool = True
) -> tuple[set[Pair], SchemaView | None]:
    """The sensitive ``(table, column)`` pairs (lower-cased) and the view a query is read
    against (the session's snapshot when it has one, else the live catalog's; None: neither)."""
    from kernel.database.sensitive_lineage import sensitive_columns
    from tht.catalog_runtime import schema_view
    from tht.sql_runtime import session_view

    live = schema_view(app, verified=verified)
    pairs = sensitive_columns(live) if live is not None else set()
    view = live
    if loaded is not None:
        seen = session_view(app, loaded, verified=verified)
        if seen is not None:
            pairs |= sensitive_columns(seen)
            view = seen
    return pairs, view


def sensitive_read(
    columns: Sequence[str], app: App, loaded: LoadedSession | None = None
) -> list[str]:
    """Of the ``table.column`` refs a SQL check resolved, the sensitive ones (display path)."""
    pairs, _ = flagged(app, loaded, verified=False)
    found = []
    for ref in columns:
        table, _, column = ref.partition(".")
        if (table.lower(), column.lower()) in pairs:
            found.append(ref)
    return found


def result_mask(
    app: App, sql: str, result_columns: Sequence[str], loaded: LoadedSession | None = None
) -> tuple[int, ...]:
    """The positions of ``result_columns`` that carry a sensitive column's values."""
    from kernel.database.sensitive_lineage import masked_positions

    pairs, view = flagged(app, loaded, verified=True)
    if not pairs or view is None:
        return ()
    return masked_positions(sql, view, pairs, result_columns)


def reads_sensitive(app: App, sql: str, loaded: LoadedSession | None = None) -> bool:
    """Whether ``sql`` names a table with a sensitive column (a word, any case)."""
    from kernel.database.sensitive_lineage import names_flagged_table

    pairs, _ = flagged(app, loaded, verified=True)
    return names_flagged_table(sql, pairs)


def redact_reason(reason: str) -> str:
    """``reason`` without its quoted fragments (the database may quote a value)."""
    return _QUOTED.sub('"[redacted]"', reason)
