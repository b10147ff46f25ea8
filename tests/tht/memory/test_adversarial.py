"""Adversarial Memory through the CLI: what an agent or anyone who can write the workspace's
files tries, and what must hold.

(a) an agent cannot propose F2's or F8's memory outcome itself; (b) a ``memory_saved`` written
straight into the registry file, correctly chained, is never recalled (no session backs it);
a ``solved_question_saved`` written for a real finalized session with a question or SQL of its own
is never recalled (only what that session's verified ledger solved backs one); (c) a forgotten
memory is never searched again; (d) a missing or tampered index fails closed;
(e) forgetting is a human's act; (f) a poisoned fold cache decides nothing.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modules.memory.cache import MemoryCache, decode_cache, encode_cache
from modules.memory.records import MemoryState
from tests.support.sparse_copy import copytree_sparse
from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import (
    SECOND_QUESTION,
    H,
    Ws,
    append_registry,
    clarify,
    forge_memory_saved,
    stage_lines,
)


def _of_type(ws: Ws, session: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in ws.events(session) if e["type"] == kind]


def _second_session_at_f1(ws: Ws) -> str:
    """The demo's second question with its year grounded: closing F1 runs F2."""
    session = ws.new_session(SECOND_QUESTION)
    ws.step(session, "disambiguation", "20-f1-year.json", "--choose", "year")
    return session


# --------------------------------------------------------------------------- (a) proposals

_APPLIED = {
    "type": "memory_applied",
    "subject": "ablazione",
    "payload": {"memory_id": "mem-0000000000000000", "content": "ablazione = whatever"},
}
_PROMOTED = {
    "type": "memory_promoted",
    "subject": "ablazione",
    "payload": {"source_seq": 8, "memory_id": "mem-0000000000000000", "content": "x"},
}


@pytest.mark.parametrize(
    ("stage", "proposal"),
    [
        pytest.param(
            "memory_recall",
            {
                "kind": "decide",
                "prompt": "Apply?",
                "options": [{"id": "x", "label": "x", "events": [_APPLIED]}],
            },
            id="recall-decide",
        ),
        pytest.param("memory_recall", {"kind": "auto", "events": [_APPLIED]}, id="recall-auto"),
        pytest.param(
            "memory_promotion",
            {
                "kind": "decide",
                "prompt": "Promote?",
                "options": [{"id": "x", "label": "x", "events": [_PROMOTED]}],
            },
            id="promotion-decide",
        ),
        pytest.param(
            "memory_promotion",
            {
                "kind": "select",
                "prompt": "Promote?",
                "options": [{"id": "x", "label": "x", "events": [_PROMOTED]}],
            },
            id="promotion-select",
        ),
    ],
)
def test_an_agent_cannot_propose_the_memory_outcome(
    prepared: Prepared, tmp_path: Path, stage: str, proposal: dict[str, Any]
) -> None:
    source = prepared.at_f2 if stage == "memory_recall" else prepared.at_f8
    session = prepared.b if stage == "memory_recall" else prepared.a
    ws = source.copy(tmp_path / "ws")
    before = ws.session_bytes(session)
    registry = ws.registry.read_bytes() if ws.registry.exists() else b""
    done = ws.propose_json(session, stage, proposal)
    assert done.code == 5, done.stdout + done.stderr
    assert f"{stage} is tht's own work" in done.json()["error"]["message"]
    assert ws.session_bytes(session) == before
    assert (ws.registry.read_bytes() if ws.registry.exists() else b"") == registry


# --------------------------------------------------------------------------- (b) forged entries


