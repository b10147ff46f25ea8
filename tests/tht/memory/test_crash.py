"""The promotion's crash window (spec 003 §12): the registry and its index are written before
the kernel records ``memory_promoted``. A real SIGKILL in that window — after the projection is
written, or between the registry and the projection — and then the reviewer's answer again:
it converges, saving nothing twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import REPO, H

_CHILD = """
import os, signal, sys
from pathlib import Path

import tht.memory_runtime as runtime
from tht.composition import open_app

root, session, seq, chosen, window = sys.argv[1:6]
if window == "before_index":
    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    runtime.reindex_memory = killed
app = open_app(Path(root))
runtime.before_answer(app, session, int(seq), [chosen], actor="human:ann")
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("window", ["after_index", "before_index"])
def test_a_kill_before_memory_promoted_converges_on_the_next_answer(
    prepared: Prepared, tmp_path: Path, window: str
) -> None:
    ws = prepared.at_f8.copy(tmp_path / "ws")
    a, review, option = prepared.a, prepared.promotion_review, f"c{prepared.candidate_seq}"
    env = {k: v for k, v in os.environ.items() if k not in ("THT_ACTOR", "THT_SESSION")}
    env.update({k: v for k, v in ws.env().items() if v is not None})
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ws.root), a, str(review), option, window],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    # killed in the window: the registry holds the memory, the session does not record it
    assert [e["type"] for e in ws.registry_events()] == ["memory_saved"]
    assert not [e for e in ws.events(a) if e["type"] == "memory_promoted"]
    assert [r["seq"] for r in ws.ok("review", "list", a)] == [review]
    searched = ws.tht("memory", "search", "ablazione", "--json")
    if window == "after_index":  # indexed, but not backed until the session records it
        assert searched.code == 0 and searched.json()["results"] == []
    else:  # the index never followed: fail-closed until it does
        assert searched.code == 6 and searched.json()["status"] == "unavailable"

    body = ws.answer(a, review, "--choose", option)
    assert body["memory"] == {"saved": [], "already": [prepared.memory_id]}
    saved = [e for e in ws.registry_events() if e["type"] == "memory_saved"]
    assert len(saved) == 1 and saved[0]["payload"]["source"] == {
        "session": a,
        "seq": prepared.candidate_seq,
    }
    promoted = [e for e in ws.events(a) if e["type"] == "memory_promoted"]
    assert [p["payload"]["memory_id"] for p in promoted] == [prepared.memory_id]
    assert ws.ok("memory", "verify")["ok"] is True
    assert ws.ok("ledger", "verify", a)["ok"] is True
    assert [r["id"] for r in ws.ok("memory", "search", "ablazione")["results"]] == [
        prepared.memory_id
    ]
    again = ws.tht("review", "answer", str(review), a, "--choose", option, "--as", H, "--json")
    assert again.code == 5  # answered once: never twice
    assert len([e for e in ws.registry_events() if e["type"] == "memory_saved"]) == 1
