"""Leading hotwords of a prompt (spec 000 §8.1; the semantics of the original hook).

At the start of a prompt, before any other word:

- ``!<id>``: explicit choice of a skill (or MCP server) → a deterministic lock;
- ``!light`` / ``!full``: context mode (light hints, and the evaluator skipped in light mode);
- ``!agents``: opt in to an agent recommendation (work package 5A);
- ``!none``: no routing at all for this prompt.

Hotwords are removed from the text the router scores. Standard library only (hot path).
"""

from __future__ import annotations

import re

__all__ = ["PromptRouting", "parse_hotwords"]

_HOTWORD = re.compile(r"\s*!([A-Za-z0-9][A-Za-z0-9._-]{0,119})(?=\s|$)")
_RESERVED = frozenset({"light", "full", "agents", "none"})


class PromptRouting:
    """What the hotwords asked for, and the text left to route."""

    __slots__ = ("agents", "context_mode", "explicit", "none", "text")

    def __init__(
        self, *, text: str, context_mode: str, agents: bool, none: bool, explicit: list[str]
    ) -> None:
        self.text = text
        self.context_mode = context_mode
        self.agents = agents
        self.none = none
        self.explicit = explicit


def parse_hotwords(prompt: str) -> PromptRouting:
    """Strip and interpret the leading hotwords (case-insensitive; ids are lower-cased)."""
    mode = "full"
    agents = none = False
    explicit: list[str] = []
    pos = 0
    while True:
        match = _HOTWORD.match(prompt, pos)
        if not match:
            break
        word = match.group(1).lower()
        if word == "light" or word == "full":
            mode = word
        elif word == "agents":
            agents = True
        elif word == "none":
            none = True
        elif word not in explicit:
            explicit.append(word)
        pos = match.end()
    return PromptRouting(
        text=prompt[pos:].strip(), context_mode=mode, agents=agents, none=none, explicit=explicit
    )


def is_reserved(word: str) -> bool:
    return word in _RESERVED
