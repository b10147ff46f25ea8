"""Segmentation: a normalized Source Evidence → candidate passages, each recognized as a kind.

Rules (deterministic, documented in docs/evidence.md):

- headings give context (the heading path) and are never units themselves;
- a paragraph is one passage; a block quote is one passage;
- a list whose items are all value/meaning pairs is one passage (an enum); any other list gives one
  passage per top-level item;
- a table is one passage; a fenced code block is one passage;
- a short paragraph ending with ``:`` right before a list, table or fence introduces it: it joins
  the passage of a table, a fence or an enum list, and is dropped before a plain list (it names the
  list, it is not a unit);
- html blocks and rules are skipped.

Every passage carries excerpts taken verbatim from the source (whitespace collapsed), so they are
found again by excerpt verification.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from modules.evidence.markdown import Block, parse_blocks, split_front_matter
from modules.evidence.recognizers import Recognition, is_value_pair, recognize
from modules.evidence.text import collapse_ws

__all__ = ["Passage", "segment"]

_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(?:\|\s*:?-{1,}:?\s*)*\|?\s*$")
_INTRO_WORDS = 12


@dataclass(frozen=True)
class Passage:
    """A candidate unit: its Markdown body, verbatim excerpts, headings and recognized kind."""

    body: str
    excerpts: tuple[str, ...]
    headings: tuple[str, ...]
    recognition: Recognition
    line: int  # first line in the source (1-based, front matter included)


def segment(normalized_source: str) -> list[Passage]:
    """Candidate passages of a normalized source, in source order."""
    _, body, offset = split_front_matter(normalized_source)
    blocks = parse_blocks(body)
    sections = _section_sizes(blocks)
    passages: list[Passage] = []
    headings: list[tuple[int, str]] = []
    section_index = -1
    i = 0
    while i < len(blocks):
        block = blocks[i]
        if block.kind == "heading":
            headings = [h for h in headings if h[0] < block.level]
            headings.append((block.level, block.heading))
            section_index += 1
            i += 1
            continue
        path = tuple(h for _, h in headings)
        alone = sections.get(section_index, 0) == 1
        heading_title = path[-1] if path and alone else None
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if (
            block.kind == "paragraph"
            and nxt is not None
            and nxt.kind in ("list", "table", "fence")
            and block.text.rstrip().endswith(":")
            and len(block.text.split()) <= _INTRO_WORDS
        ):
            intro = block
            if nxt.kind == "list" and not _is_enum_list(nxt):
                passages.extend(_list_items(nxt, path, offset, None))
            else:
                passages.append(_passage_of(nxt, path, offset, intro, heading_title))
            i += 2
            continue
        if block.kind == "list" and not _is_enum_list(block):
            passages.extend(_list_items(block, path, offset, heading_title))
        elif block.kind in ("paragraph", "quote", "list", "table", "fence"):
            passages.append(_passage_of(block, path, offset, None, heading_title))
        i += 1
    return passages


def _section_sizes(blocks: list[Block]) -> dict[int, int]:
    """How many passages each heading section will yield (to know when a heading can title one)."""
    sizes: dict[int, int] = {}
    section = -1
    for block in blocks:
        if block.kind == "heading":
            section += 1
            continue
        if block.kind == "list" and not _is_enum_list(block):
            sizes[section] = sizes.get(section, 0) + len(block.items)
        elif block.kind in ("paragraph", "quote", "list", "table", "fence"):
            sizes[section] = sizes.get(section, 0) + 1
    return sizes


def _is_enum_list(block: Block) -> bool:
    return len(block.items) >= 2 and all(is_value_pair(item.text) for item in block.items)


def _item_body(text: str) -> str:
    first, _, rest = text.partition("\n")
    return (first.strip() + ("\n" + textwrap.dedent(rest) if rest else "")).strip()


def _list_items(
    block: Block, path: tuple[str, ...], offset: int, heading_title: str | None
) -> list[Passage]:
    out = []
    for item in block.items:
        body = _item_body(item.text)
        if not body:
            continue
        recognition = recognize(
            body,
            shape="item",
            headings=path,
            heading_title=heading_title if len(block.items) == 1 else None,
        )
        out.append(
            Passage(
                body=body,
                excerpts=(collapse_ws(body),),
                headings=path,
                recognition=recognition,
                line=offset + item.start + 1,
            )
        )
    return out


def _passage_of(
    block: Block,
    path: tuple[str, ...],
    offset: int,
    intro: Block | None,
    heading_title: str | None,
) -> Passage:
    excerpts: list[str] = [collapse_ws(intro.text)] if intro is not None else []
    fence: tuple[str, str] | None = None
    items: tuple[str, ...] = ()
    if block.kind == "table":
        lines = [ln for ln in block.text.split("\n") if not _TABLE_SEPARATOR.match(ln)]
        excerpts.extend(collapse_ws(ln) for ln in lines if ln.strip())
        shape = "table"
    elif block.kind == "fence":
        code = "\n".join(block.text.split("\n")[1:-1]) if block.text.count("\n") >= 1 else ""
        if not block.text.lstrip().startswith(("```", "~~~")):  # an indented code block
            code = textwrap.dedent(block.text)
        if code.strip():
            excerpts.append(collapse_ws(code))
        intro_text = intro.text.rstrip().rstrip(":") if intro is not None else ""
        fence = (intro_text or (heading_title or ""), code) if _is_sql(block.info) else None
        shape = "fence"
    elif block.kind == "list":
        items = tuple(_item_body(i.text) for i in block.items)
        excerpts.extend(collapse_ws(i) for i in items)
        shape = "list"
    else:
        excerpts.append(collapse_ws(block.text))
        shape = "paragraph" if block.kind == "paragraph" else "quote"
    body = (intro.text + "\n\n" if intro is not None else "") + block.text
    title_hint = heading_title
    if intro is not None and title_hint is None:
        title_hint = collapse_ws(intro.text).rstrip(":").strip() or None
    recognition = recognize(
        block.text if intro is None or block.kind != "paragraph" else body,
        shape=shape,
        headings=path,
        table_rows=block.rows,
        items=items,
        fence=fence,
        heading_title=title_hint,
    )
    start = intro.start if intro is not None else block.start
    return Passage(
        body=body.strip(),
        excerpts=tuple(e for e in excerpts if e),
        headings=path,
        recognition=recognition,
        line=offset + start + 1,
    )


def _is_sql(info: str) -> bool:
    return info.split()[0].lower() in ("sql", "postgres", "postgresql", "pgsql") if info else False