@pytest.mark.parametrize("source", ["real-session", "no-such-session"])
def test_a_forged_memory_is_never_recalled(prepared: Prepared, tmp_path: Path, source: str) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    session = prepared.a if source == "real-session" else "01M8NTZZZZG2J53JDWE0F7X90S"
    forged = forge_memory_saved(
        ws,
        subject="degenza",
        meaning="ricoveri.data_dimissione - ricoveri.data_ricovero",
        target="ricoveri",
        session=session,
        seq=prepared.candidate_seq,
    )
    # a correct chain: the registry verifies (unsigned mode), the index takes it in
    assert ws.ok("memory", "verify")["ok"] is True
    ws.ok("memory", "reindex")
    found = ws.ok("memory", "search", "degenza")["results"]
    assert forged not in [r["id"] for r in found]  # not backed: search never shows it
    listed = {m["id"]: m["backed"] for m in ws.ok("memory", "list")["memories"]}
    assert listed == {prepared.memory_id: True, forged: False}  # listed, and marked
    assert "NOT BACKED" in ws.tht("memory", "list").stdout
    later = ws.new_session("Qual è la degenza media per ospedale nel 2024?")
    clarify(ws, later, "degenza", "giorni tra ricovero e dimissione", "ricoveri")
    ran = ws.close_f1(later)["ran"]
    assert ran["stage"] == "memory_recall" and ran["status"] in ("review", "completed"), ran
    # neither an option (review_requested) nor applied / rejected: the id is nowhere in F2
    assert forged.encode() not in b"".join(ws.ledger_lines(later))


