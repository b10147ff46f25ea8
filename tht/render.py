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
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from kernel.fold import SessionState

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


def render_status(status: dict[str, Any], state: SessionState | None = None) -> str:
    """The session header, the stage timeline, the effective decisions (with the seqs that
    ``decision retract`` takes), the open reviews (with the seqs ``review answer`` takes) and how
    many decisions were retracted or went stale.

    ``status`` is the ``session status --json`` body; ``state`` (the folded state it came from),
    when given, adds each decision's actor and the retracted/stale counts. A decision entry of
    ``status`` that carries an ``actor`` key is shown with it too."""
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
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("stage", no_wrap=True)
    table.add_column("state", no_wrap=True)
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
    out = buffer.getvalue()
    out += _decisions_section(status, state)
    out += _reviews_section(status)
    out += f"last seq {v(status['last_seq'])}  head {v(status['head'])}\n"
    return out


#: result rows the timeline shows (``tht artifact show result_sample.json`` has the sample)
RESULT_ROWS_SHOWN = 5


def render_result(sample: Any) -> str:
    """F7's verified result under the timeline: row count, hash, the first rows (a
    :class:`kernel.verification.ResultSample`)."""
    more = ", truncated at the row limit" if sample.truncated else ""
    head = (
        f"F7 result (verified by tht): {sample.row_count} row(s){more}, "
        f"sha256 {sample.result_sha256[:12]}\n"
    )
    shown = sample.rows[:RESULT_ROWS_SHOWN]
    columns = [str(c.get("name", "")) for c in sample.columns]
    rows = [["" if v is None else v for v in row] for row in shown]
    out = head + render_table(columns, rows)
    if sample.row_count > len(shown):
        out += (
            f"… {sample.row_count - len(shown)} more; all sampled rows: "
            "tht artifact show result_sample.json\n"
        )
    return out


def _decisions_section(status: dict[str, Any], state: SessionState | None) -> str:
    actors: dict[int, str] = {}
    counts = ""
    if state is not None:
        actors = {d.seq: d.event.actor for d in state.decisions}
        retracted = sum(1 for d in state.decisions if d.status == "retracted")
        stale = sum(1 for d in state.decisions if d.status == "stale")
        counts = f" ({retracted} retracted, {stale} stale)"
    decisions = status.get("effective_decisions", [])
    head = f"effective decisions: {len(decisions)}{counts}\n"
    if not decisions:
        return head
    rows = [
        [
            d["seq"],
            d["type"],
            d.get("stage") or "",
            d.get("subject") or "",
            d.get("actor") or actors.get(d["seq"], ""),
        ]
        for d in decisions
    ]
    table = render_table(["seq", "type", "stage", "subject", "actor"], rows)
    return head + table + "retract one: tht decision retract SEQ --reason T --as human:ID\n"


def _reviews_section(status: dict[str, Any]) -> str:
    reviews = status.get("open_reviews", [])
    if not reviews:
        return "open reviews: none\n"
    rows = [[r["seq"], r["stage"], r["kind"], r["prompt"]] for r in reviews]
    return (
        f"open reviews: {len(reviews)}\n"
        + render_table(["seq", "stage", "kind", "prompt"], rows)
        + "see one: tht review show SEQ; answer: tht review answer SEQ …\n"
    )


# Columns whose values are identities: never wrapped, never cut (a truncated id or seq is a
# wrong one: `decision retract` and `review answer` take them verbatim).
_ATOMIC_COLUMNS = frozenset(
    {
        "seq",
        "session",
        "id",
        "item",
        "ts",
        "at",
        "time",
        "sha256",
        "hash",
        "head",
        "key",
        "key_id",
        "review",
        "retracts",
        "derived_from",
        "generation",
        "invocation",
    }
)
_MIN_WRAPPED = 12  # the narrowest a wrapped (prose) column is allowed to get
_TABLE_WIDTH = 100


def _is_atomic(column: str, cells: list[str]) -> bool:
    """An identity column (by name), or one whose every value is a single token (ids, seqs,
    hashes, timestamps, stage ids, event types): such values are never wrapped or cut."""
    if column.strip().lower() in _ATOMIC_COLUMNS:
        return True
    return all(not any(ch.isspace() for ch in cell) for cell in cells)


def render_table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> str:
    """A borderless table in which ids, seqs, hashes and timestamps are never truncated: those
    columns are ``no_wrap`` at their full width, prose columns wrap (folding words too long for
    them), and the table widens past 100 columns when the identities alone need it."""
    cells = [[visible(v) for v in row] for row in rows]
    names = [visible(c) for c in columns]
    atomic = [
        _is_atomic(name, [row[i] for row in cells if i < len(row)]) for i, name in enumerate(names)
    ]
    widths = [
        max([len(name), *(len(row[i]) for row in cells if i < len(row))])
        for i, name in enumerate(names)
    ]
    needed = sum(
        widths[i] if atomic[i] else min(widths[i], _MIN_WRAPPED) for i in range(len(names))
    ) + 2 * len(names)
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=max(_TABLE_WIDTH, needed), soft_wrap=False, highlight=False
    )
    table = Table(title=None if title is None else visible(title), show_edge=False, box=None)
    for i, name in enumerate(names):
        if atomic[i]:
            table.add_column(Text(name), no_wrap=True, min_width=widths[i], overflow="fold")
        else:
            table.add_column(Text(name), overflow="fold")
    for row in cells:
        table.add_row(*(Text(v) for v in row))
    console.print(table)
    return buffer.getvalue()
