"""``tht analytics``: import hook logs and session ledgers into SQLite, query them, report.

Commands: ``scan``, ``summary``, ``routing-evaluator``, ``sessions``, ``report``, ``prune``
(docs/analytics.md). The database is ``--db``, else ``$THT_ANALYTICS_DB``, else
``analytics.sqlite`` in the tht data folder. Only typer and the standard library at top level.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from tht.analytics.store import AnalyticsStore

app = typer.Typer(
    name="analytics",
    help="Local analytics: import hook logs and session ledgers, query them, render a report.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="Analytics database (default: $THT_ANALYTICS_DB, else analytics.sqlite in the tht "
        "data folder).",
        show_default=False,
    ),
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from", help="Only events at or after this date/time (RFC 3339).", show_default=False
    ),
]
ToOpt = Annotated[
    str | None,
    typer.Option(
        "--to",
        help="Only events at or before this date/time (a date covers its whole day).",
        show_default=False,
    ),
]
Many = list[str] | None


def _now() -> datetime:
    return datetime.now(UTC)


def _open(db: Path | None, *, create: bool) -> AnalyticsStore:
    from kernel.clock import format_ts
    from tht.analytics.store import open_store, resolve_db_path

    return open_store(resolve_db_path(db), now=format_ts(_now()), create=create)


def _bounds(date_from: str | None, date_to: str | None) -> tuple[str | None, str | None]:
    from kernel.errors import UsageError
    from tht.analytics.events import parse_bound

    try:
        return (
            None if date_from is None else parse_bound(date_from, end=False),
            None if date_to is None else parse_bound(date_to, end=True),
        )
    except ValueError as err:
        raise UsageError(f"--from/--to: {err}") from err


@app.command("scan")
def scan(
    log: Annotated[
        list[Path] | None,
        typer.Option(
            "--log",
            help="A hook log to import (repeatable; default: the hook's log).",
            show_default=False,
        ),
    ] = None,
    sessions: Annotated[
        list[Path] | None,
        typer.Option(
            "--sessions",
            help="A workspace whose session ledgers to import (repeatable).",
            show_default=False,
        ),
    ] = None,
    db: DbOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Import what is new in hook logs and session ledgers (incremental, idempotent)."""
    from collections import Counter

    from kernel.clock import format_ts
    from kernel.errors import NotFoundError
    from kernel.workspace import open_workspace
    from tht.analytics.hooklog import scan_hook_log
    from tht.analytics.ledgers import scan_sessions
    from tht.paths import hook_log_file

    inv = invocation(workspace, json_, debug)
    logs = list(log or [])
    folders = list(sessions or [])
    for path in logs:
        if not path.is_file():
            raise NotFoundError(f"{path}: no such hook log")
    for folder in folders:
        open_workspace(folder)  # not a workspace: exit 3 before anything is written
    if not logs and not folders:
        logs = [hook_log_file()]
    now = format_ts(_now())
    reports = []
    with _open(db, create=True) as store:
        for path in logs:
            reports.append(scan_hook_log(store, path, now=now))
        for folder in folders:
            reports.extend(scan_sessions(store, folder, now=now))
    warnings: Counter[str] = Counter()
    for report in reports:
        warnings.update(report.warnings)
    data = {
        "ok": True,
        "sources": [r.to_json() for r in reports],
        "imported": sum(r.imported for r in reports),
        "duplicates": sum(r.duplicates for r in reports),
        "warnings": dict(sorted(warnings.items())),
    }
    lines = [
        f"{r.path}: {r.action}, {r.imported} imported, {r.duplicates} duplicate(s), "
        f"{r.invalid_lines} invalid line(s)" + (", torn last line left" if r.torn_tail else "")
        for r in reports
    ]
    if warnings:
        lines.append("normalised: " + ", ".join(f"{k} {v}" for k, v in sorted(warnings.items())))
    inv.emit(data, "\n".join(lines) or "nothing to scan")


