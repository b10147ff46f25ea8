"""``report.md``: the deterministic session document written at finalization.

A pure function of the workflow, the folded state, the ledger head it was rendered at and the
content of the SQL artifacts it quotes (:func:`report_sources` names them; the kernel reads them,
verified, before rendering): the same session always renders the same bytes, so the report's
SHA-256 in the ledger is stable.

The report is rendered *before* finalization's own two events (its ``artifact_written`` and
``session_finalized``) are appended, so the event count it states includes them: it is the
count ``tht ledger verify`` reports for the finalized session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from kernel.fold import SessionState
from kernel.verification import RESULT_SAMPLE, read_sample
from kernel.workflow import WorkflowSpec

__all__ = ["FINALIZATION_EVENTS", "render_report", "report_sources"]

#: the events finalization appends after rendering: report.md's artifact_written, session_finalized
FINALIZATION_EVENTS = 2
_FINAL_SQL = "sql_final.sql"


def _is_cte(name: str) -> bool:
    return name.startswith("cte/") and name.endswith(".sql")


def _natural(name: str) -> tuple[object, ...]:
    """``cte/2.sql`` before ``cte/10.sql``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def report_sources(state: SessionState) -> tuple[str, ...]:
    """The effective artifacts whose content the report quotes: the CTEs, the final SQL, then
    F7's verified result sample."""
    names = {a.name for a in state.artifacts if a.status == "effective"}
    ctes = sorted((n for n in names if _is_cte(n)), key=_natural)
    tail = [n for n in (_FINAL_SQL, RESULT_SAMPLE) if n in names]
    return (*ctes, *tail)


#: result rows the report shows (the sample has more; the hash covers what the query returned)
_REPORT_ROWS = 10


def _result_lines(content: bytes | None) -> list[str]:
    sample = read_sample(content) if content is not None else None
    if sample is None:
        return ["", "## Result", "", "(result sample not available)"]
    more = " (truncated at the row limit)" if sample.truncated else ""
    lines = [
        "",
        "## Result",
        "",
        f"Verified by tht on the workspace database: {sample.row_count} row(s){more}, result "
        f"sha256 `{sample.result_sha256}`.",
        "",
        "| " + " | ".join(_cell(c.get("name", "")) for c in sample.columns) + " |",
        "|" + "---|" * len(sample.columns),
    ]
    shown = sample.rows[:_REPORT_ROWS]
    for row in shown:
        lines.append("| " + " | ".join(_cell(_value(v)) for v in row) + " |")
    if sample.row_count > len(shown):
        lines += ["", f"… {sample.row_count - len(shown)} more row(s) not shown."]
    return lines


def _value(value: object) -> str:
    if isinstance(value, str):
        return value.replace("\n", " ").strip()
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _payload_lines(record_event: Any) -> list[str]:
    """The payload's fields as a nested Markdown list, in their declared order."""
    builtins = msgspec.to_builtins(record_event.payload)
    compact = {k: v for k, v in builtins.items() if v not in (None, "", [], {})}
    return [f"  - {key.replace('_', ' ')}: {_value(value)}" for key, value in compact.items()]


def _fenced(content: bytes) -> list[str]:
    text = content.decode("utf-8", errors="replace").rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}sql", text, fence]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_report(
    workflow: WorkflowSpec,
    state: SessionState,
    head: str,
    sources: Mapping[str, bytes] | None = None,
) -> bytes:
    """``sources``: the content of each artifact :func:`report_sources` names."""
    total = state.last_seq + FINALIZATION_EVENTS
    lines: list[str] = [
        f"# Session {state.session}",
        "",
        f"**Question.** {state.question}",
        "",
        f"- Workflow: `{workflow.name}` v{workflow.version} (`{workflow.sha256[:12]}`)",
        f"- Ledger: {total} events, this report's `artifact_written` and `session_finalized` "
        f"included (rendered after seq {state.last_seq}, head `{head}`)",
    ]
    if state.derived_from:
        lines.append(f"- Derived from session `{state.derived_from}`")
    lines += ["", "## Timeline", "", "| step | stage | state | note |", "|---|---|---|---|"]
    for view in state.stages:
        if view.kind == "finalize":
            continue
        label = view.display or {"preflight": "pre", "contribution": "ext"}.get(view.kind, "")
        note = _cell(view.reason or "")
        lines.append(f"| {label} | {view.id} | {view.state} | {note} |")
    lines += ["", "## Decisions", ""]
    effective = state.effective_decisions()
    if not effective:
        lines.append("No effective decisions.")
    for step in workflow.steps:
        records = [d for d in effective if d.stage == step.id]
        if not records:
            continue
        title = f"{step.display} {step.id}" if step.display else step.id
        lines += [f"### {title}", ""]
        for record in records:
            subject = f" `{record.subject}`" if record.subject else ""
            lines.append(f"- [{record.seq}] {record.type}{subject}")
            lines += _payload_lines(record.event)
        lines.append("")
    withdrawn = [d for d in state.decisions if d.status != "effective"]
    if withdrawn:
        lines += ["## Withdrawn decisions", ""]
        for record in withdrawn:
            lines.append(f"- [{record.seq}] {record.type} ({record.status})")
        lines.append("")
    artifacts = [a for a in state.artifacts if a.status == "effective"]
    lines += ["## Artifacts", ""]
    if not artifacts:
        lines.append("No artifacts.")
    for artifact in sorted(artifacts, key=lambda a: a.name):
        lines.append(f"- `{artifact.name}` ({artifact.size} bytes, sha256 `{artifact.sha256}`)")
    quoted = [(name, (sources or {}).get(name)) for name in report_sources(state)]
    result = [content for name, content in quoted if name == RESULT_SAMPLE]
    quoted = [(name, content) for name, content in quoted if name != RESULT_SAMPLE]
    if quoted:
        lines += ["", "## SQL"]
    for name, content in quoted:
        lines += ["", f"### `{name}`", ""]
        lines += _fenced(content) if content is not None else ["(content not available)"]
    if result:
        lines += _result_lines(result[0])
    if state.warnings:
        lines += ["", "## Warnings", ""]
        for warning in state.warnings:
            lines.append(f"- [{warning.seq}] {warning.stage}: {warning.code}: {warning.message}")
    if state.receipts:
        lines += ["", f"Evidence receipts: {len(state.receipts)}."]
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")
