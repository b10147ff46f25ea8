"""The PostgreSQL store's selection read from the text of ``workspace.yaml``, without YAML or
pydantic: ``tht session status`` on a ``store: {kind: postgres}`` workspace must not pay ~120 ms
for the settings models (the filesystem store decides on the text alone too,
:func:`kernel.workspace.check_store`).

Only the two plain shapes are read — a flow mapping on the ``store:`` line, or a block of
``key: value`` lines under it — with the keys ``kind``, ``url_env``, ``dsn_env`` and
``workspace``, each a plain or simply quoted word, plus a top-level ``name:`` when
``store.workspace`` is absent (it is the default namespace). Anything else — another key, a
repeated key, a value the settings would refuse, an unusual YAML shape — is ``None``: the
caller then validates the settings in full, which reports the problem (exit 2) or reads the
unusual shape correctly. So this never accepts what the full validation refuses in ``store:``,
and never reads another value than it would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PostgresSelection", "read_postgres_selection"]

_KEY_LINE = r"(?m)^{key}[ \t]*:(?:[ \t]+(?P<rest>[^\n]*)|[ \t]*)$"
_STORE_KEY = re.compile(_KEY_LINE.format(key="store"))
_NAME_KEY = re.compile(_KEY_LINE.format(key="name"))
#: ``key: value`` with a word value: plain (a letter first: YAML reads ``1``, ``1.5``, ``.inf``
#: as numbers), '…' or "…" — what every value the settings accept looks like
_PAIR = re.compile(
    r"""^(?P<key>[a-z_]+)[ \t]*:[ \t]*(?:(?P<word>[A-Za-z_][0-9A-Za-z._-]*)"""
    r"""|'(?P<sq>[0-9A-Za-z._-]+)'|"(?P<dq>[0-9A-Za-z._-]+)")$"""
)
_BLOCK_LINE = re.compile(r"^(?P<indent>[ ]+)(?P<pair>[^#]*?)[ \t]*(?:[ \t]#.*)?$")
_KEYS = frozenset({"kind", "url_env", "dsn_env", "workspace"})
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")  # kernel.workspace_settings.ENV_NAME
_WORKSPACE_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,63}$")  # postgres.WORKSPACE_ID
#: a plain YAML scalar that is certainly a string (a letter first, no syntax in it)
_PLAIN_NAME = re.compile(r"^[A-Za-z][^#:'\"{}\[\],&*!|>%@`\t]*$")
#: plain scalars YAML reads as something else than a string
_NOT_STRINGS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"})


@dataclass(frozen=True)
class PostgresSelection:
    """What ``store:`` says (``None`` where it says nothing) and the workspace's ``name``."""

    url_env: str | None
    workspace: str | None
    name: str | None


def read_postgres_selection(text: str) -> PostgresSelection | None:
    """``store:`` of a ``kind: postgres`` workspace from ``text``; None when the text is not
    one of the plain shapes (or says anything the full validation would refuse)."""
    found = _STORE_KEY.findall(text)
    match = _STORE_KEY.search(text)
    if len(found) != 1 or match is None:
        return None
    rest = (match.group("rest") or "").strip()
    if rest.startswith("{"):
        pairs = _flow_pairs(rest)
    elif not rest or rest.startswith("#"):
        pairs = _block_pairs(text[match.end() :])
    else:
        return None
    store = _mapping(pairs)
    if store is None or store.get("kind") != "postgres":
        return None
    url_env, dsn_env = store.get("url_env"), store.get("dsn_env")
    for variable in (url_env, dsn_env):
        if variable is not None and not _ENV_NAME.match(variable):
            return None
    if url_env and dsn_env and url_env != dsn_env:
        return None
    namespace = store.get("workspace")
    if namespace is not None and not _WORKSPACE_ID.match(namespace):
        return None
    name = None if namespace is not None else _name(text)
    if namespace is None and name is None:
        return None
    return PostgresSelection(url_env=url_env or dsn_env, workspace=namespace, name=name)


def _flow_pairs(rest: str) -> list[str] | None:
    close = rest.find("}")
    if close < 0:
        return None
    after = rest[close + 1 :].strip()
    body = rest[1:close]
    if (after and not after.startswith("#")) or any(c in body for c in "{[]#\n"):
        return None
    return [part.strip() for part in body.split(",") if part.strip()]


def _block_pairs(after: str) -> list[str] | None:
    pairs: list[str] = []
    indent = None
    for line in after.split("\n")[1:]:
        if not line.strip():
            continue
        if not line[:1].isspace():
            break  # the next top-level key
        if line.strip().startswith("#"):
            continue
        parsed = _BLOCK_LINE.match(line)
        if parsed is None:
            return None
        if indent is None:
            indent = parsed.group("indent")
        if parsed.group("indent") != indent:
            return None  # a nested value, or a shape this reader does not take
        pairs.append(parsed.group("pair"))
    return pairs


def _mapping(pairs: list[str] | None) -> dict[str, str] | None:
    if pairs is None:
        return None
    mapping: dict[str, str] = {}
    for pair in pairs:
        parsed = _PAIR.match(pair)
        if parsed is None:
            return None
        key = parsed.group("key")
        value = parsed.group("word") or parsed.group("sq") or parsed.group("dq")
        if key not in _KEYS or key in mapping or value is None:
            return None
        if parsed.group("word") is not None and value.lower() in _NOT_STRINGS:
            return None
        mapping[key] = value
    return mapping


def _name(text: str) -> str | None:
    found = _NAME_KEY.findall(text)
    match = _NAME_KEY.search(text)
    if len(found) != 1 or match is None:
        return None
    rest = (match.group("rest") or "").strip()
    if rest.startswith("'") and rest.endswith("'") and len(rest) >= 2:
        value = rest[1:-1]
        return value if "'" not in value and "\n" not in value else None
    if rest.startswith('"') and rest.endswith('"') and len(rest) >= 2:
        value = rest[1:-1]
        return value if '"' not in value and "\\" not in value else None
    plain = rest.split(" #")[0].rstrip()
    if not _PLAIN_NAME.match(plain) or plain.lower() in _NOT_STRINGS:
        return None
    return plain
