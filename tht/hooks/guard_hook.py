"""``tht-guard-hook``: the anti-bypass ``PreToolUse`` hook of Claude Code and Codex.

The model proposes; only a human decides (spec 001 §3.2). An agent that tries to run a
human-only ``tht`` command from its shell, or to write tht's files (``sessions/``, ``catalog/``,
``memory/``, ``reviewers/``, ``.tht/``, ``workspace.yaml``, ``workflow.yaml``) directly, is refused
before the tool runs, with a reason the agent sees. The command text is *parsed*
(:mod:`tht.hooks.guard_parse`), expanded against the variables it assigns, unwrapped
(``bash -c``, ``eval``, ``xargs``, ``env``, ``sudo``, …), and scripts it runs are read and checked
the same way. Whatever cannot be followed is refused when its text mentions a human-only
command or a protected path (fail closed). See ``docs/guard-hook.md``.

This is a courtesy layer, defence in depth: the boundary is signed human decisions and a fold
that replays every transition (ARCHITECTURE §3.9).

This module owns the hook protocol and the tool-call payload; the analysis lives beside it:
:mod:`~tht.hooks.guard_shell` (shell text, expansion), :mod:`~tht.hooks.guard_programs`
(wrappers, shells, interpreters), :mod:`~tht.hooks.guard_scripts` (files a command runs),
:mod:`~tht.hooks.guard_writers` and :mod:`~tht.hooks.guard_paths` (write targets, protected
paths), :mod:`~tht.hooks.guard_tht` (the human-only verbs), :mod:`~tht.hooks.guard_rules`
(the policy tables) and :mod:`~tht.hooks.guard_context` (analysis state, fail closed).

Protocol: one JSON object on stdin (``tool_name``, ``tool_input``, ``cwd``, …; Codex may send
``tool_input.command`` as an argv list). A refusal is written as

    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                            "permissionDecisionReason": "…"}}

with exit 0; anything else prints nothing and exits 0. Any internal error is a refusal.
Standard library only: it runs before every shell command of the agent.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tht.hooks.guard_context import Ctx, Deny, absolute, suspicious
from tht.hooks.guard_paths import check_patch, check_path
from tht.hooks.guard_programs import check_argv
from tht.hooks.guard_rules import MAX_COMMAND_CHARS, MAX_STDIN_BYTES, REASON_CLOSED, WRITE_TOOLS

# bound here, and called through this module's name, so that a test can replace it (fail closed)
from tht.hooks.guard_shell import analyse_text as _analyse_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["check_tool_call", "main"]


# -- payload -----------------------------------------------------------------------------------
def check_tool_call(payload: object) -> str | None:
    """The refusal reason for a tool call, or None when it may proceed. Never raises."""
    try:
        return _check(payload)
    except Deny as deny:
        return str(deny)
    except Exception as exc:  # fail closed
        name = type(exc).__name__
        return (
            f"tht: the guard hook could not inspect this tool call ({name}); refused (fail closed)."
        )


def _check(payload: object) -> str | None:
    if not isinstance(payload, dict):
        text = json.dumps(payload, ensure_ascii=False) if payload is not None else ""
        return (
            REASON_CLOSED.format(why="the hook input is not a tool call")
            if suspicious(text)
            else None
        )
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else os.getcwd()
    if isinstance(tool_input, dict) and isinstance(tool_input.get("workdir"), str):
        cwd = absolute(tool_input["workdir"], cwd)
    raw = json.dumps(tool_input, ensure_ascii=False) if tool_input is not None else ""
    ctx = Ctx(os.path.abspath(cwd), raw)
    if not isinstance(tool_input, dict):
        return (
            REASON_CLOSED.format(why="the tool input is not an object") if suspicious(raw) else None
        )
    if _is_write_tool(tool, tool_input):
        for key in ("file_path", "notebook_path", "path"):
            path = tool_input.get(key)
            if isinstance(path, str) and path:
                check_path(path, ctx)
        return None
    for key in ("input", "patch"):
        if isinstance(tool_input.get(key), str) and "*** Begin Patch" in tool_input[key]:
            check_patch(tool_input[key], ctx)
    command = next((tool_input[k] for k in ("command", "cmd") if k in tool_input), None)
    if command is None:
        return None
    return _check_command(command, raw, ctx)


def _is_write_tool(tool: object, tool_input: dict[str, Any]) -> bool:
    """A file-writing tool: a known one, or any tool whose input looks like a file edit."""
    return tool in WRITE_TOOLS or (
        tool not in ("Read", "Glob", "Grep", "LS")
        and "file_path" in tool_input
        and any(k in tool_input for k in ("content", "new_string", "edits", "new_source"))
    )


def _check_command(command: object, raw: str, ctx: Ctx) -> str | None:
    """A shell tool's command: shell text (Claude Code, Codex) or an argv list (Codex)."""
    if isinstance(command, list):
        argv: list[str | None] = [a if isinstance(a, str) else json.dumps(a) for a in command]
        ctx.raw = " ".join(a or "" for a in argv)
        check_argv(argv, ctx, 0)
        return None
    if not isinstance(command, str):
        return REASON_CLOSED.format(why="the command is not text") if suspicious(raw) else None
    if len(command) > MAX_COMMAND_CHARS:
        return "tht: the command is too large to inspect; refused (fail closed)."
    ctx.raw = command
    _analyse_text(command, ctx, 0, "the command")
    return None


def _deny_json(reason: str, event: object = None) -> str:
    body = {
        "hookSpecificOutput": {
            "hookEventName": event if isinstance(event, str) and event else "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return json.dumps(body, ensure_ascii=False)


def _decide(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8", errors="replace")
        try:
            payload = json.loads(text)
        except ValueError:
            if suspicious(text):
                return _deny_json(REASON_CLOSED.format(why="the hook input is not valid JSON"))
            return ""
        reason = check_tool_call(payload)
        if reason is None:
            return ""
        event = payload.get("hook_event_name") if isinstance(payload, dict) else None
        return _deny_json(reason, event)
    except Exception as exc:  # fail closed
        return _deny_json(
            f"tht: the guard hook failed ({type(exc).__name__}); refused (fail closed)."
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: never raises, always exits 0."""
    try:
        chunks, total = [], 0
        while True:
            chunk = sys.stdin.buffer.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_STDIN_BYTES:
                break
        if total > MAX_STDIN_BYTES:
            out = _deny_json("tht: tool call too large to inspect; refused (fail closed).")
        else:
            out = _decide(b"".join(chunks))
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    except BaseException:
        try:
            sys.stdout.write(
                _deny_json("tht: the guard hook failed; refused (fail closed).") + "\n"
            )
            sys.stdout.flush()
        except BaseException:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
