"""The session document before finalization (``tht session show``): Markdown, a pure function.

Where ``report.md`` (kernel/report.py) is the record written once at finalization, this is the
reviewer's working view of a session at any point: the question, the lifecycle and the F1–F8
timeline, every decision (effective ones with their readable payload; retracted and stale ones
marked), the effective artifacts with their content (read and verified by the caller through
the kernel; SQL in ```sql fences) and the open reviews with the seqs ``review answer`` takes.

Every string from the ledger or an agent goes through :func:`tht.render.visible` (control and
bidi characters as escapes): the document is printed to a reviewer's terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from kernel.fold import DecisionRecord, SessionState
from tht.render import visible

__all__ = ["render_session_document"]

_FENCE_LANGUAGE = {".sql": "sql", ".json": "json", ".md": "markdown", ".yaml": "yaml"}
_CODES = {"preflight": "pre", "contribution": "ext", "finalize": "fin"}


def _v(value: object) -> str:
    return visible(value)


def _cell(value: object) -> str:
    return _v(value).replace("|", "\\|")


def _value(value: object) -> str:
    if isinstance(value, str):
        return _v(value.strip())
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return _v(", ".join(str(v) for v in value))
    return _v(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _payload_lines(record: DecisionRecord) -> list[str]:
    payload: Any = msgspec.to_builtins(record.event.payload)
    if not isinstance(payload, dict):
        return [f"  - {_value(payload)}"]
    shown = {k: v for k, v in payload.items() if v is not None and v != "" and v != []}
    return [f"  - {_v(key).replace('_', ' ')}: {_value(value)}" for key, value in shown.items()]


def _fenced(name: str, content: bytes) -> list[str]:
    text = visible(content.decode("utf-8", errors="backslashreplace"), multiline=True)
    text = text.rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * max(3, longest + 1)
    suffix = name[name.rfind(".") :] if "." in name else ""
    return [f"{fence}{_FENCE_LANGUAGE.get(suffix, 'text')}", text, fence]


def _decision_line(record: DecisionRecord) -> str:
    subject = f" `{_v(record.subject)}`" if record.subject else ""
    stage = f" ({_v(record.stage)})" if record.stage else ""
    return f"- [{record.seq}] {_v(record.type)}{subject}{stage} by {_v(record.event.actor)}"


def render_session_document(
    state: SessionState,
    head: str,
    contents: Mapping[str, bytes],
    errors: Mapping[str, str] | None = None,
) -> str:
    """``contents``: each effective artifact's bytes, verified against the ledger's SHA-256;
    ``errors``: why an artifact could not be verified (it is then named, never shown)."""
    errors = errors or {}
    lines = [
        f"# Session {_v(state.session)}",
        "",
        f"**Question.** {_v(state.question)}",
        "",
        f"- Lifecycle: {state.lifecycle}; current stage: {_v(state.current_stage or 'none')}",
        f"- Ledger: {state.last_seq} events, head `{_v(head)}`",
    ]
    if state.derived_from:
        lines.append(f"- Derived from session `{_v(state.derived_from)}`")
    if state.blocked:
        lines.append(f"- **Blocked:** {_v(state.blocked_reason or '')}")
    lines += ["", "## Timeline", "", "| step | stage | state | note |", "|---|---|---|---|"]
    for view in state.stages:
        label = view.display or _CODES.get(view.kind, "")
        marker = " ←" if view.id == state.current_stage else ""
        note = _cell(view.reason or "")
        lines.append(f"| {label} | {_cell(view.id)}{marker} | {view.state} | {note} |")
    lines += _decisions(state)
    lines += _artifacts(state, contents, errors)
    lines += _reviews(state)
    if state.warnings:
        lines += ["", "## Warnings", ""]
        lines += [
            f"- [{w.seq}] {_v(w.stage)}: {_v(w.code)}: {_v(w.message)}" for w in state.warnings
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _decisions(state: SessionState) -> list[str]:
    effective = state.effective_decisions()
    withdrawn = [d for d in state.decisions if d.status != "effective"]
    counts = sum(1 for d in withdrawn if d.status == "retracted"), len(withdrawn)
    lines = [
        "",
        "## Decisions",
        "",
        f"{len(effective)} effective, {counts[0]} retracted, {counts[1] - counts[0]} stale "
        "(retract one: `tht decision retract SEQ --reason T --as human:ID`).",
        "",
    ]
    for record in effective:
        lines.append(_decision_line(record))
        lines += _payload_lines(record)
    for record in withdrawn:
        lines.append(f"{_decision_line(record)} — **{record.status}**")
    return lines


def _artifacts(
    state: SessionState, contents: Mapping[str, bytes], errors: Mapping[str, str]
) -> list[str]:
    effective = (a for a in state.artifacts if a.status == "effective")
    artifacts = sorted(effective, key=lambda a: a.name)
    lines = ["", "## Artifacts"]
    if not artifacts:
        lines += ["", "No artifacts."]
    for artifact in artifacts:
        stage = f", {_v(artifact.stage)}" if artifact.stage else ""
        lines += [
            "",
            f"### `{_v(artifact.name)}`",
            "",
            f"seq {artifact.seq}{stage}, {artifact.size} bytes, sha256 `{artifact.sha256}`",
            "",
        ]
        if artifact.name in errors:
            lines.append(f"**Not verified:** {_v(errors[artifact.name])}")
        elif artifact.name in contents:
            lines += _fenced(artifact.name, contents[artifact.name])
        else:
            lines.append("(content not available)")
    return lines


def _reviews(state: SessionState) -> list[str]:
    lines = ["", "## Open reviews", ""]
    if not state.open_reviews:
        return [*lines, "None."]
    for review in state.open_reviews:
        lines.append(
            f"- [{review.seq}] {_v(review.stage)}, {review.kind}: {_v(review.prompt)} "
            f"(`tht review show {review.seq}`)"
        )
        for option in review.options:
            lines.append(f"  - option `{_v(option.id)}`: {_v(option.label)}")
        if review.target:
            lines.append(f"  - reopens: {_v(review.target)}")
        for name in review.artifacts:
            lines.append(f"  - artifact: `{_v(name)}`")
    return lines
