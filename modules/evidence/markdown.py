"""Markdown structure: front matter and top-level blocks with their exact source lines.

Segmentation (Source Evidence → candidate units) and fragmentation (unit body → fragments) both
need the same view of a Markdown document: the sequence of top-level blocks (headings, paragraphs,
lists with their items, tables, fenced code, block quotes), each with the raw source text it spans,
so that excerpts taken from a block are found verbatim in the source. markdown-it-py (CommonMark
plus tables) does the parsing; nothing is re-rendered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["Block", "ListItem", "parse_blocks", "split_front_matter"]

BlockKind = Literal["heading", "paragraph", "list", "table", "fence", "quote", "html", "rule"]

_FRONT_OPEN = "---\n"
_FRONT_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_MARKER = re.compile(r"^[ \t]*(?:[-+*]|\d{1,9}[.)])[ \t]?")


@dataclass(frozen=True)
class ListItem:
    """One top-level item of a list: its raw text without the marker, and its source lines."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Block:
    """One top-level block. ``text`` is the raw source slice (lines ``start``..``end`` - 1)."""

    kind: BlockKind
    text: str
    start: int
    end: int
    level: int = 0  # heading level
    heading: str = ""  # heading text (kind == "heading")
    info: str = ""  # fence info string
    items: tuple[ListItem, ...] = field(default=())
    rows: tuple[tuple[str, ...], ...] = field(default=())  # table cells, header row first


def split_front_matter(text: str) -> tuple[str | None, str, int]:
    """``(front_matter_yaml, body, body_first_line)``; no front matter → ``(None, text, 0)``.

    Front matter is a ``---`` line at the very start, YAML, and a closing ``---`` (or ``...``)
    line. ``text`` must already be normalized (``\\n`` newlines).
    """
    if not text.startswith(_FRONT_OPEN):
        return None, text, 0
    close = _FRONT_CLOSE.search(text, len(_FRONT_OPEN))
    if close is None:
        return None, text, 0
    yaml_text = text[len(_FRONT_OPEN) : close.start()]
    rest_start = close.end() + 1 if close.end() < len(text) else close.end()
    body = text[rest_start:]
    return yaml_text, body, text[:rest_start].count("\n")


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def parse_blocks(text: str) -> list[Block]:
    """Top-level blocks of a Markdown body, in order, with exact raw source slices."""
    lines = text.split("\n")
    tokens = _parser().parse(text)

    def raw(start: int, end: int) -> str:
        return "\n".join(lines[start:end]).rstrip()

    blocks: list[Block] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or tok.map is None:
            i += 1
            continue
        start, end = tok.map
        if tok.type == "heading_open":
            inline = tokens[i + 1].content if i + 1 < len(tokens) else ""
            blocks.append(
                Block(
                    kind="heading",
                    text=raw(start, end),
                    start=start,
                    end=end,
                    level=int(tok.tag[1:]),
                    heading=inline.strip(),
                )
            )
        elif tok.type == "paragraph_open":
            blocks.append(Block(kind="paragraph", text=raw(start, end), start=start, end=end))
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            items: list[ListItem] = []
            j = i + 1
            while j < len(tokens) and not (
                tokens[j].level == 0 and tokens[j].type.endswith("_list_close")
            ):
                item = tokens[j]
                if item.type == "list_item_open" and item.level == 1 and item.map is not None:
                    s, e = item.map
                    items.append(ListItem(text=_item_text(lines[s:e]), start=s, end=e))
                j += 1
            end = max(end, items[-1].end if items else end)
            blocks.append(
                Block(kind="list", text=raw(start, end), start=start, end=end, items=tuple(items))
            )
        elif tok.type == "table_open":
            rows: list[tuple[str, ...]] = []
            row: list[str] = []
            j = i + 1
            while j < len(tokens) and tokens[j].type != "table_close":
                if tokens[j].type == "tr_open":
                    row = []
                elif tokens[j].type == "inline":
                    row.append(tokens[j].content.strip())
                elif tokens[j].type == "tr_close":
                    rows.append(tuple(row))
                j += 1
            blocks.append(
                Block(kind="table", text=raw(start, end), start=start, end=end, rows=tuple(rows))
            )
        elif tok.type in ("fence", "code_block"):
            blocks.append(
                Block(
                    kind="fence", text=raw(start, end), start=start, end=end, info=tok.info.strip()
                )
            )
        elif tok.type == "blockquote_open":
            blocks.append(Block(kind="quote", text=raw(start, end), start=start, end=end))
        elif tok.type == "html_block":
            blocks.append(Block(kind="html", text=raw(start, end), start=start, end=end))
        elif tok.type == "hr":
            blocks.append(Block(kind="rule", text=raw(start, end), start=start, end=end))
        i += 1
    return [b for b in blocks if b.text.strip() or b.kind == "rule"]


def _item_text(item_lines: list[str]) -> str:
    """An item's raw lines with its marker removed and its continuation indentation kept."""
    if not item_lines:
        return ""
    first = _MARKER.sub("", item_lines[0], count=1)
    return "\n".join([first, *item_lines[1:]]).rstrip()
