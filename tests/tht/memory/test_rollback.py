"""Rolling the Memory registry back (docs/security.md, "roll a ledger back"): a prefix of a valid
registry verifies by itself, so cutting a reviewer's ``memory_forgotten`` off its end would make
the forgotten memory live again. The registry's witness (kernel/ledger_witness.py), the longest
registry this workspace's tht verified, gives the cut away: ``rolled_back``, exit 7 wherever the
registry is decided on, until a human accepts the loss or restores the lines. A tripwire, not a
boundary: without the witness the rollback verifies (the control below says so)."""

from __future__ import annotations

from pathlib import Path

from tests.support.rollback import line_count, roll_back
from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import H, Ws


def _forgotten_then_rolled_back(prepared: Prepared, tmp_path: Path) -> tuple[Ws, int]:
    """The promoted memory forgotten by the reviewer, then the forget cut off the registry."""
    ws = prepared.promoted.copy(tmp_path / "ws")
    ws.ok("memory", "forget", prepared.memory_id, "--reason", "wrong target", "--as", H)
    folder = ws.registry.parent
    before = line_count(folder) - 1
    assert ws.registry_events()[-1]["type"] == "memory_forgotten"
    roll_back(folder, before)
    return ws, before


def _codes(ws: Ws, *args: str) -> tuple[int, list[str]]:
    done = ws.tht(*args, "--json")
    body = done.json()
    details = body.get("error", {}).get("details", body)
    return done.code, [p["code"] for p in details.get("problems", [])]


def test_a_forget_cut_off_the_registry_is_caught_until_a_human_accepts_it(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws, kept = _forgotten_then_rolled_back(prepared, tmp_path)
    code, codes = _codes(ws, "memory", "verify")
    assert (code, codes) == (7, ["rolled_back"])
    message = ws.tht("memory", "verify").stderr
    assert f"ends at seq {kept}" in message and "--accept-rollback" in message
    # every command that decides on the registry refuses: a write, F8's candidates
    again = ws.tht("memory", "forget", prepared.memory_id, "--reason", "x", "--as", H)
    assert again.code == 7 and "rolled_back" in again.stderr
    preview = ws.tht("memory", "promote", prepared.a2, "--preview", "--json")
    assert preview.code == 7 and "rolled_back" in preview.stdout + preview.stderr
    doctor = ws.tht("doctor", "--json")
    assert doctor.code == 7
    (check,) = [c for c in doctor.json()["checks"] if c["name"] == "memory registry"]
    assert check["verdict"] == "fail" and "rolled_back" in check["detail"]
    assert "--accept-rollback" in check["fix"]
    # accepting is a human's act
    agent = ws.tht("memory", "verify", "--accept-rollback", "--as", H, THT_ACTOR="agent")
    assert agent.code == 5
    assert ws.tht("memory", "verify", "--accept-rollback").code == 2  # --as is required
    assert _codes(ws, "memory", "verify")[0] == 7
    accepted = ws.ok("memory", "verify", "--accept-rollback", "--as", H)
    assert accepted["accepted"] is True and accepted["ok"] is True
    assert ws.ok("memory", "verify")["ok"] is True
    (record,) = ws.ok("memory", "list")["memories"]  # the loss accepted: it is live again
    assert record["id"] == prepared.memory_id
    refused = ws.tht("memory", "verify", "--accept-rollback", "--as", H, "--json")
    assert refused.code == 5  # nothing left to accept


def test_a_registry_deleted_whole_is_caught(prepared: Prepared, tmp_path: Path) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    roll_back(ws.registry.parent, 0)
    assert _codes(ws, "memory", "verify") == (7, ["missing_ledger", "rolled_back"])
    forget = ws.tht("memory", "forget", prepared.memory_id, "--reason", "x", "--as", H)
    assert forget.code == 7 and "rolled_back" in forget.stderr
    ws.ok("memory", "verify", "--accept-rollback", "--as", H)
    assert not (ws.root / ".tht" / "witness" / "memory.json").exists()
    assert ws.ok("memory", "list")["memories"] == []


def test_a_cut_refilled_with_other_lines_is_caught(prepared: Prepared, tmp_path: Path) -> None:
    """The forget cut, then the registry grown past it again with other entries: the witnessed
    line is another one now."""
    ws, _ = _forgotten_then_rolled_back(prepared, tmp_path)
    (ws.root / ".tht" / "witness" / "memory.json").rename(tmp_path / "witness")
    ws.ok("memory", "forget", prepared.memory_id, "--reason", "another reason", "--as", H)
    (tmp_path / "witness").rename(ws.root / ".tht" / "witness" / "memory.json")
    code, codes = _codes(ws, "memory", "verify")
    assert (code, codes) == (7, ["rolled_back"])
    assert "is another one" in ws.tht("memory", "verify").stderr


def test_without_the_witness_the_rollback_verifies(prepared: Prepared, tmp_path: Path) -> None:
    """The documented limit: an agent that deletes the witness too is not seen."""
    ws, _ = _forgotten_then_rolled_back(prepared, tmp_path)
    (ws.root / ".tht" / "witness" / "memory.json").unlink()
    assert ws.ok("memory", "verify")["ok"] is True
