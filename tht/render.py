"""Terminal output for people (rich): the F1–F8 stage timeline and small tables.

Only imported in human mode; never under ``--json``. Every string that comes from the ledger or
an agent (prompts, labels, reasons, artifact names, questions) goes through :func:`visible`
first: control characters (ESC and so CSI/OSC sequences, CR, backspace, NUL, DEL, C1) and the
Unicode bidi / line-separator controls are shown as escapes (``\\x1b``, ``\\u202e``), never
sent raw to the reviewer's terminal. JSON output is untouched (JSON escapes them anyway).
"""

from __future__ import annotations

import io
import unicodedata
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["render_status", "render_table", "visible"]

# bidi embeddings/overrides/isolates and marks, line/paragraph separators, BOM, zero-width space
_INVISIBLE = frozenset(
    [
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        *(0x200E, 0x200F, 0x061C, 0x2028, 0x2029, 0xFEFF, 0x200B, 0x2060),
    ]
)


def visible(value: object, *, multiline: bool = False) -> str:
    """``value`` as text safe for a terminal: control and bidi characters become visible
    escapes (``\\x1b``, ``\\r``, ``\\u202e``); ``multiline`` keeps newlines and tabs."""
    text = "" if value is None else str(value)
    if text.isprintable() and text.isascii():
        return text
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if multiline and ch in "\n\t":
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif code in _INVISIBLE or unicodedata.category(ch) in ("Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


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
    v = visible
    buffer = io.StringIO()
    console = _console(buffer)
    console.print(Text(f"session {v(status['session'])}  ({v(status['lifecycle'])})", style="bold"))
    console.print(Text(f"question: {v(status['question'])}"))
    strip = Text()
    for stage in status["stages"]:
        if stage["display"]:
            strip.append(
                f" {v(stage['display'])} {_MARK[stage['state']]} ", _STATE_STYLE[stage["state"]]
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
            Text(v(label)),
            Text(v(stage["id"]) + marker),
            Text(stage["state"], style=_STATE_STYLE[stage["state"]]),
        )
    console.print(table)
    if status["blocked"]:
        console.print(Text(f"BLOCKED: {v(status['blocked_reason'])}", style="bold red"))
    for warning in status.get("warnings", []):
        console.print(
            Text(
                f"warning [{v(warning['seq'])}] {v(warning['stage'])}: {v(warning['message'])}",
                style="yellow",
            )
        )
    for review in status["open_reviews"]:
        console.print(
            Text(
                f"open review {v(review['seq'])} ({v(review['stage'])}, {v(review['kind'])}): ",
                style="magenta",
            )
            + Text(v(review["prompt"]))
        )
    console.print(Text(f"last seq {v(status['last_seq'])}  head {v(status['head'])[:16]}…"))
    return buffer.getvalue()


def render_table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> str:
    buffer = io.StringIO()
    console = _console(buffer)
    table = Table(title=None if title is None else visible(title), show_edge=False, box=None)
    for column in columns:
        table.add_column(Text(visible(column)))
    for row in rows:
        table.add_row(*(Text(visible(v)) for v in row))
    console.print(table)
    return buffer.getvalue()