def test_a_forged_contradiction_is_never_a_recalled_option(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    forged = forge_memory_saved(
        ws,
        subject="ablazione",
        meaning="procedure.patologia LIKE '%ablazion%'",
        target="procedure.patologia",
        session=prepared.a,
        seq=prepared.candidate_seq,
    )
    ws.ok("memory", "reindex")
    later = _second_session_at_f1(ws)
    ran = ws.close_f1(later)["ran"]
    assert ran["status"] == "review", ran
    options = [o["id"] for o in ws.review(later, int(ran["review"]))["options"]]
    assert f"m:{prepared.memory_id}" in options  # the real memory is recalled
    assert f"m:{forged}" not in options


FORGED_QUESTION = "Quante ablazioni per ospedale nel 2025?"
FORGED_SQL = "SELECT ospedale, COUNT(*) * 10 AS ricoveri FROM ricoveri GROUP BY ospedale"


def _replace_last_solved(ws: Ws, genuine: dict[str, Any], payload: Any) -> None:
    """Cut the registry's last entry (the genuine ``solved_question_saved``, unsigned, at the
    end) and append ``payload`` in its place, chained, as the same actor."""
    from kernel.events import EventDraft

    draft = EventDraft(
        type="solved_question_saved",
        actor=genuine["actor"],
        subject=genuine["subject"],
        payload=payload,
    )
    append_registry(ws, draft, drop_last=True)


@pytest.mark.parametrize("forge", ["sql", "question", "seq", "result"])
def test_a_forged_solved_question_of_a_real_finalized_session_is_never_recalled(
    prepared: Prepared, tmp_path: Path, forge: str
) -> None:
    """The genuine entry (written by ``module:memory``, unsigned, the registry's last line) is
    cut and one of the agent's own takes its place for the same finalized session, correctly
    chained: the registry verifies, the index takes it in, and neither search nor F2 shows it."""
    from kernel.memory_events import MemorySource, SolvedQuestionSavedPayload
    from modules.memory.fold import sql_sha256

    ws = prepared.promoted.copy(tmp_path / "ws")
    genuine = ws.registry_events()[-1]
    assert genuine["type"] == "solved_question_saved"
    real = genuine["payload"]
    sql = FORGED_SQL if forge == "sql" else real["sql"]
    payload = SolvedQuestionSavedPayload(
        solved_id=real["solved_id"],
        question=FORGED_QUESTION if forge == "question" else real["question"],
        rewritten=real["rewritten"],
        sql=sql,
        sql_sha256=sql_sha256(sql),
        evidence=tuple(real["evidence"]),
        tables=tuple(real["tables"]),
        result_sha256="0" * 64 if forge == "result" else real["result_sha256"],
        language=real["language"],
        source=MemorySource(
            session=real["source"]["session"],
            seq=real["source"]["seq"] - 1 if forge == "seq" else real["source"]["seq"],
        ),
    )
    _replace_last_solved(ws, genuine, payload)
    assert ws.ok("memory", "verify")["ok"] is True
    ws.ok("memory", "reindex")
    for text in (real["question"], payload.question, sql):
        found = ws.ok("memory", "search", text, "--limit", "20")["results"]
        assert prepared.solved_id not in [r["id"] for r in found], text
    later = _second_session_at_f1(ws)
    ran = ws.close_f1(later)["ran"]
    if ran["status"] == "review":
        options = [o["id"] for o in ws.review(later, int(ran["review"]))["options"]]
        assert f"q:{prepared.solved_id}" not in options
        assert f"m:{prepared.memory_id}" in options  # the genuine memory still is
    assert b"COUNT(*) * 10" not in b"".join(ws.ledger_lines(later))


def test_the_genuine_solved_question_rewritten_unchanged_is_still_recalled(
    prepared: Prepared, tmp_path: Path
) -> None:
    """The control of the test above: the same cut and re-append with the genuine content."""
    from kernel.memory_events import SolvedQuestionSavedPayload

    ws = prepared.promoted.copy(tmp_path / "ws")
    genuine = ws.registry_events()[-1]
    payload = msgspec.convert(genuine["payload"], SolvedQuestionSavedPayload)
    _replace_last_solved(ws, genuine, payload)
    ws.ok("memory", "reindex")
    later = _second_session_at_f1(ws)
    ran = ws.close_f1(later)["ran"]
    options = [o["id"] for o in ws.review(later, int(ran["review"]))["options"]]
    assert f"q:{prepared.solved_id}" in options


def test_a_solved_question_planted_before_finalize_makes_the_outbox_item_fail_saying_so(
    prepared: Prepared, tmp_path: Path
) -> None:
    """Planted for the session before it is finalized, the entry takes the session's solved id:
    the genuine one cannot be saved beside it, and the after-finalize task says why instead of
    reporting done."""
    from kernel.events import EventDraft
    from kernel.memory_events import MemorySource, SolvedQuestionSavedPayload
    from modules.memory.fold import sql_sha256
    from modules.memory.keys import solved_id

    ws = prepared.promoted.copy(tmp_path / "ws")
    session = prepared.a2  # the twin: at F6, never finalized
    append_registry(
        ws,
        EventDraft(
            type="solved_question_saved",
            actor="module:memory",
            subject=solved_id(session),
            payload=SolvedQuestionSavedPayload(
                solved_id=solved_id(session),
                question=FORGED_QUESTION,
                sql=FORGED_SQL,
                sql_sha256=sql_sha256(FORGED_SQL),
                source=MemorySource(session=session, seq=999),
            ),
        ),
    )
    assert ws.ok("memory", "verify")["ok"] is True
    ws.skip_datamart(session)
    done = ws.ok("session", "finalize", session, "--as", H)
    (task,) = done["after_finalize"]
    assert task["status"] != "done", task
    assert "not what the session solved" in task["error"], task
    listed = {s["id"]: s["backed"] for s in ws.ok("memory", "list")["solved_questions"]}
    assert listed == {prepared.solved_id: True, solved_id(session): False}
    shown = ws.tht("memory", "show", solved_id(session))
    assert shown.code == 0 and "NOT BACKED by its session: never recalled" in shown.stdout


# --------------------------------------------------------------------------- (c) forget


def test_a_forgotten_memory_is_never_searched_or_recalled(
    prepared: Prepared, tmp_path: Path
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    mid = prepared.memory_id
    assert mid in [r["id"] for r in ws.ok("memory", "search", "ablazione")["results"]]
    old_index = tmp_path / "old-index"
    for part in ("memory_index", "qdrant"):
        copytree_sparse(ws.root / ".tht" / part, old_index / part)
    body = ws.ok("memory", "forget", mid, "--reason", "wrong target", "--as", H)
    assert body["status"] == "forgotten"
    ws.ok("memory", "reindex")
    for mode in ("hybrid", "dense", "bm25"):  # bm25's ranking is only shown under --explain
        for text in ("ablazione", "procedure.flag_ablazione = 1", SECOND_QUESTION):
            body = ws.ok("memory", "search", text, "--mode", mode, "--limit", "20", "--explain")
            shown = body["results"] + body["explain"]["candidates"]
            assert mid not in [r["id"] for r in shown], (mode, text)
    (record,) = ws.ok("memory", "list", "--all")["memories"]
    assert record["status"] == "forgotten" and record["forgotten_reason"] == "wrong target"
    assert ws.ok("memory", "list")["memories"] == []
    later = _second_session_at_f1(ws)
    ran = ws.close_f1(later)["ran"]
    assert ran["status"] == "review", ran  # the solved question is still recalled
    options = [o["id"] for o in ws.review(later, int(ran["review"]))["options"]]
    assert options == [f"q:{prepared.solved_id}", "none"]
    assert mid.encode() not in b"".join(ws.ledger_lines(later))
    # the index from before the forget, put back: stale, so it fails closed
    for part in ("memory_index", "qdrant"):
        shutil.rmtree(ws.root / ".tht" / part)
        copytree_sparse(old_index / part, ws.root / ".tht" / part)
    done = ws.tht("memory", "search", "ablazione", "--json")
    assert done.code == 6 and done.json()["status"] == "unavailable"
    assert done.json()["results"] == []


# --------------------------------------------------------------------------- (d) the index


def _header(ws: Ws) -> Path:
    return ws.root / ".tht" / "memory_index" / "memory_index.json"


def _edit_header(key: str, value: object) -> Callable[[Ws], object]:
    def edit(ws: Ws) -> None:
        data = json.loads(_header(ws).read_text())
        data[key] = value
        _header(ws).write_text(json.dumps(data))

    return edit


_TAMPER: dict[str, Callable[[Ws], object]] = {
    "deleted": lambda ws: shutil.rmtree(ws.root / ".tht" / "memory_index"),
    "garbage-header": lambda ws: _header(ws).write_text("{not json"),
    "other-head": _edit_header("registry_head", "0" * 64),
    "other-seq": _edit_header("registry_seq", 1),
    "other-build": _edit_header("build", "f" * 32),
    "other-embedder": _edit_header("embedder", "someone-else/1"),
    "vectors-removed": lambda ws: shutil.rmtree(ws.root / ".tht" / "qdrant"),
}


@pytest.mark.parametrize("tamper", sorted(_TAMPER))
def test_a_missing_or_tampered_index_fails_closed(
    prepared: Prepared, tmp_path: Path, tamper: str
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    later = _second_session_at_f1(ws)
    _TAMPER[tamper](ws)
    done = ws.tht("memory", "search", "ablazione", "--json")
    assert done.code == 6, done.stdout
    assert done.json()["status"] == "unavailable" and done.json()["results"] == []
    # F1 closes (the human's answer stands); F2 cannot run now and writes nothing
    body = ws.close_f1(later)
    assert body["ran"]["status"] == "not_run" and body["ran"]["exit_code"] == 6, body["ran"]
    assert stage_lines(ws, later, "memory_recall") == []
    before = ws.session_bytes(later)
    again = ws.tht("stage", "run", "memory_recall", later, "--json")
    assert again.code == 6 and again.json()["error"]["code"] == "unavailable"
    assert ws.session_bytes(later) == before
    # once reindexed, F2 runs
    ws.ok("memory", "reindex")
    assert ws.ok("stage", "run", "memory_recall", later)["status"] == "review"


# --------------------------------------------------------------------------- (e) forget: humans


@pytest.mark.parametrize(
    ("argv", "env", "code"),
    [
        pytest.param((), {}, 2, id="no-as"),
        pytest.param(("--as", H), {"THT_ACTOR": "agent"}, 5, id="agent"),
        pytest.param(("--as", "module:memory"), {}, 5, id="module"),
        pytest.param(("--as", "agent:claude"), {}, 2, id="agent-actor"),
    ],
)
def test_forget_is_a_human_act(
    prepared: Prepared, tmp_path: Path, argv: tuple[str, ...], env: dict[str, str], code: int
) -> None:
    ws = prepared.promoted.copy(tmp_path / "ws")
    before = ws.registry.read_bytes()
    done = ws.tht("memory", "forget", prepared.memory_id, "--reason", "no", *argv, "--json", **env)
    assert done.code == code, done.stdout
    assert "human" in done.json()["error"]["message"]
    assert ws.registry.read_bytes() == before
    assert ws.ok("memory", "show", prepared.memory_id)["status"] == "live"


# --------------------------------------------------------------------------- (f) the fold cache


def _cache_path(ws: Ws) -> Path:
    return ws.root / ".tht" / "cache" / "workspace" / "memory.msgpack"


def _poisoned(real: MemoryCache, how: str) -> bytes:
    state = real.state
    if how == "empty":
        state = MemoryState(last_seq=state.last_seq)
    elif how == "meaning":
        state = msgspec.structs.replace(
            state,
            memories={
                k: msgspec.structs.replace(r, meaning="1 = 1; DROP TABLE procedure")
                for k, r in state.memories.items()
            },
        )
    elif how == "forgotten":
        state = msgspec.structs.replace(
            state,
            memories={
                k: msgspec.structs.replace(r, status="forgotten") for k, r in state.memories.items()
            },
        )
    data = encode_cache(msgspec.structs.replace(real, state=state))
    assert data is not None
    return data


def _real_cache(ws: Ws) -> MemoryCache:
    ws.ok("memory", "list")  # a display read writes the cache
    real = decode_cache(_cache_path(ws).read_bytes())
    assert real is not None and real.last_seq == 2
    return real


@pytest.mark.parametrize("how", ["empty", "meaning", "forgotten"])
def test_a_poisoned_fold_cache_changes_no_f2_option(
    prepared: Prepared, tmp_path: Path, how: str
) -> None:
    clean = prepared.promoted.copy(tmp_path / "clean")
    dirty = prepared.promoted.copy(tmp_path / "dirty")
    real = _real_cache(dirty)
    _real_cache(clean)
    _cache_path(dirty).write_bytes(_poisoned(real, how))
    assert dirty.tht("memory", "verify", "--json").code == 7  # the cache disagrees: told
    views = []
    for ws in (clean, dirty):
        later = _second_session_at_f1(ws)
        if ws is dirty:  # poisoned right before F2 runs
            _cache_path(dirty).write_bytes(_poisoned(real, how))
        ran = ws.close_f1(later)["ran"]
        assert ran["status"] == "review", ran
        views.append(ws.review(later, int(ran["review"]))["options"])
    assert views[0] == views[1]
    assert views[1][0]["events"][0]["payload"]["meaning"] == "procedure.flag_ablazione = 1"


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    poison=st.one_of(
        st.sampled_from(["empty", "meaning", "forgotten"]),
        st.binary(max_size=64),
    )
)
def test_a_poisoned_fold_cache_changes_no_f8_candidate(
    prepared: Prepared, tmp_path_factory: pytest.TempPathFactory, poison: str | bytes
) -> None:
    """A2's clarification is in memory: whatever the cache says, it is no candidate, and F8
    completes with the reason. The cache is rewritten before every command."""
    ws = prepared.promoted.copy(tmp_path_factory.mktemp("f8-poison") / "ws")
    real = _real_cache(ws)
    data = poison if isinstance(poison, bytes) else _poisoned(real, poison)
    _cache_path(ws).write_bytes(data)
    preview = ws.ok("memory", "promote", prepared.a2, "--preview")
    assert preview["candidates"] == [] and preview["excluded"] == {"in_memory": 1}
    _cache_path(ws).write_bytes(data)
    ran = ws.skip_datamart(prepared.a2)["ran"]
    assert ran["status"] == "completed"
    assert ran["reason"] == "no clarification to promote: 1 already in memory"
    (nothing,) = _of_type(ws, prepared.a2, "memory_nothing_to_promote")
    assert nothing["payload"]["excluded"] == {"in_memory": 1}


def test_a_cache_claiming_a_memory_of_an_empty_registry_changes_no_candidate(
    prepared: Prepared, tmp_path: Path
) -> None:
    """No registry yet (F8 of the first session): a cache that says the clarification is
    already in memory is ignored, and the candidate stays."""
    source = prepared.promoted.copy(tmp_path / "source")
    real = _real_cache(source)
    ws = prepared.at_f8.copy(tmp_path / "ws")
    assert ws.registry_events() == []
    _cache_path(ws).parent.mkdir(parents=True, exist_ok=True)
    _cache_path(ws).write_bytes(_cache_path(source).read_bytes())
    assert decode_cache(_cache_path(ws).read_bytes()) == real
    preview = ws.ok("memory", "promote", prepared.a, "--preview")
    assert [c["seq"] for c in preview["candidates"]] == [prepared.candidate_seq]
    body = ws.answer(
        prepared.a, prepared.promotion_review, "--choose", f"c{prepared.candidate_seq}"
    )
    assert body["memory"] == {"saved": [prepared.memory_id], "already": []}
