"""SQL in the session, composed (docs/sql.md): the schema a check uses, the bodies of
``tht sql check`` / ``tht sql run``, the F5/F6 proposal rule and the F4 snapshot.

Which schema a check uses:

- with a session that recorded its **Effective Relationship Snapshot** (``catalog_snapshot.json``,
  written by tht at the session's F4 proposal), that snapshot, read through the kernel and
  verified against the hash in the ledger — the session is checked against the catalog it saw;
- otherwise the live Metadata Catalog (``tht.catalog_runtime.schema_view``);
- no catalog: ``tht sql check`` is a usage error (exit 2, run ``tht catalog sync``).

A session's approved F5 CTEs (effective ``cte_approved``: a name and its ``cte/<n>.sql``) are
table names F6's SQL may use; their columns are the CTE's output columns. What F7 runs is the
final SQL with those CTEs put in front (:func:`runnable_sql`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kernel.errors import IntegrityError, PolicyError, UsageError
from kernel.schema_view import SNAPSHOT_ARTIFACT

if TYPE_CHECKING:
    from kernel.database.sqlcheck import SqlCheck, SqlProblem
    from kernel.database.sqlcheck_compose import CteParts
    from kernel.reviewer_tools import Proposal
    from kernel.schema_view import SchemaView
    from kernel.workflow_kernel import LoadedSession
    from tht.composition import App

__all__ = [
    "SQL_ARTIFACT",
    "approved_ctes",
    "check_file",
    "check_proposal_sql",
    "is_sql_artifact",
    "prepare_proposal",
    "run_file",
    "runnable_sql",
    "session_view",
]

SQL_ARTIFACT = "sql_final.sql"
_CTE_PREFIX = "cte/"
#: proposal kinds that write their artifacts (the snapshot goes with them)
_WRITING_KINDS = frozenset({"select", "decide", "confirm", "auto"})
#: at most this much SQL is read by ``tht sql check`` / ``tht sql run``
MAX_SQL_BYTES = 1024 * 1024


def is_sql_artifact(name: str) -> bool:
    """F6's ``sql_final.sql`` and F5's ``cte/<n>.sql``: the artifacts the SQL check covers."""
    return name == SQL_ARTIFACT or (name.startswith(_CTE_PREFIX) and name.endswith(".sql"))


# ----------------------------------------------------------------------------- the schema


def _live_view(app: App, *, verified: bool = False) -> SchemaView | None:
    """The Metadata Catalog's view (None: never synced); ``verified`` for a decision: folded
    from the verified catalog ledger, never from its cache (ARCHITECTURE §3.9 rule 4)."""
    from tht.catalog_runtime import schema_view

    return schema_view(app, verified=verified)


def session_view(app: App, loaded: LoadedSession, *, verified: bool = False) -> SchemaView | None:
    """The session's snapshot when it recorded one, else the live catalog's view."""
    if loaded.state.effective_artifact(SNAPSHOT_ARTIFACT) is None:
        return _live_view(app, verified=verified)
    import msgspec

    from kernel.schema_view import decode_snapshot

    data = app.kernel.artifact(loaded.session, SNAPSHOT_ARTIFACT, loaded=loaded)
    try:
        return decode_snapshot(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as err:
        raise IntegrityError(
            f"session {loaded.session}: {SNAPSHOT_ARTIFACT} does not decode: {err}"
        ) from err


def _database_bound(app: App) -> bool:
    return app.settings.database is not None


def _no_catalog(app: App) -> UsageError:
    if _database_bound(app):
        return UsageError(
            "catalog not synced: the workspace database has no Metadata Catalog yet; run "
            "`tht catalog sync` first"
        )
    return UsageError(
        f"catalog not synced: no database is bound in {app.workspace.settings_file.name} "
        "(add `database: {url: sqlite:///data/your.db}`), then run `tht catalog sync`"
    )


# ------------------------------------------------------------------------------- F5 CTEs


def approved_ctes(app: App, loaded: LoadedSession) -> list[tuple[str, str]]:
    """The session's effective approved CTEs, ``(name, artifact text)`` in approval order,
    each read through the kernel (verified against the ledger's hash)."""
    from kernel.events import CteApproved

    found: list[tuple[str, str]] = []
    for decision in sorted(loaded.state.effective_decisions(), key=lambda d: d.seq):
        event = decision.event
        if not isinstance(event, CteApproved):
            continue
        artifact = event.payload.artifact
        if loaded.state.effective_artifact(artifact) is None:
            continue
        body = app.kernel.artifact(loaded.session, artifact, loaded=loaded).decode(
            "utf-8", errors="replace"
        )
        found.append((event.payload.name, body))
    return found


def _cte_columns(
    ctes: Sequence[tuple[str, str]], view: SchemaView, known: Mapping[str, Any] | None = None
) -> dict[str, tuple[str, ...] | None]:
    """Each CTE's output columns (its column list, else its query's), a CTE seeing those
    before it."""
    from kernel.database.sqlcheck import output_columns, sqlglot_dialect
    from kernel.database.sqlcheck_compose import split_cte

    extras: dict[str, tuple[str, ...] | None] = dict(known or {})
    for name, text in ctes:
        parts = split_cte(text, sqlglot_dialect(view.dialect))
        extras[name] = parts.columns or output_columns(parts.body, view, extra_tables=extras)
    return extras


def runnable_sql(app: App, loaded: LoadedSession, sql: str, dialect: str) -> str:
    """What F7 runs: ``sql`` with the approved CTEs it names (and does not define) in front;
    ``dialect``: the binding's sqlglot dialect."""
    from kernel.database.sqlcheck_compose import compose_with_ctes

    ctes = approved_ctes(app, loaded)
    return compose_with_ctes(sql, ctes, dialect) if ctes else sql


# ----------------------------------------------------------------------- tht sql check/run


def _text(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{source}: not UTF-8 text ({err.reason} at byte {err.start})") from err


def check_file(
    app: App, data: bytes, source: str, session: str | None
) -> tuple[SqlCheck, list[str]]:
    """``tht sql check``: the SQL against the session's schema (``session``) or the catalog;
    the check and the sensitive columns it reads (``t.c``)."""
    from kernel.database.sqlcheck import check_sql
    from tht.sensitive_runtime import sensitive_read

    sql = _text(data, source)
    extras: dict[str, tuple[str, ...] | None] = {}
    loaded = None
    if session is not None:
        loaded = app.kernel.load(session)
        view = session_view(app, loaded)
        if view is not None:
            extras = _cte_columns(approved_ctes(app, loaded), view)
    else:
        view = _live_view(app)
    if view is None:
        raise _no_catalog(app)
    result = check_sql(sql, view, extra_tables=extras)
    return result, sensitive_read(result.columns, app, loaded)


def run_file(
    app: App, data: bytes, source: str, *, limit: int | None, timeout_ms: int | None
) -> dict[str, Any]:
    """``tht sql run``: one read-only query through the executor (its read-only connection
    refuses any write, exit 5); the defaults are the binding's ``row_limit``/``timeout_ms``.
    The rows are the executor's JSON values (``kernel.database.canonical``)."""
    from kernel.database import binding_from_settings, run_read_only

    sql = _text(data, source)
    ws = app.workspace
    binding = binding_from_settings(ws.root, ws.settings_file, app.settings.database, os.environ)
    if binding is None:
        raise UsageError(
            f"no database bound in {ws.settings_file.name}: add "
            "`database: {url: sqlite:///data/your.db}` (or url_env for PostgreSQL)"
        )
    from kernel.database.errors import QueryFailed
    from kernel.verification import mask_rows
    from tht.sensitive_runtime import reads_sensitive, redact_reason, result_mask

    try:
        result = run_read_only(
            binding,
            sql,
            limit=binding.row_limit if limit is None else limit,
            timeout_ms=binding.timeout_ms if timeout_ms is None else timeout_ms,
        )
    except QueryFailed as err:
        if not reads_sensitive(app, sql):
            raise
        # the database may quote a value of a sensitive column in its reason
        raise QueryFailed(redact_reason(err.message)) from None
    # the Sensitive Data Policy: a result column carrying a sensitive column's values is masked
    masked = result_mask(app, sql, [c.name for c in result.columns])
    body: dict[str, Any] = {
        "columns": [{"name": c.name, "type": c.type} for c in result.columns],
        "rows": [list(row) for row in mask_rows(result.rows, masked)],
        "row_count": result.row_count,
        "truncated": result.truncated,
        "elapsed_ms": round(float(result.elapsed_ms), 3),
    }
    if masked:
        body["masked"] = list(masked)
    return body


# -------------------------------------------------------------------- proposals (F4, F5, F6)


def prepare_proposal(
    app: App, session: str, stage: str, proposal: Proposal, loaded: LoadedSession
) -> Proposal:
    """What ``App.propose`` calls before the stage's policy: the SQL artifacts are checked
    (:func:`check_proposal_sql`) and, on a step that declares ``catalog_snapshot.json`` (F4),
    the session's Effective Relationship Snapshot is added when it has none yet."""
    if any(a.name == SNAPSHOT_ARTIFACT for a in proposal.artifacts):
        raise PolicyError(
            f"{SNAPSHOT_ARTIFACT} is recorded by tht from the Metadata Catalog; a proposal "
            "cannot carry it (remove it from artifacts)"
        )
    step = loaded.workflow.step(stage)
    # an artifact the step does not declare is the kernel's to refuse (exit 5), not the check's
    if any(is_sql_artifact(a.name) and step.allows_artifact(a.name) for a in proposal.artifacts):
        check_proposal_sql(app, session, stage, proposal, loaded=loaded)
    if (
        SNAPSHOT_ARTIFACT in step.artifacts
        and proposal.kind in _WRITING_KINDS
        and loaded.state.effective_artifact(SNAPSHOT_ARTIFACT) is None
    ):
        return _with_snapshot(app, proposal)
    return proposal


def _with_snapshot(app: App, proposal: Proposal) -> Proposal:
    import msgspec

    from kernel.reviewer_tools import ProposalArtifact
    from kernel.schema_view import encode_snapshot

    view = _live_view(app, verified=True)  # recorded in the session: never from a cache
    if view is None:
        return proposal  # nothing synced: F5/F6 then say what to do
    snapshot = ProposalArtifact(name=SNAPSHOT_ARTIFACT, content=encode_snapshot(view).decode())
    return msgspec.structs.replace(proposal, artifacts=(*proposal.artifacts, snapshot))


def check_proposal_sql(
    app: App,
    session: str,
    stage: str,
    proposal: Proposal,
    *,
    loaded: LoadedSession | None = None,
) -> None:
    """Reject (exit 2, one line per problem, nothing appended) a proposal whose SQL artifacts
    fail the check against the session's schema.

    Each ``cte/<n>.sql`` may use the session's approved CTEs and the CTEs before it in the
    proposal (named by the proposal's ``cte_approved`` events); ``sql_final.sql`` may use all
    of them. No catalog and no database: nothing to check against — said on stderr, and the
    proposal goes on. A bound database with no catalog: exit 2, sync first."""
    from kernel.database.sqlcheck import check_sql, sqlglot_dialect
    from kernel.database.sqlcheck_compose import split_cte

    if loaded is None:
        loaded = app.kernel.load(session)
    step = loaded.workflow.step(stage)
    artifacts = [
        a for a in proposal.artifacts if is_sql_artifact(a.name) and step.allows_artifact(a.name)
    ]
    if not artifacts:
        return
    view = session_view(app, loaded, verified=True)
    if view is None:
        if _database_bound(app):
            raise UsageError(
                f"proposal for {stage} not accepted: its SQL cannot be checked because the "
                "workspace database has no Metadata Catalog yet; run `tht catalog sync` first"
            )
        sys.stderr.write(
            f"note: no database bound and no catalog synced: the SQL of this {stage} proposal "
            "was not checked\n"
        )
        return
    proposed = _proposed_cte_names(proposal)
    known = _cte_columns(
        [(n, b) for n, b in approved_ctes(app, loaded) if n not in proposed.values()], view
    )
    dialect = sqlglot_dialect(view.dialect)
    problems: list[tuple[str, SqlProblem]] = []
    read: set[str] = set()
    for artifact in sorted(artifacts, key=lambda a: a.name == SQL_ARTIFACT):  # final SQL last
        if artifact.name == SQL_ARTIFACT:
            result = check_sql(artifact.content, view, extra_tables=known)
            problems.extend((artifact.name, p) for p in result.problems)
            read.update(result.columns)
            continue
        parts = split_cte(artifact.content, dialect)
        result = check_sql(parts.body, view, extra_tables=known)
        problems.extend((artifact.name, _shifted(p, parts)) for p in result.problems)
        read.update(result.columns)
        name = proposed.get(artifact.name) or parts.name
        if name is not None:  # later CTEs (and the final SQL) may use this one
            known = _cte_columns([(name, artifact.content)], view, known)
    if problems:
        raise _rejected(stage, problems)
    _note_sensitive(app, loaded, stage, sorted(read))


def _note_sensitive(app: App, loaded: LoadedSession, stage: str, columns: list[str]) -> None:
    from tht.sensitive_runtime import sensitive_read

    sensitive = sensitive_read(columns, app, loaded)
    if sensitive:
        sys.stderr.write(
            f"note: the SQL of this {stage} proposal reads sensitive column(s) "
            f"{', '.join(sensitive)}: their values are masked in result_sample.json\n"
        )


def _shifted(problem: SqlProblem, parts: CteParts) -> SqlProblem:
    """A problem of a CTE definition's query, placed in the artifact's own lines."""
    import msgspec

    from kernel.database.sqlcheck import SqlPosition

    at = problem.position
    if at is None or (parts.line, parts.col) == (1, 1):
        return problem
    col = at.col + parts.col - 1 if at.line == 1 else at.col
    moved = SqlPosition(line=at.line + parts.line - 1, col=col)
    return msgspec.structs.replace(problem, position=moved)


def _proposed_cte_names(proposal: Proposal) -> dict[str, str]:
    """artifact → CTE name, from the proposal's ``cte_approved`` events (options or auto)."""
    events = [*proposal.events, *(e for o in proposal.options for e in o.events)]
    names: dict[str, str] = {}
    for event in events:
        if event.type != "cte_approved":
            continue
        artifact, name = event.payload.get("artifact"), event.payload.get("name")
        if isinstance(artifact, str) and isinstance(name, str) and name:
            names.setdefault(artifact, name)
    return names


def _rejected(stage: str, problems: list[tuple[str, SqlProblem]]) -> UsageError:
    count = len(problems)
    lines = [
        f"proposal for {stage} rejected: its SQL fails the check ({count} "
        f"problem{'s' if count != 1 else ''}; nothing was recorded)"
    ]
    lines += [f"  {problem.line(artifact)}" for artifact, problem in problems]
    return UsageError(
        "\n".join(lines),
        details={"problems": [{"artifact": a, **p.to_json()} for a, p in problems]},
    )
