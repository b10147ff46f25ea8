"""Reviewer tokens of the web UI in solo mode (``tht serve token add human:<id>``, ARCHITECTURE §5).

A token is printed once and stored hashed: ``.tht/serve/tokens.json`` (0600) holds, per token, its
id, reviewer and SHA-256 — never the token. A token names its workspace:

    tht_<workspace id>_<43 url-safe characters (256 random bits)>

so a token of another workspace is told apart from a wrong one (the JSON API answers 403 for it,
401 for anything else). The workspace id is random, made once, kept beside the tokens.

Trust (docs/security.md): in solo mode a token is a convenience that keeps one person's answers
apart from another's; it is no boundary against an agent running as the same OS user, which can
write this file as it can run `tht review answer --as human:x`. Signed mode is the boundary.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from kernel.errors import NotFoundError, UsageError
from kernel.transitions import check_human

__all__ = ["TokenCheck", "TokenRecord", "TokenStore"]

_TOKEN = re.compile(r"^tht_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_FILE_VERSION = 1


@dataclass(frozen=True)
class TokenRecord:
    id: str
    reviewer: str
    sha256: str
    created: str


@dataclass(frozen=True)
class TokenCheck:
    """``reviewer`` when the token is valid here; else ``problem``: ``missing``, ``malformed``,
    ``other_workspace`` or ``unknown``."""

    reviewer: str | None
    problem: str | None = None
    sha256: str | None = None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


class TokenStore:
    """The hashed tokens of one workspace."""

    def __init__(self, state_dir: Path) -> None:
        self.folder = state_dir / "serve"
        self.path = self.folder / "tokens.json"

    # ------------------------------------------------------------------ reading

    def _load(self) -> tuple[str | None, list[TokenRecord]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None, []
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise UsageError(f"{self.path}: cannot read the reviewer tokens: {err}") from err
        try:
            workspace = str(data["workspace"])
            records = [
                TokenRecord(
                    id=str(r["id"]),
                    reviewer=str(r["reviewer"]),
                    sha256=str(r["sha256"]),
                    created=str(r["created"]),
                )
                for r in data["tokens"]
            ]
        except (KeyError, TypeError) as err:
            raise UsageError(f"{self.path}: not a tht token file") from err
        return workspace, records

    def workspace_id(self) -> str | None:
        return self._load()[0]

    def records(self) -> list[TokenRecord]:
        return self._load()[1]

    def check(self, token: str | None) -> TokenCheck:
        """Whose token this is (constant-time comparison of hashes)."""
        if not token:
            return TokenCheck(None, "missing")
        match = _TOKEN.match(token)
        if match is None:
            return TokenCheck(None, "malformed")
        workspace, records = self._load()
        if workspace is None or not hmac.compare_digest(match.group(1), workspace):
            return TokenCheck(None, "other_workspace" if workspace is not None else "unknown")
        digest = _digest(token)
        found: str | None = None
        for record in records:  # every record compared: no early exit on a match
            if hmac.compare_digest(record.sha256, digest):
                found = record.reviewer
        return TokenCheck(found, None if found else "unknown", digest if found else None)

    def holds(self, sha256: str) -> bool:
        """Whether a token with this hash is still there (not revoked)."""
        return any(hmac.compare_digest(r.sha256, sha256) for r in self.records())

    # ------------------------------------------------------------------ writing

    def add(self, reviewer: str, *, created: str) -> tuple[TokenRecord, str]:
        """A new token for ``reviewer``: its record and the token itself (shown once)."""
        reviewer = check_human(reviewer, label="REVIEWER")
        workspace, records = self._load()
        workspace = workspace or secrets.token_hex(8)
        token = f"tht_{workspace}_{secrets.token_urlsafe(32)}"
        record = TokenRecord(
            id=f"tok-{secrets.token_hex(4)}", reviewer=reviewer, sha256=_digest(token),
            created=created,
        )  # fmt: skip
        self._save(workspace, [*records, record])
        return record, token

    def revoke(self, reviewer: str, *, token_id: str | None = None) -> list[TokenRecord]:
        """Remove ``reviewer``'s tokens (one of them with ``token_id``); NotFoundError if none."""
        reviewer = check_human(reviewer, label="REVIEWER")
        workspace, records = self._load()
        gone = [
            r for r in records if r.reviewer == reviewer and (token_id is None or r.id == token_id)
        ]
        if not gone or workspace is None:
            which = f" with id {token_id}" if token_id else ""
            raise NotFoundError(f"no web token{which} for {reviewer}")
        self._save(workspace, [r for r in records if r not in gone])
        return gone

    def _save(self, workspace: str, records: list[TokenRecord]) -> None:
        from kernel.atomic import atomic_write

        body = {
            "version": _FILE_VERSION,
            "workspace": workspace,
            "tokens": [r.__dict__ for r in records],
        }
        try:
            atomic_write(
                self.path,
                (json.dumps(body, indent=2, sort_keys=True) + "\n").encode(),
                mode=0o600,
                dir_mode=0o700,
            )
        except OSError as err:
            raise UsageError(f"{self.path}: cannot write the reviewer tokens: {err}") from err
