"""``tht memory …``: the workspace's Memory registry (docs/memory.md; ARCHITECTURE §6).

``search``, ``list``, ``show``, ``promote --preview``, ``reindex`` and ``verify`` are open to
anyone (an agent may read the memory); ``forget`` is a human's act (``--as human:<id>``, refused
when ``THT_ACTOR=agent``, signed with the reviewer's key in signed mode). Saving a memory has no
command of its own: it is the reviewer's answer to F8's promotion review.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.commands._common import human_actor, open_for, session_for
from tht.options import (
    AcceptRollbackOpt,
    ActorOpt,
    DebugOpt,
    JsonOpt,
    SessionArg,
    WorkspaceOpt,
    invocation,
)

if TYPE_CHECKING:
    from modules.memory.records import MemoryRecord, MemoryState, SolvedQuestion

app = typer.Typer(
    name="memory",
    help="The workspace memory: recalled clarifications and solved questions.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Why.", show_default=False)]


def _provenance(record: MemoryRecord) -> str:
    return (
        f"from session {record.source_session} seq {record.source_seq}, "
        f"promoted by {record.reviewer}"
    )


def _memory_json(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.memory_id,
        "kind": "memory",
        "subject": record.subject,
        "meaning": record.meaning,
        "target": record.target,
        "rationale": record.rationale,
        "language": record.language,
        "status": record.status,
        "superseded_by": record.superseded_by,
        "forgotten_reason": record.forgotten_reason or None,
        "source": {"session": record.source_session, "seq": record.source_seq},
        "reviewer": record.reviewer,
        "saved_seq": record.saved_seq,
        "saved_at": record.saved_at,
        "history": list(record.history),
    }


def _solved_json(solved: SolvedQuestion) -> dict[str, Any]:
    return {
        "id": solved.solved_id,
        "kind": "solved_question",
        "question": solved.question,
        "rewritten": solved.rewritten,
        "sql": solved.sql,
        "sql_sha256": solved.sql_sha256,
        "evidence": list(solved.evidence),
        "tables": list(solved.tables),
        "result_sha256": solved.result_sha256,
        "source": {"session": solved.source_session, "seq": solved.source_seq},
        "saved_seq": solved.saved_seq,
        "saved_at": solved.saved_at,
    }


def _contradictions(state: MemoryState) -> list[list[str]]:
    return [[r.memory_id for r in group] for group in state.contradictions()]


# --------------------------------------------------------------------------- reading


@app.command("search")
def search_cmd(
    query: Annotated[str, typer.Argument(help="What to look for (a question, a concept).")],
    limit: Annotated[int, typer.Option("--limit", help="At most this many results.")] = 5,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="hybrid (default, F2's) | dense | bm25, for diagnostics; bm25 only with "
            "--explain (the floor reads no BM25 score: its ranking is the explanation).",
        ),
    ] = "hybrid",
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Also show the best candidates under the floor, each with its signals and why.",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Search memories and solved questions above the relevance floor (exit 6 when the index
    is missing or stale: `tht memory reindex`). `--explain`: why each candidate was or was not
    recalled. QUERY: at most 4,000 characters, as a session's question."""
    from kernel.errors import ThtError
    from tht.memory_runtime import search_memory

    inv = invocation(workspace, json_, debug)
    _check_search(query, mode, explain)
    app_ = open_for(inv)
    try:
        body = search_memory(app_, query, limit=limit, mode=mode, explain=explain)
    except ThtError as err:
        if err.exit_code != 6:
            raise
        reason = str(err.details.get("reason") or "unavailable")
        inv.note(f"warning: {err.message}")
        inv.emit(
            {"status": "unavailable", "reason": reason, "warning": err.message, "results": []},
            f"unavailable: {err.message}",
        )
        raise typer.Exit(6) from None
    lines = [f"{len(body['results'])} result(s)"]
    if mode == "bm25":  # only with --explain (_check_search)
        lines[0] += " (--mode bm25: the floor reads no BM25 score; the BM25 ranking is below)"
    for r in body["results"]:
        where = f"session {r['source']['session']} seq {r['source']['seq']}"
        if r["kind"] == "memory":
            target = f" → {r['target']}" if r["target"] else ""
            lines.append(
                f"  {r['score']:.4f}  {r['id']}  {r['subject']} = {r['meaning']}{target}  ({where})"
            )
        else:
            lines.append(f"  {r['score']:.4f}  {r['id']}  solved: {r['subject']}  ({where})")
    if "explain" in body:
        lines.append(_explain_text(body["explain"]))
    inv.emit(body, "\n".join(lines))


