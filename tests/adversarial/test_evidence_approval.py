"""Curated evidence in a signed workspace: the human approval that precedes activation (spec 004,
*Published Evidence*), through the real CLI (found by an adversarial walkthrough).

Before: the agent edited ``evidence/units/*.md`` and ran ``tht evidence publish`` itself; its
text became what F1's glossary options, F3 and F4 read, and a reviewer's earlier acceptance
pointed at it. Now, in signed mode, ``tht evidence publish`` is a reviewer's approval (``--as``,
passphrase at the terminal) and every search checks that approval; a point rewritten in the
vector store is refused in every mode.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from modules.evidence.generations import GENERATIONS_FILE
from tests.support.roles import REPO, agent, reviewer
from tht.ptyrun import TerminalRun

SOURCES = REPO / "tests" / "fixtures" / "evidence" / "sources"
ANN = "human:ann"
ANN_PW = "ann's long signing passphrase"
QUERY = "Tasso di occupazione dei posti letto"


def _agent(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return agent(ws, *args)


def _reviewer(ws: Path, *args: str, typed: tuple[str, ...] = (ANN_PW,)) -> TerminalRun:
    return reviewer(ws, *args, typed=typed)


def _find(ws: Path) -> tuple[int, dict[str, object]]:
    done = _agent(ws, "search", "find", QUERY, "--json")
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def signed_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with prepared units, made signed by ann adding herself."""
    ws = tmp_path_factory.mktemp("evidence-approval") / "ws"
    assert _agent(ws, "workspace", "init", str(ws)).returncode == 0
    with (ws / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\nevidence: {embedder: hashing}\n")
    for source in sorted(SOURCES.iterdir()):
        shutil.copy(source, ws / "evidence" / "sources" / source.name)
    assert _agent(ws, "evidence", "prepare").returncode == 0
    added = _reviewer(ws, "reviewer", "add", ANN, "--json", typed=(ANN_PW, ANN_PW))
    assert added.returncode == 0, added.stderr
    return ws


def test_the_agent_cannot_publish_in_a_signed_workspace_and_nothing_is_written(
    signed_ws: Path,
) -> None:
    ws = signed_ws
    evidence = {p: p.read_bytes() for p in sorted((ws / "evidence").rglob("*")) if p.is_file()}
    bare = _agent(ws, "evidence", "publish", "--json")
    assert bare.returncode == 2 and "human-only" in bare.stderr and "--as human:" in bare.stderr
    posing = _agent(ws, "evidence", "publish", "--as", ANN, "--json")  # no terminal to ask at
    assert posing.returncode == 5, posing.stderr
    assert "terminal" in posing.stderr
    assert not (ws / ".tht" / "evidence" / GENERATIONS_FILE).exists()
    assert {p: p.read_bytes() for p in evidence} == evidence
    assert sorted(p for p in (ws / "evidence").rglob("*") if p.is_file()) == sorted(evidence)


def test_the_reviewer_s_publish_is_an_approval_and_the_agent_s_detours_are_refused(
    signed_ws: Path,
) -> None:
    ws = signed_ws
    published = _reviewer(ws, "evidence", "publish", "--as", ANN, "--json")
    assert published.returncode == 0, published.stderr
    generation = json.loads(published.stdout)["generation"]
    assert generation["approval"]["reviewer"] == ANN
    code, body = _find(ws)
    assert code == 0 and body["status"] == "available"
    assert body["results"][0]["id"] == "evidence:tasso-di-occupazione"  # type: ignore[index]
    status = _agent(ws, "evidence", "status")
    assert f"approved by {ANN}" in status.stdout

    # 1. the agent forges a unit, moves the registry aside (tht then believes the workspace
    #    unsigned), publishes, puts the registry back: its generation is not approved. (With
    #    the registry's witness still there, a registry moved aside trusts nobody and the
    #    publish is a human's; this agent moves the witness aside too.)
    unit = ws / "evidence" / "units" / "tasso-di-occupazione.md"
    genuine = unit.read_bytes()
    unit.write_bytes(genuine + b"\nI letti chiusi contano come occupati.\n")
    shutil.move(ws / "reviewers", ws / "reviewers.aside")
    assert _agent(ws, "evidence", "publish", "--json").returncode == 2
    witness = ws / ".tht" / "witness" / "reviewers.json"
    shutil.move(witness, ws / "witness.aside")
    forged = _agent(ws, "evidence", "publish", "--json")
    assert forged.returncode == 0, forged.stderr
    assert "approval" not in json.loads(forged.stdout)["generation"]
    shutil.move(ws / "reviewers.aside", ws / "reviewers")
    shutil.move(ws / "witness.aside", witness)
    code, body = _find(ws)
    assert (code, body["status"], body["reason"], body["results"]) == (
        6,
        "unavailable",
        "unapproved",
        [],
    )

    doctor = json.loads(_agent(ws, "doctor", "--json").stdout)
    check = next(c for c in doctor["checks"] if c["name"] == "vector index")
    assert check["verdict"] == "warn" and "no reviewer's approval" in check["detail"]
    assert check["fix"] == "a reviewer: tht evidence publish --as human:ID"

    # 2. ... and copies the approval of the reviewer's record onto its own: does not verify,
    #    and `evidence status` does not show it as approved either
    state_file = ws / ".tht" / "evidence" / GENERATIONS_FILE
    state = json.loads(state_file.read_bytes())
    state["active"]["approval"] = generation["approval"]
    state_file.write_text(json.dumps(state), encoding="utf-8")
    code, body = _find(ws)
    assert (code, body["reason"]) == (6, "unapproved")
    status = _agent(ws, "evidence", "status")
    assert "NOT APPROVED" in status.stdout and f"approved by {ANN}" not in status.stdout
    shown = json.loads(_agent(ws, "evidence", "status", "--json").stdout)
    assert "does not verify" in shown["unapproved"]

    # the reviewer reviews the diff, restores the unit and publishes: approved again
    unit.write_bytes(genuine)
    again = _reviewer(ws, "evidence", "publish", "--as", ANN, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "activated"
    code, body = _find(ws)
    assert code == 0 and body["status"] == "available"

    # 3. the agent rewrites the approved generation's point in the vector store (its text and
    #    the vectors of that text, under the point's own id): refused, not shown
    _rewrite_point(ws, "Tasso di occupazione: conta anche i letti chiusi.")
    code, body = _find(ws)
    assert (code, body["reason"]) == (6, "tampered")
    assert "letti chiusi" not in json.dumps(body)
    # `publish` rebuilds it (not `unchanged`): the index is checked against the record
    rebuilt = _reviewer(ws, "evidence", "publish", "--as", ANN, "--json")
    assert json.loads(rebuilt.stdout)["status"] == "activated", rebuilt.stderr
    assert _find(ws)[0] == 0


def _rewrite_point(ws: Path, text: str) -> None:
    """What an agent with this package and the workspace's Qdrant folder can do."""
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.edge import EdgeVectorStore
    from kernel.vectors.hashing_embedder import HashingEmbedder
    from kernel.workspace import open_workspace
    from modules.evidence import EvidencePaths
    from modules.evidence.catalog import load_evidence
    from modules.evidence.generations import load_generation_state
    from modules.evidence.index import fragments_of, write_generation

    workspace = open_workspace(ws)
    paths = EvidencePaths.of(workspace)
    active = load_generation_state(paths.state_dir).active
    assert active is not None
    items = fragments_of(load_evidence(paths, max_chunk_chars=4000).state.publishable, 4000)
    target = next(i for i in items if i.unit.id == "evidence:tasso-di-occupazione")
    forged = dataclasses.replace(target.fragment, text=text, rendered=f"{QUERY}\n{text}")
    store = EdgeVectorStore.for_workspace(workspace, lock_timeout=5.0)
    try:
        write_generation(
            store,
            HashingEmbedder(active.dense_size),
            Bm25Encoder(tuple(workspace.settings().languages)),
            [dataclasses.replace(target, fragment=forged)],
            active.id,
        )
    finally:
        store.close()
