"""``report.md``: the deterministic session document written at finalization.

A pure function of the workflow and the folded state (plus the ledger head it was rendered at):
the same session always renders the same bytes, so the report's SHA-256 in the ledger is stable.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from kernel.fold import SessionState
from kernel.workflow import WorkflowSpec

__all__ = ["render_report"]


def _payload(record_event: Any) -> str:
    builtins = msgspec.to_builtins(record_event.payload)
    compact = {k: v for k, v in builtins.items() if v not in (None, "", [], {})}
    return json.dumps(compact, ensure_ascii=False, sort_keys=True)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_report(workflow: WorkflowSpec, state: SessionState, head: str) -> bytes:
    lines: list[str] = [
        f"# Session {state.session}",
        "",
        f"**Question.** {state.question}",
        "",
        f"- Workflow: `{workflow.name}` v{workflow.version} (`{workflow.sha256[:12]}`)",
        f"- Ledger: {state.last_seq} events, head `{head}`",
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
            lines.append(f"- [{record.seq}] {record.type}{subject}: {_payload(record.event)}")
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
    if state.warnings:
        lines += ["", "## Warnings", ""]
        for warning in state.warnings:
            lines.append(f"- [{warning.seq}] {warning.stage}: {warning.code}: {warning.message}")
    if state.receipts:
        lines += ["", f"Evidence receipts: {len(state.receipts)}."]
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")
