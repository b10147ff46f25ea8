"""``tht-guard-hook``: the anti-bypass ``PreToolUse`` hook of Claude Code and Codex.

The model proposes; only a human decides (spec 001 §3.2). An agent that tries to run a
human-only ``tht`` command from its shell — ``review answer``, ``decision retract``, ``stage
skip|reopen``, ``session pause|resume|finalize|derive`` — or to write a session's ledger, objects
or artifacts directly, is refused before the tool runs, with a reason the agent sees. This is
defence in depth in front of ``THT_ACTOR=agent`` (which makes ``tht`` itself refuse, exit 5) and
of the ledger's hash chain (which makes ``tht ledger verify`` catch a direct write).

Protocol: one JSON object on stdin (``tool_name``, ``tool_input``, …). A refusal is written as

    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                            "permissionDecisionReason": "…"}}

with exit 0; anything else prints nothing and exits 0 (the call proceeds). The match is
deliberately conservative: a command line that merely *mentions* a human-only command (``echo
"tht review answer"``) is refused too.

Standard library only: it runs before every shell command of the agent.
"""

from __future__ import annotations

import json
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["check_tool_call", "main"]

MAX_STDIN_BYTES = 1_000_000

_GLOBAL_OPTS = r"(?:\s+(?:--json|--debug|--workspace(?:\s+|=)\S+))*"
_PROGRAM = r"(?:(?<![\w.-])tht|-m\s+tht)"
_HUMAN_ONLY = re.compile(
    _PROGRAM + _GLOBAL_OPTS + r"\s+(review\s+answer|decision\s+retract|stage\s+(?:skip|reopen)"
    r"|session\s+(?:pause|resume|finalize|derive))(?![\w-])"
)
_PROTECTED = re.compile(
    r"(?:^|[\s/'\"=:])sessions/[^/\s]+/(?:ledger\.jsonl|ledger\.head|workflow\.yaml|objects/|artifacts/)"
)
_REDIRECT = re.compile(r"(?:>>?|\btee\b(?:\s+-a)?|\bsed\s+-i|\btruncate\b|\brm\b|\bmv\b|\bcp\b)")
_WRITE_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}

REASON_HUMAN = (
    "tht: `{command}` is a human-only decision. Propose instead (`tht propose STAGE --file "
    "P.json`) and let the reviewer answer; the model proposes, a human decides."
)
REASON_LEDGER = (
    "tht: session ledgers, objects and artifacts are written only by tht itself; "
    "use `tht propose` (artifacts go in the proposal)."
)


def check_tool_call(payload: object) -> str | None:
    """The refusal reason for a tool call, or None when it may proceed."""
    if not isinstance(payload, dict):
        return None
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    if tool in _WRITE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(path, str) and _PROTECTED.search(path.replace("\\", "/")):
            return REASON_LEDGER
        return None
    command = tool_input.get("command")
    if not isinstance(command, str):
        return None
    found = _HUMAN_ONLY.search(command)
    if found:
        return REASON_HUMAN.format(command="tht " + " ".join(found.group(1).split()))
    if _PROTECTED.search(command) and _REDIRECT.search(command):
        return REASON_LEDGER
    return None


def _decide(raw: bytes) -> str:
    try:
        payload = json.loads(raw)
    except ValueError:
        return ""
    reason = check_tool_call(payload)
    if reason is None:
        return ""
    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    body = {
        "hookSpecificOutput": {
            "hookEventName": event if isinstance(event, str) and event else "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return json.dumps(body, ensure_ascii=False)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: never raises, always exits 0."""
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
        if len(raw) <= MAX_STDIN_BYTES:
            out = _decide(raw)
        elif b"tht" in raw:  # too large to inspect: refuse rather than wave it through
            out = json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": "tht: tool call too large to inspect",
                    }
                }
            )
        else:
            out = ""
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    except BaseException:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
