"""What a reviewer sees of an artifact in the page: its persisted bytes, verified against the
SHA-256 the ledger recorded (``kernel.artifact``), rendered inert (spec 001 §3.2: the reviewer sees
what is persisted, not what the model says).

- ``*.sql``: highlighted by Pygments (CSS classes only, every character escaped);
- ``*.md``: CommonMark by markdown-it with raw HTML off (tags are shown as text) and its link
  validation (``javascript:``, ``vbscript:``, ``file:``, ``data:`` links are dropped);
- ``result_sample.json``: a table of the verified rows;
- anything else: escaped text (JSON pretty-printed), or "binary" without its bytes.

Every return value is HTML that the templates insert as is (``Markup``): nothing a proposal wrote
ever reaches the page unescaped.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

__all__ = ["MAX_RENDERED_BYTES", "ArtifactView", "render_artifact"]

#: more than this is cut (the page says so; `tht artifact show` prints it all)
MAX_RENDERED_BYTES = 256 * 1024
MAX_TABLE_ROWS = 50


@dataclass(frozen=True)
class ArtifactView:
    name: str
    sha256: str | None
    size: int | None
    html: Markup
    kind: str  # sql | markdown | table | text | binary | error
    truncated: bool = False
    error: str | None = None


def _sql(text: str) -> Markup:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import SqlLexer

    return Markup(highlight(text, SqlLexer(), HtmlFormatter(cssclass="hl sql", wrapcode=True)))


def _markdown(text: str) -> Markup:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    return Markup(f'<div class="md">{md.render(text)}</div>')


def _table(data: bytes) -> Markup | None:
    from kernel.verification import read_sample

    sample = read_sample(data)
    if sample is None:
        return None
    columns = [str(c.get("name", "")) for c in sample.columns]
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape('' if v is None else v)}</td>" for v in row) + "</tr>"
        for row in sample.rows[:MAX_TABLE_ROWS]
    )
    more = ", truncated at the row limit" if sample.truncated else ""
    caption = f"{sample.row_count} row(s){more}; result sha256 {sample.result_sha256[:12]}" + (
        f"; first {MAX_TABLE_ROWS} shown" if len(sample.rows) > MAX_TABLE_ROWS else ""
    )
    return Markup(
        f'<table class="result"><caption>{escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _text(text: str, name: str) -> Markup:
    if name.endswith(".json"):
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return Markup(f'<pre class="text">{escape(text)}</pre>')


def render_artifact(app: Any, session: str, state: Any, name: str) -> ArtifactView:
    """The artifact ``name`` of ``session``, verified and rendered; an artifact that does not
    verify shows why, never its bytes."""
    from kernel.errors import ThtError

    record = state.effective_artifact(name)
    sha = record.sha256 if record is not None else None
    try:
        data = app.kernel.artifact(session, name)
    except ThtError as err:
        return ArtifactView(
            name, sha, None, Markup(""), "error", error=f"not verified: {err.message}"
        )
    shown = data[:MAX_RENDERED_BYTES]
    truncated = len(data) > len(shown)
    if name == "result_sample.json":
        table = _table(data)
        if table is not None:
            return ArtifactView(name, sha, len(data), table, "table")
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError as err:
        if not (truncated and err.start >= len(shown) - 3):
            return ArtifactView(name, sha, len(data), Markup(""), "binary")
        text = shown[: err.start].decode("utf-8")
    if name.endswith(".sql"):
        return ArtifactView(name, sha, len(data), _sql(text), "sql", truncated)
    if name.endswith(".md"):
        return ArtifactView(name, sha, len(data), _markdown(text), "markdown", truncated)
    return ArtifactView(name, sha, len(data), _text(text, name), "text", truncated)


def highlight_css() -> str:
    """The stylesheet of the highlighted SQL (served as a local static file)."""
    from pygments.formatters import HtmlFormatter

    formatter: Any = HtmlFormatter(style="friendly")
    return str(formatter.get_style_defs(".hl"))