def _check_search(query: str, mode: str, explain: bool) -> None:
    """What ``memory search`` refuses before it opens anything (exit 2): an unknown mode; a
    query over the session question's limit (:data:`kernel.transitions.MAX_QUESTION_CHARS`:
    what F2 searches is at most a question); ``--mode bm25`` without ``--explain``: the
    relevance floor reads the cosine, mention and term signals, none of which a BM25-only
    ranking has, so its results are always empty — its ranking is only shown as the
    explanation's candidates, each with its BM25 score (``why``: ``bm25-only``)."""
    from kernel.errors import UsageError
    from kernel.transitions import MAX_QUESTION_CHARS, question_length

    if mode not in ("hybrid", "dense", "bm25"):
        raise UsageError(f"--mode {mode!r}: expected hybrid, dense or bm25")
    length = question_length(query)
    if length > MAX_QUESTION_CHARS:
        raise UsageError(
            f"QUERY is {length} characters long; the limit is {MAX_QUESTION_CHARS} "
            "(a session's question has the same limit)"
        )
    if mode == "bm25" and not explain:
        raise UsageError(
            "--mode bm25 never returns results: the relevance floor reads no BM25 score (it "
            "reads the cosine, mention and term signals); add --explain to see the BM25 "
            "ranking with its scores, or use --mode hybrid (what F2 recalls) or dense"
        )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _explain_text(explain: dict[str, Any]) -> str:
    """``--explain`` as a table: each candidate's signals, relevance, whether it was recalled
    and why; the floors above it."""
    from tht.render import render_table

    floors = ", ".join(f"{kind} {value}" for kind, value in sorted(explain["floor"].items()))
    rows = [
        [
            c["id"],
            c["kind"],
            c["subject"],
            "yes" if c["signals"]["named"] else "no",
            _number(c["signals"]["mention"]),
            _number(c["signals"]["cosine"]),
            _number(c["signals"]["bm25"]),
            _number(c["relevance"]),
            "yes" if c["recalled"] else "no",
            c["why"],
        ]
        for c in explain["candidates"]
    ]
    head = [
        "id",
        "kind",
        "subject",
        "named",
        "mention",
        "cosine",
        "bm25",
        "relevance",
        "recalled",
        "why",
    ]
    offset = explain["mention_offset"]
    text = f"\nwhy (relevance floor: {floors}; a mention is read {offset} below its scale)\n"
    text += render_table(head, rows) if rows else "  no candidate in the index"
    hidden = explain["hidden"]
    if hidden:
        entries = "entry" if hidden == 1 else "entries"
        text += f"\n{hidden} registry {entries} that no reviewer's promotion backs: not shown"
    return text


