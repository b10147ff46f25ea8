"""Switching a workspace's store in ``workspace.yaml`` — the last step of ``tht store migrate``.

A person edits workspace.yaml, so it is never re-serialized: only the ``store:`` entry's keys
change (``kind``, and for postgres ``url_env`` and ``workspace``), replaced where present and
added where not, in the entry's own shape (``store: {kind: fs}`` on one line, or a block of
``key: value`` lines); every other line and comment is kept byte for byte. The new text is
validated (the same settings but for ``store``, the chosen store) before it replaces the file
atomically. An entry in another shape (anchors, nested values, quoting tht does not parse) is
refused with exit 2 — before a migration copies anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kernel.errors import UsageError
from kernel.workspace import Workspace
from tht.store_runtime import StoreChoice, choice_from_settings

__all__ = ["switch_store", "switched_text"]

_STORE_LINE = re.compile(r"^store[ \t]*:(?P<rest>.*)$")
_ITEM = re.compile(r"^\s*(?P<key>[A-Za-z_]+)\s*:\s*(?P<value>\S.*?)\s*$")
_BLOCK_ITEM = re.compile(
    r"^(?P<indent>[ \t]+)(?P<key>[A-Za-z_]+)[ \t]*:[ \t]*(?P<value>[^#]*?)(?P<tail>[ \t]*(#.*)?)$"
)
_FLOW_FORBIDDEN = set("{}[]&*!|>")


def switch_store(
    workspace: Workspace, kind: str, url_env: str = "", namespace: str = "", *, write: bool = True
) -> str:
    """Point ``store:`` at ``kind`` (postgres: read from ``url_env``, rows under
    ``namespace``); returns the new text. ``write=False`` only checks that the file can be
    switched so (exit 2 if not)."""
    from kernel.atomic import atomic_write
    from kernel.config_errors import parse_yaml_mapping
    from kernel.workspace import parse_settings

    path = workspace.settings_file
    text = path.read_text(encoding="utf-8")
    values = {"kind": kind}
    if kind != "fs":
        old = _entry_keys(text)
        key = "dsn_env" if "dsn_env" in old and "url_env" not in old else "url_env"
        values.update({key: url_env, "workspace": json.dumps(namespace, ensure_ascii=False)})
    new = switched_text(text, values, source=str(path))
    before = workspace.settings()
    after = parse_settings(parse_yaml_mapping(new.encode("utf-8"), str(path)), path)
    others_kept = _without_store(before) == _without_store(after)
    wanted = StoreChoice(kind, url_env, namespace) if kind != "fs" else StoreChoice("fs")
    if not others_kept or choice_from_settings(after, after.store.kind) != wanted:
        raise UsageError(f"{path}: store: cannot be switched by a text edit; set it by hand")
    if write and new != text:
        atomic_write(path, new.encode("utf-8"), durable=True)
    return new


def _without_store(settings: Any) -> dict[str, Any]:
    return {k: v for k, v in settings.model_dump().items() if k != "store"}


def _entry(lines: list[str]) -> tuple[int, int] | None:
    """``(index of the store: line, index after its block)``, or None without one."""
    for index, line in enumerate(lines):
        if _STORE_LINE.match(line):
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or lines[end][:1].isspace()):
                end += 1
            return index, end
    return None


def _entry_keys(text: str) -> set[str]:
    lines = text.split("\n")
    found = _entry(lines)
    if found is None:
        return set()
    start, end = found
    entry = "\n".join(lines[start:end]).partition(":")[2]
    return set(re.findall(r"([A-Za-z_]+)[ \t]*:", entry))


def switched_text(text: str, values: Mapping[str, str], *, source: str) -> str:
    """``text`` with the ``store:`` entry's keys set to ``values``; UsageError (exit 2) when
    the entry is not a plain flow or block mapping of scalars."""
    unusual = UsageError(f"{source}: store: is not a plain mapping tht can edit; set it by hand")
    lines = text.split("\n")
    found = _entry(lines)
    if found is None:
        block = "store:\n" + "".join(f"  {k}: {v}\n" for k, v in values.items())
        return text + ("\n" if text and not text.endswith("\n") else "") + "\n" + block
    start, end = found
    match = _STORE_LINE.match(lines[start])
    assert match is not None
    body, hash_, comment = match.group("rest").partition(" #")
    if body.strip().startswith("{"):
        lines[start] = "store:" + _switched_flow(body, values, unusual) + hash_ + comment
        return "\n".join(lines)
    if body.strip():
        raise unusual
    lines[start + 1 : end] = _switched_block(lines[start + 1 : end], values, unusual)
    return "\n".join(lines)


def _flow_items(inner: str, unusual: UsageError) -> list[str]:
    """The ``key: value`` items of a flow mapping's inside: split at commas outside quotes;
    nested collections, anchors, tags and block scalars are refused."""
    items, current, quote = [], "", ""
    for char in inner:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in _FLOW_FORBIDDEN:
            raise unusual
        elif char == ",":
            items.append(current)
            current = ""
            continue
        current += char
    if quote:
        raise unusual
    return [item for item in [*items, current] if item.strip()]


def _switched_flow(body: str, values: Mapping[str, str], unusual: UsageError) -> str:
    inner = body.strip()
    if not inner.startswith("{") or not inner.endswith("}"):
        raise unusual
    kept: dict[str, str] = {}
    for item in _flow_items(inner[1:-1], unusual):
        pair = _ITEM.match(item)
        if pair is None:
            raise unusual
        kept[pair.group("key")] = pair.group("value")
    merged = {**kept, **values}
    lead = body[: len(body) - len(body.lstrip())] or " "
    trail = body[len(body.rstrip()) :]
    return lead + "{" + ", ".join(f"{k}: {v}" for k, v in merged.items()) + "}" + trail


def _switched_block(block: list[str], values: Mapping[str, str], unusual: UsageError) -> list[str]:
    todo = dict(values)
    out = list(block)
    last, indent = -1, "  "
    for index, line in enumerate(block):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _BLOCK_ITEM.match(line)
        if (
            item is None
            or not item.group("value")
            or (last >= 0 and item.group("indent") != indent)
        ):
            raise unusual  # a nested or multi-line value
        last, indent = index, item.group("indent")
        key = item.group("key")
        if key in todo:
            out[index] = f"{indent}{key}: {todo.pop(key)}{item.group('tail')}"
    out[last + 1 : last + 1] = [f"{indent}{k}: {v}" for k, v in todo.items()]
    return out