@app.command("summary")
def summary(
    date_from: FromOpt = None,
    date_to: ToOpt = None,
    db: DbOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Event counts, sources, time span and the routing-evaluator totals (spec §22.9)."""
    from tht.analytics.summary import summary as run

    inv = invocation(workspace, json_, debug)
    start, end = _bounds(date_from, date_to)
    with _open(db, create=False) as store:
        data = run(store.conn, date_from=start, date_to=end)
    ev, re_ = data["events"], data["routing_evaluator"]
    human = (
        f"{ev['total']} event(s) from {ev['first_at'] or '-'} to {ev['last_at'] or '-'}\n"
        f"routing evaluator: {re_['decisions']} decision(s), {re_['invocations']} invocation(s), "
        f"{re_['completed']} completed, {re_['fallbacks']} fallback(s)"
    )
    inv.emit(data, human)


@app.command("routing-evaluator")
def routing_evaluator(
    date_from: FromOpt = None,
    date_to: ToOpt = None,
    profile: Annotated[
        Many, typer.Option("--profile", help="Provider profile (repeatable).")
    ] = None,
    family: Annotated[Many, typer.Option("--family", help="Provider family.")] = None,
    location: Annotated[Many, typer.Option("--location", help="local, lan or cloud.")] = None,
    model: Annotated[Many, typer.Option("--model", help="Model id.")] = None,
    model_family: Annotated[Many, typer.Option("--model-family", help="Model family.")] = None,
    variant: Annotated[Many, typer.Option("--variant", help="Model variant.")] = None,
    quantization: Annotated[Many, typer.Option("--quantization", help="Quantization.")] = None,
    profile_version: Annotated[
        Many, typer.Option("--profile-version", help="Evaluator profile version.")
    ] = None,
    mode: Annotated[Many, typer.Option("--mode", help="Operating mode.")] = None,
    status: Annotated[Many, typer.Option("--status", help="Evaluator status.")] = None,
    group_by: Annotated[
        Many, typer.Option("--group-by", help="Dimension(s), repeatable or comma-separated.")
    ] = None,
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input",
            help="The §22.8 input object as a JSON file; flags add to it.",
            show_default=False,
        ),
    ] = None,
    db: DbOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Evaluator metrics: totals, rates, latency and groups, exactly as spec §22.8."""
    from tht.analytics.routing_query import routing_evaluator as run

    inv = invocation(workspace, json_, debug)
    fields: dict[str, Any] = _read_input(input_file) if input_file else {}
    flags = {
        "date_from": date_from,
        "date_to": date_to,
        "provider_profiles": profile,
        "provider_families": family,
        "provider_locations": location,
        "models": model,
        "model_families": model_family,
        "model_variants": variant,
        "model_quantizations": quantization,
        "evaluator_profile_versions": profile_version,
        "modes": mode,
        "statuses": status,
        "group_by": [g.strip() for item in group_by or [] for g in item.split(",") if g.strip()],
    }
    fields.update({k: v for k, v in flags.items() if v})
    query = _query(fields, str(input_file) if input_file else "options")
    with _open(db, create=False) as store:
        data = run(store.conn, query)
    inv.emit(data, _routing_table(data, query.group_by) if not inv.json else None)


def _read_input(path: Path) -> dict[str, Any]:
    import json

    from kernel.errors import UsageError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise UsageError(f"{path}: file not found") from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: not a JSON file: {err}") from err
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the input must be a JSON object")
    return data


def _query(fields: dict[str, Any], source: str) -> Any:
    from pydantic import ValidationError

    from kernel.config_errors import usage_error_from_validation
    from tht.analytics.routing_query import RoutingEvaluatorQuery

    try:
        return RoutingEvaluatorQuery.model_validate(fields)
    except ValidationError as err:
        raise usage_error_from_validation(source, err.errors()) from err


def _routing_table(data: dict[str, Any], group_by: tuple[str, ...]) -> str:
    rows = [("(all)", data)] + [
        (" / ".join(str(g.get(k)) for k in group_by), g) for g in data["groups"]
    ]
    header = (
        f"{'group':<40} {'decisions':>9} {'invoked':>7} {'done':>5} {'fallbk':>6} "
        f"{'disagree':>8} {'p50 ms':>8} {'p95 ms':>8}"
    )
    out = [header]
    for label, block in rows:
        t, r, lat = block["totals"], block["rates"], block["latency_ms"]
        disagree = "-" if r["disagreement_rate"] is None else f"{r['disagreement_rate']:.1%}"
        out.append(
            f"{label[:40]:<40} {t['routing_decisions']:>9} {t['evaluator_invoked']:>7} "
            f"{t['completed']:>5} {t['fallbacks']:>6} {disagree:>8} "
            f"{_ms(lat['p50']):>8} {_ms(lat['p95']):>8}"
        )
    return "\n".join(out)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


@app.command("sessions")
def sessions(
    date_from: FromOpt = None,
    date_to: ToOpt = None,
    db: DbOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Per stage: runs, outcomes, durations, review wait p50/p95, reopen rate."""
    from tht.analytics.sessions_query import stage_statistics

    inv = invocation(workspace, json_, debug)
    start, end = _bounds(date_from, date_to)
    with _open(db, create=False) as store:
        data = stage_statistics(store.conn, date_from=start, date_to=end)
    out = [
        f"{data['sessions']} session(s)",
        f"{'stage':<18} {'runs':>5} {'done':>5} {'skip':>5} {'fail':>5} {'p50 s':>8} "
        f"{'wait p50':>9} {'wait p95':>9} {'reopen':>7}",
    ]
    for s in data["stages"]:
        out.append(
            f"{s['stage'][:18]:<18} {s['runs']:>5} {s['completed']:>5} {s['skipped']:>5} "
            f"{s['failed']:>5} {_s(s['duration_ms']['p50']):>8} "
            f"{_s(s['review_wait_ms']['p50']):>9} {_s(s['review_wait_ms']['p95']):>9} "
            f"{s['reopen_rate']:>7.1%}"
        )
    inv.emit(data, "\n".join(out))


def _s(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}"


@app.command("report")
def report(
    html: Annotated[
        Path, typer.Option("--html", help="Where to write the report (one HTML file).")
    ],
    date_from: FromOpt = None,
    date_to: ToOpt = None,
    db: DbOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Write a self-contained HTML report with charts (no network needed to view it)."""
    from kernel.clock import format_ts
    from tht.analytics.report import write_report

    inv = invocation(workspace, json_, debug)
    start, end = _bounds(date_from, date_to)
    with _open(db, create=False) as store:
        written = write_report(
            store.conn, html, date_from=start, date_to=end, generated_at=format_ts(_now())
        )
    inv.emit({"ok": True, "html": str(html), "bytes": written}, f"wrote {html} ({written} bytes)")


@app.command("prune")
def prune(
    older_than: Annotated[
        int, typer.Option("--older-than", help="Delete events older than this many days.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only print what would be deleted.")
    ] = False,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="Really delete (without it, prune only previews: --dry-run)."),
    ] = False,
    db: DbOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Delete events older than DAYS (and their projections); they are not imported again.

    Deleting is for good, so it needs --yes: without it (or with --dry-run) prune prints what
    it would delete, deletes nothing and exits 0."""
    from tht.analytics.retention import prune as run

    inv = invocation(workspace, json_, debug)
    preview = dry_run or not yes
    with _open(db, create=False) as store:
        data = run(store, older_than_days=older_than, now=_now(), dry_run=preview)
    if preview:
        would = data["would_delete"]
        hint = "" if dry_run else "; pass --yes to delete them"
        inv.emit(
            data,
            f"dry run: would delete {would['runtime_events']} event(s) before "
            f"{data['cutoff']} ({would['routing_evaluations']} routing evaluation(s), "
            f"{would['stage_runs']} stage run(s)){hint}",
        )
        return
    deleted = data["deleted"]
    inv.emit(
        data,
        f"deleted {deleted['runtime_events']} event(s) before {data['cutoff']} "
        f"({deleted['routing_evaluations']} routing evaluation(s))",
    )


__all__ = ["app"]
