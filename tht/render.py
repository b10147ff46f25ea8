"""Terminal output for people (rich): the F1–F8 stage timeline and small tables.

Only imported in human mode; never under ``--json``.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["render_status", "render_table"]

_STATE_STYLE = {
    "pending": "dim",
    "ready": "cyan",
    "running": "yellow",
    "awaiting_human": "bold magenta",
    "completed": "green",
    "skipped": "blue",
    "failed": "bold red",
}
_MARK = {
    "pending": "·",
    "ready": "○",
    "running": "◐",
    "awaiting_human": "?",
    "completed": "●",
    "skipped": "»",
    "failed": "✗",
}


def _console(buffer: io.StringIO) -> Console:
    return Console(file=buffer, width=100, soft_wrap=False, highlight=False)


def render_status(status: dict[str, Any]) -> str:
    """The session header, the stage timeline and open reviews."""
    buffer = io.StringIO()
    console = _console(buffer)
    console.print(Text(f"session {status['session']}  ({status['lifecycle']})", style="bold"))
    console.print(f"question: {status['question']}", markup=False)
    strip = Text()
    for stage in status["stages"]:
        if stage["display"]:
            strip.append(
                f" {stage['display']} {_MARK[stage['state']]} ", _STATE_STYLE[stage["state"]]
            )
    console.print(strip)
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("", style="bold")
    table.add_column("stage")
    table.add_column("state")
    for stage in status["stages"]:
        label = (
            stage["display"]
            or {"preflight": "pre", "contribution": "ext", "finalize": "fin"}[stage["kind"]]
        )
        marker = " ←" if stage["id"] == status["current_stage"] else ""
        table.add_row(
            label,
            stage["id"] + marker,
            Text(stage["state"], style=_STATE_STYLE[stage["state"]]),
        )
    console.print(table)
    if status["blocked"]:
        console.print(Text(f"BLOCKED: {status['blocked_reason']}", style="bold red"))
    for warning in status.get("warnings", []):
        console.print(
            Text(
                f"warning [{warning['seq']}] {warning['stage']}: {warning['message']}",
                style="yellow",
            )
        )
    for review in status["open_reviews"]:
        console.print(
            Text(
                f"open review {review['seq']} ({review['stage']}, {review['kind']}): ",
                style="magenta",
            )
            + Text(review["prompt"])
        )
    console.print(f"last seq {status['last_seq']}  head {status['head'][:16]}…")
    return buffer.getvalue()


def render_table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> str:
    buffer = io.StringIO()
    console = _console(buffer)
    table = Table(title=title, show_edge=False, box=None)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(Text("" if v is None else str(v)) for v in row))
    console.print(table)
    return buffer.getvalue()
