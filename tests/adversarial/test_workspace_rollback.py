"""Rolling a workspace-level ledger back (docs/security.md, "roll a ledger back"): a prefix of a
valid ledger verifies by itself, so cutting the reviewer registry's last line makes a revoked key
active again, and cutting the Metadata Catalog's undoes a Sensitive Data Flag. Each ledger's
witness (kernel/ledger_witness.py: the longest history of it this workspace's tht verified)
gives the cut away — ``rolled_back``, exit 7 wherever the ledger is decided on — until a human
restores the lines, records the loss (the catalog's repair) or accepts it (``--accept-rollback``).
The Memory registry's are in tests/tht/memory/test_rollback.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.rollback import line_count, roll_back
from tests.tht.memory.support import H, Ws, make_workspace
from tests.tht.test_reviewer_cli import (
    ANN_PW,
    BOB_PW,
    _add_ann,
    _add_bob,
    _ws,
    env,  # noqa: F401 - the fixture
    tht,
    tht_no_terminal,
)

# --------------------------------------------------------------------------- the registry


def _revoked_bob_rolled_back(env: dict[str, str]) -> str:  # noqa: F811
    _add_ann(env)
    bob = str(_add_bob(env)["key_id"])
    revoked = tht(
        env, "reviewer", "revoke", "human:bob", "--key", bob, "--reason", "laptop stolen",
        "--compromised", "--as", "human:ann", typed=(ANN_PW,),
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stdout
    roll_back(_ws(env) / "reviewers", 2)  # bob's key active again
    return bob


def test_a_revocation_cut_off_the_registry_is_caught(env: dict[str, str]) -> None:  # noqa: F811
    bob = _revoked_bob_rolled_back(env)
    verified = tht(env, "reviewer", "verify", "--json")
    assert verified.returncode == 7
    (problem,) = json.loads(verified.stdout)["problems"]
    assert problem["code"] == "rolled_back" and "ends at seq 2" in problem["message"]
    # the key the rollback brought back signs nothing: the registry trusts nobody now
    signs = tht(
        env, "reviewer", "revoke", "human:ann", "--key", "whatever", "--reason", "mine now",
        "--as", "human:bob", typed=(BOB_PW,),
    )  # fmt: skip
    assert signs.returncode == 7 and "rolled_back" in signs.stdout + signs.stderr
    doctor = json.loads(tht(env, "doctor", "--json").stdout)
    (check,) = [c for c in doctor["checks"] if c["name"] == "reviewer registry"]
    assert check["verdict"] == "fail" and "rolled_back" in check["detail"]
    # accepting is a reviewer's act, at a terminal
    agent = tht_no_terminal(env, "reviewer", "verify", "--accept-rollback", "--as", "human:ann")
    assert agent.returncode == 5
    assert tht(env, "reviewer", "verify").returncode == 7
    accepted = tht(
        env, "reviewer", "verify", "--accept-rollback", "--as", "human:ann", "--json",
        typed=(ANN_PW,),
    )  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout
    assert json.loads(accepted.stdout)["accepted"] is True
    listed = json.loads(tht(env, "reviewer", "list", "--json").stdout)
    assert [r["key_id"] for r in listed["reviewers"] if not r["revoked"]][-1] == bob


def test_a_registry_deleted_whole_trusts_nobody(env: dict[str, str]) -> None:  # noqa: F811
    """The registry deleted (a rollback to nothing), as before an agent makes its own or sets
    the workspace unsigned: while the witness is there, nothing is trusted."""
    _revoked_bob_rolled_back(env)
    for path in (_ws(env) / "reviewers").iterdir():
        path.unlink()
    verified = tht(env, "reviewer", "verify", "--json")
    assert verified.returncode == 7
    codes = [p["code"] for p in json.loads(verified.stdout)["problems"]]
    assert codes == ["missing_ledger", "rolled_back"]
    doctor = json.loads(tht(env, "doctor", "--json").stdout)
    (check,) = [c for c in doctor["checks"] if c["name"] == "reviewer registry"]
    assert check["verdict"] == "fail"
    # nobody is left to unlock a key of: a human's --as accepts it, the guard hook denies it
    as_agent = {**env, "THT_ACTOR": "agent"}
    refused = tht_no_terminal(
        as_agent, "reviewer", "verify", "--accept-rollback", "--as", "human:ann"
    )
    assert refused.returncode == 5
    accepted = tht(env, "reviewer", "verify", "--accept-rollback", "--as", "human:ann")
    assert accepted.returncode == 0, accepted.stdout
    assert not (_ws(env) / ".tht" / "witness" / "reviewers.json").exists()


def test_without_the_witness_the_registry_rollback_verifies(
    env: dict[str, str],  # noqa: F811
) -> None:
    """The documented limit: an agent that deletes the witness too is not seen."""
    _revoked_bob_rolled_back(env)
    (_ws(env) / ".tht" / "witness" / "reviewers.json").unlink()
    assert tht(env, "reviewer", "verify").returncode == 0


# --------------------------------------------------------------------------- the catalog


def _flagged(tmp_path: Path) -> tuple[Ws, int]:
    """A workspace synced, ``pazienti.sesso`` flagged by a human, then the flag cut off."""
    ws = make_workspace(tmp_path / "ws")
    folder = ws.root / "catalog"
    before = line_count(folder)
    ws.ok("catalog", "sensitive", "set", "pazienti.sesso", "--on", "--reason", "personal",
          "--as", H)  # fmt: skip
    assert line_count(folder) > before
    roll_back(folder, before)
    return ws, before


def test_a_sensitive_flag_cut_off_the_catalog_is_caught_until_a_repair_records_it(
    tmp_path: Path,
) -> None:
    ws, kept = _flagged(tmp_path)
    done = ws.tht("catalog", "verify", "--json")
    assert done.code == 7
    assert [p["code"] for p in done.json()["problems"]] == ["rolled_back"]
    # what would read the column's values unmasked refuses, and so does a sync
    for args in (("catalog", "sample", "pazienti"), ("catalog", "sync")):
        refused = ws.tht(*args)
        assert refused.code == 7 and "rolled_back" in refused.stderr, args
    repaired = ws.ok("catalog", "verify", "--repair", "--reason", "the flag is lost", "--as", H)
    assert repaired["repaired"] is True
    assert [p["code"] for p in repaired["problems"]] == ["rolled_back"]
    lines = (ws.root / "catalog" / "ledger.jsonl").read_bytes().splitlines()
    assert len(lines) == kept + 1 and json.loads(lines[-1])["type"] == "ledger_repaired"
    assert ws.ok("catalog", "verify")["ok"] is True


def test_a_catalog_rollback_accepted_by_a_human(tmp_path: Path) -> None:
    ws, _ = _flagged(tmp_path)
    assert ws.tht("catalog", "verify", "--accept-rollback", "--as", H, THT_ACTOR="agent").code == 5
    both = ws.tht("catalog", "verify", "--repair", "--accept-rollback", "--as", H)
    assert both.code == 2
    accepted = ws.ok("catalog", "verify", "--accept-rollback", "--as", H)
    assert accepted["accepted"] is True and accepted["ok"] is True
    assert ws.ok("catalog", "verify")["ok"] is True


def test_a_catalog_deleted_whole_is_caught(tmp_path: Path) -> None:
    ws, _ = _flagged(tmp_path)
    roll_back(ws.root / "catalog", 0)
    done = ws.tht("catalog", "verify", "--json")
    assert done.code == 7 and "rolled_back" in [p["code"] for p in done.json()["problems"]]
    synced = ws.tht("catalog", "sync")
    assert synced.code == 7 and "rolled_back" in synced.stderr
    doctor = ws.tht("doctor", "--json")  # not "never synced": deleted
    (check,) = [c for c in doctor.json()["checks"] if c["name"] == "catalog"]
    assert doctor.code == 7 and check["verdict"] == "fail" and "rolled_back" in check["detail"]
