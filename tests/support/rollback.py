"""Rolling a ledger back as an agent with the workspace's files would: keep its first ``keep``
lines and rewrite the head anchor to match (a prefix of a valid ledger verifies by itself,
docs/security.md); ``keep`` 0 deletes the ledger and its anchor."""

from __future__ import annotations

import os
from pathlib import Path

from kernel.ledger_verify import line_hash
from kernel.ledger_writer import write_anchor_fd

__all__ = ["line_count", "roll_back"]


def line_count(folder: Path) -> int:
    return len((folder / "ledger.jsonl").read_bytes().splitlines())


def roll_back(folder: Path, keep: int) -> None:
    ledger, anchor = folder / "ledger.jsonl", folder / "ledger.head"
    lines = ledger.read_bytes().splitlines()
    assert 0 <= keep < len(lines), "a rollback removes lines"
    if keep == 0:
        ledger.unlink()
        anchor.unlink(missing_ok=True)
        return
    kept = lines[:keep]
    ledger.write_bytes(b"".join(line + b"\n" for line in kept))
    fd = os.open(anchor, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        write_anchor_fd(fd, keep, line_hash(kept[-1]))
    finally:
        os.close(fd)