@app.command("list")
def list_cmd(
    all_: Annotated[
        bool, typer.Option("--all", help="Also superseded and forgotten memories.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The registry: live memories (contradictions shown side by side) and solved questions.
    Each says whether its source session backs it (``backed``): an entry written into the
    registry outside tht is listed, marked, and never recalled."""
    from tht.memory_runtime import backing, open_registry
    from tht.render import render_table

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    state = open_registry(app_).load().state
    backed = backing(app_, state)
    records = sorted(state.memories.values(), key=lambda r: r.saved_seq)
    shown = [r for r in records if all_ or r.status == "live"]
    contradictions = _contradictions(state)
    solved = [
        _solved_json(s) | {"backed": backed(s.solved_id)}
        for s in sorted(state.solved.values(), key=lambda s: s.saved_seq)
    ]
    body = {
        "memories": [_memory_json(r) | {"backed": backed(r.memory_id)} for r in shown],
        "solved_questions": solved,
        "contradictions": contradictions,
        "last_seq": state.last_seq,
    }
    if not shown and not state.solved:
        inv.emit(body, "the workspace memory is empty")
        return
    rows = [
        [
            r.memory_id,
            r.subject,
            r.meaning,
            r.target or "",
            r.status if backed(r.memory_id) else f"{r.status}, {_NOT_BACKED}",
            _provenance(r),
        ]
        for r in shown
    ]
    lines = [render_table(["id", "subject", "meaning", "target", "status", "provenance"], rows)]
    for group in contradictions:
        lines.append(f"contradiction: {', '.join(group)} (same subject, different targets)")
    for s in solved:
        mark = "" if s["backed"] else f" — {_NOT_BACKED}"
        lines.append(f"solved {s['id']}: {s['question']} (session {s['source']['session']}){mark}")
    inv.emit(body, "\n".join(lines))


#: an entry its source session does not back (written into the registry outside tht)
_NOT_BACKED = "NOT BACKED by its session: never recalled"


def _require_id(item: str) -> None:
    if not item.strip():
        from kernel.errors import UsageError

        raise UsageError("ID is empty: give a memory id (mem-…) or solved question id (sq-…)")


@app.command("show")
def show_cmd(
    item: Annotated[str, typer.Argument(help="A memory id (mem-…) or solved question (sq-…).")],
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """One memory or solved question, with its provenance and history."""
    from kernel.errors import NotFoundError
    from tht.memory_runtime import backed_ids, open_registry

    inv = invocation(workspace, json_, debug)
    _require_id(item)
    app_ = open_for(inv)
    state = open_registry(app_).load().state
    backed = item in backed_ids(app_, state, [item])
    warning = [] if backed else [f"  {_NOT_BACKED}"]
    if item in state.memories:
        record = state.memories[item]
        body = _memory_json(record) | {"backed": backed}
        target = f" → {record.target}" if record.target else ""
        lines = [
            f"{record.memory_id} ({record.status}): {record.subject} = {record.meaning}{target}",
            f"  {_provenance(record)}",
            *warning,
        ]
        if record.rationale:
            lines.append(f"  rationale: {record.rationale}")
        if record.superseded_by:
            lines.append(f"  superseded by {record.superseded_by}")
        if record.forgotten_reason:
            lines.append(f"  forgotten by {record.forgotten_by}: {record.forgotten_reason}")
        lines.append(f"  registry seqs: {', '.join(str(s) for s in record.history)}")
        inv.emit(body, "\n".join(lines))
        return
    if item in state.solved:
        solved = state.solved[item]
        lines = [
            f"{solved.solved_id}: {solved.question}",
            f"  from session {solved.source_session} (finalized at seq {solved.source_seq})",
            *warning,
            *(f"  | {line}" for line in solved.sql.splitlines()),
        ]
        inv.emit(_solved_json(solved) | {"backed": backed}, "\n".join(lines))
        return
    raise NotFoundError(f"no memory or solved question {item!r} (see `tht memory list --all`)")


@app.command("promote")
def promote_cmd(
    session: SessionArg = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Show the candidates; change nothing.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The promotion candidates computed from the session's ledger (--preview). Promoting is
    the reviewer's answer to the memory_promotion review (`tht stage run memory_promotion`)."""
    from kernel.errors import UsageError
    from tht.memory_runtime import promotion_preview

    inv = invocation(workspace, json_, debug)
    if not preview:
        raise UsageError(
            "memory promote shows candidates with --preview; promoting is the reviewer's answer "
            "to the memory_promotion review (`tht stage run memory_promotion`, then `tht review "
            "answer SEQ --choose …`)"
        )
    app_ = open_for(inv)
    sid = session_for(app_, session)
    body = promotion_preview(app_, sid)
    lines = [f"{len(body['candidates'])} candidate(s) in session {sid}"]
    for c in body["candidates"]:
        target = f" → {c['target']}" if c["target"] else ""
        lines.append(
            f"  seq {c['seq']}: {c['subject']} = {c['meaning']}{target} ({c['memory_id']})"
        )
    for reason, count in body["excluded"].items():
        lines.append(f"  left out: {count} {reason}")
    inv.emit(body, "\n".join(lines))


@app.command("reindex")
def reindex_cmd(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Rebuild the memory and solved_question projections from the verified registry
    (embedding only what changed)."""
    from tht.memory_runtime import reindex_memory

    inv = invocation(workspace, json_, debug)
    app_ = open_for(inv)
    body = reindex_memory(app_)
    inv.emit(
        body,
        f"memory index: {body.get('memories')} memories, {body.get('solved')} solved questions "
        f"({body.get('embedded')} embedded, {body.get('deleted')} deleted, "
        f"{body.get('kept')} kept)",
    )


@app.command("verify")
def verify_cmd(
    accept_rollback: AcceptRollbackOpt = False,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Verify the registry: hash chain, anchor, entries, signatures, fold cache, and the
    witness of the longest registry this workspace's tht verified (a rollback is
    ``rolled_back``) (exit 7). ``--accept-rollback --as human:ID`` accepts the loss."""
    from kernel.errors import IntegrityError
    from tht.memory_runtime import open_registry

    inv = invocation(workspace, json_, debug)
    who = human_actor(actor) if accept_rollback else None
    app_ = open_for(inv)
    registry = open_registry(app_)
    if who is not None:
        from kernel.ledger_witness import WitnessedLedger
        from tht.witness_runtime import accept_rollback as accept
        from tht.witness_runtime import signed_human

        assert isinstance(registry.caps.ledger, WitnessedLedger)
        report = accept(registry.caps.ledger, registry.verify, signed_human(app_, who))
    else:
        report = registry.verify()
    body = {
        "ok": report.ok,
        "events": report.events,
        "head": report.head,
        "problems": [p.to_json() for p in report.problems],
    }
    if not report.ok:
        first = report.problems[0]
        raise IntegrityError(
            f"the workspace memory failed verification ({first.code}: {first.message})",
            details=body,
        )
    if who is not None:
        body["accepted"] = True
    inv.emit(body, f"memory registry ok: {report.events} entries, head {report.head[:12]}")


# --------------------------------------------------------------------------- human-only


@app.command("forget")
def forget_cmd(
    item: Annotated[str, typer.Argument(help="The memory id (mem-…).")],
    reason: ReasonOpt = None,
    actor: ActorOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Forget a memory (memory_forgotten): it stays in history and is never recalled again."""
    from modules.memory.promotion import plan_forget
    from tht.memory_runtime import open_registry, reindex_memory

    inv = invocation(workspace, json_, debug)
    _require_id(item)
    who = human_actor(actor)
    app_ = open_for(inv)
    registry = open_registry(app_)
    current = registry.load_for_write()
    drafts = plan_forget(current.state, item, reason=reason or "", actor=who)
    current = registry.append(current, drafts)
    body: dict[str, Any] = {"id": item, "status": "forgotten", "seq": current.state.last_seq}
    message = f"forgot {item} (registry seq {current.state.last_seq})"
    try:
        body["index"] = reindex_memory(app_, loaded=current)
    except Exception as err:  # the registry is the truth: search fails closed until reindexed
        text = getattr(err, "message", None) or f"{type(err).__name__}: {err}"
        body["index"] = {"status": "stale", "warning": text}
        inv.note(
            f"warning: the memory index was not updated ({text}); searches fail until "
            "`tht memory reindex`"
        )
    inv.emit(body, message)
