"""``tht search find / pack``: the Evidence Search Outcome and the stage's evidence pack.

``find`` prints ``{"status", "generation", "results": [{"id", "kind", "title", "score",
"excerpt", "source", "fragments"}]}``; ``unavailable`` (index missing, corrupt, incompatible or
stale) prints the outcome with its warning and exits 6. ``pack`` also records the Evidence receipt
in the session ledger when the search was available.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from kernel.capabilities import SessionView
    from tht.composition import App

from tht.options import DebugOpt, JsonOpt, SessionArg, WorkspaceOpt, invocation

app = typer.Typer(
    name="search",
    help="Search the published evidence (fail-closed: never a stale or foreign index).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

PURPOSES = ("disambiguation", "rewriting", "schema_linking", "sql_generation")


def _where(values: list[str]) -> dict[str, object]:
    from kernel.errors import UsageError

    out: dict[str, object] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--where {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


@app.command("find")
def find_cmd(
    query: Annotated[str, typer.Argument(help="The question or terms to look for.")],
    purpose: Annotated[
        str,
        typer.Option("--purpose", help=f"Evidence purpose (filter): {', '.join(PURPOSES)}."),
    ] = "schema_linking",
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Evidence kind(s) to keep.")
    ] = None,
    where: Annotated[
        list[str] | None, typer.Option("--where", help="Metadata filter KEY=VALUE (repeatable).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100)] = 10,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Hybrid (dense + BM25, RRF) search of the active evidence generation."""
    from kernel.errors import UsageError
    from tht.evidence_runtime import open_evidence

    inv = invocation(workspace, json_, debug)
    if not query.strip():
        raise UsageError("QUERY is empty")
    if purpose not in PURPOSES:
        raise UsageError(f"--purpose {purpose!r}: expected one of {', '.join(PURPOSES)}")
    kinds = list(kind or [])
    from modules.evidence.units import EVIDENCE_KINDS

    bad = [k for k in kinds if k not in EVIDENCE_KINDS]
    if bad:
        raise UsageError(f"--kind {bad[0]!r}: expected one of {', '.join(EVIDENCE_KINDS)}")
    filters = _where(list(where or []))
    runtime = open_evidence(inv.workspace)
    from modules.evidence.query_text import evidence_query_text
    from modules.evidence.search import search_evidence

    try:
        outcome = search_evidence(
            runtime.capabilities(),
            evidence_query_text(query),
            purpose=purpose,
            kinds=kinds,
            where=filters,
            limit=limit,
        )
    finally:
        runtime.close()
    body = outcome.to_json()
    if outcome.status == "unavailable":
        inv.note(f"warning: {outcome.warning}")
        inv.emit(body, f"unavailable: {outcome.warning}")
        raise typer.Exit(6)
    lines = [f"generation {outcome.generation}: {len(outcome.results)} result(s)"]
    for r in outcome.results:
        lines.append(f"  {r.score:.4f}  {r.unit_id}  [{r.kind}] {r.title}")
    inv.emit(body, "\n".join(lines))


@app.command("pack")
def pack_cmd(
    session: SessionArg = None,
    stage: Annotated[str, typer.Option("--stage", help="The stage the pack is for.")] = "",
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The stage's evidence pack (top 5); records an Evidence receipt in the session."""
    from kernel.errors import UsageError
    from tht.evidence_runtime import open_evidence
    from tht.options import session_or_env

    inv = invocation(workspace, json_, debug)
    if not stage:
        raise UsageError("--stage STAGE is required")
    from tht.composition import open_app, resolve_session

    app_ = open_app(inv.workspace)
    sid = resolve_session(app_, session_or_env(session))
    runtime = open_evidence(inv.workspace, trust=lambda: app_.kernel.trust)
    from modules.evidence.consultation import evidence_pack

    try:
        view = _session_view(app_, sid, stage)
        pack = evidence_pack(runtime.capabilities(), view)
    finally:
        runtime.close()
    body = pack.to_json()
    if pack.receipt is not None:
        applied = app_.kernel.apply_outcome(sid, stage, pack.receipt, actor="module:evidence")
        from kernel.events import EvidenceConsulted

        seqs = [e.seq for e in applied.events if isinstance(e, EvidenceConsulted)]
        body["receipt"] = seqs[-1] if seqs else None
    schema = _schema_section(app_, view, pack) if stage == "schema_linking" else None
    if schema is not None:
        body["schema"] = schema
    if pack.outcome.status == "unavailable":
        inv.note(f"warning: {pack.outcome.warning}")
        inv.emit(body, f"unavailable: {pack.outcome.warning}")
        raise typer.Exit(6)
    lines = [f"{stage} ({pack.purpose}), generation {pack.outcome.generation}:"]
    evidence: list[dict[str, Any]] = body["evidence"]  # type: ignore[assignment]
    for item in evidence:
        lines.append(f"  {item['id']}  [{item['kind']}] {item['title']}")
    if schema is not None and schema["status"] == "available":
        lines.append(f"linked schema for: {schema['question']}")
        lines += [f"  table {t['name']} ({t['score']:.4f})" for t in schema["tables"]]
        lines += [f"  join {j['from']} = {j['to']}" for j in schema["joins"]]
    elif schema is not None:
        inv.note(f"warning: linked schema unavailable: {schema['warning']}")
        if schema["reason"] != "no_database":  # fail closed: the stage needs it
            inv.emit(body, "\n".join(lines))
            raise typer.Exit(6)
    inv.emit(body, "\n".join(lines))


def _schema_section(app_: App, view: SessionView, pack: Any) -> dict[str, Any]:
    """The linked schema for the session's (rewritten) question; the pack's results are the
    Evidence Hints (tht/schema_runtime.py)."""
    from tht.schema_runtime import schema_pack_section, session_question

    results = [(r.kind, r.title, r.excerpt) for r in pack.outcome.results]
    return schema_pack_section(app_, session_question(view), results)


def _session_view(app_: App, session: str, stage: str) -> SessionView:
    """The read-only view of ``session`` at ``stage`` the Evidence module is given."""
    from kernel.capabilities import SessionView
    from kernel.outcomes import invocation_id

    loaded = app_.kernel.load(session)
    step = loaded.workflow.step(stage)  # unknown stage → exit 3
    view = loaded.state.stage(stage)
    return SessionView(
        session=session,
        question=loaded.state.question,
        stage=stage,
        invocation=invocation_id(step, view) if view is not None else "",
        effective_decisions=loaded.state.effective_decisions(),
    )
