"""Golden files of the Memory rows of the spec 003 §14.2 matrix (``golden/memory/``).

``<row>.jsonl``: the ledger lines of the row's stage (F2 ``memory_recall`` or F8
``memory_promotion``), from its first line to its last — a pause and a resume in between
included — byte for byte: ``THT_CLOCK`` and ``THT_SEED`` make them repeat. One field only is
masked, and only where it varies: ``prev`` of a session that ran F7, whose hash chain covers
``result_verified``'s measured ``elapsed_ms``. ``registry.jsonl``: the Memory registry after
the promotion and the finalization. ``cli_<command>.txt``: ``exit N`` and the ``--json``
output of ``tht memory list | show | promote --preview | search [--explain]``; the search's
scores and signals are rounded to 2 decimals (the embedder's float arithmetic is the CPU's).

Regenerate with ``pytest --update-golden`` and explain the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tht.conftest import Result
from tests.tht.memory.conftest import Prepared
from tests.tht.memory.support import GOLDEN, SECOND_QUESTION, UNRELATED_QUESTION, H, Ws

_VARIES = "<varies: the chain covers F7's measured elapsed_ms>"


def _window(ws: Ws, session: str, stage: str) -> bytes:
    lines = ws.ledger_lines(session)
    stages = [json.loads(line).get("stage") for line in lines]
    at = [i for i, s in enumerate(stages) if s == stage]
    assert at, f"no {stage} line in {session}"
    measured = any(json.loads(line)["type"] == "result_verified" for line in lines[: at[0]])
    out = []
    for line in lines[at[0] : at[-1] + 1]:
        if measured:
            event = json.loads(line)
            prev = event["prev"]
            line = line.replace(f'"prev":"{prev}"'.encode(), f'"prev":"{_VARIES}"'.encode())
        out.append(line + b"\n")
    return b"".join(out)


def _cli(done: Result, *, round_scores: bool = False) -> bytes:
    text = done.stdout
    if round_scores:
        body = done.json()
        for result in body.get("results", []):
            result["score"] = round(result["score"], 2)
        for candidate in body.get("explain", {}).get("candidates", []):
            signals = candidate["signals"]
            for key in ("mention", "cosine", "bm25"):
                if signals[key] is not None:
                    signals[key] = round(signals[key], 2)
            if candidate["relevance"] is not None:
                candidate["relevance"] = round(candidate["relevance"], 2)
        text = json.dumps(body, ensure_ascii=False, sort_keys=True, indent=1) + "\n"
    return f"exit {done.code}\n{text}".encode()


def _rows(prepared: Prepared, tmp: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    n = iter(range(100))

    def copy(source: Ws) -> Ws:
        return source.copy(tmp / f"ws{next(n)}")

    a, a2, b = prepared.a, prepared.a2, prepared.b
    # F2: none found (the workspace memory is empty) — session A, F2 ran by itself
    out["f2_none_empty.jsonl"] = _window(prepared.at_datamart, a, "memory_recall")
    # F2: applied / rejected / resumed — session B, the demo's second question
    ws = copy(prepared.at_f2)
    ws.answer(b, prepared.recall_review, "--choose", f"m:{prepared.memory_id}")
    out["f2_applied.jsonl"] = _window(ws, b, "memory_recall")
    ws = copy(prepared.at_f2)
    ws.answer(b, prepared.recall_review, "--choose", "none")
    out["f2_rejected.jsonl"] = _window(ws, b, "memory_recall")
    ws = copy(prepared.at_f2)
    ws.ok("session", "pause", b, "--as", H)
    ws.ok("session", "resume", b, "--as", H)
    ws.answer(b, prepared.recall_review, "--choose", f"q:{prepared.solved_id}")
    out["f2_resume.jsonl"] = _window(ws, b, "memory_recall")
    # F2: none found (a near miss on a memory that is not empty)
    ws = copy(prepared.promoted)
    near = ws.new_session(UNRELATED_QUESTION)
    ws.close_f1(near)
    out["f2_none_near_miss.jsonl"] = _window(ws, near, "memory_recall")
    # F8: promoted, with the registry and the CLI's views of it
    ws = copy(prepared.at_f8)
    out["cli_memory_promote_preview.txt"] = _cli(
        ws.tht("memory", "promote", a, "--preview", "--json")
    )
    ws.answer(a, prepared.promotion_review, "--choose", f"c{prepared.candidate_seq}")
    out["f8_promoted.jsonl"] = _window(ws, a, "memory_promotion")
    ws.ok("session", "finalize", a, "--as", H)
    out["registry.jsonl"] = ws.registry.read_bytes()
    out["cli_memory_list.txt"] = _cli(ws.tht("memory", "list", "--json"))
    out["cli_memory_show_memory.txt"] = _cli(ws.tht("memory", "show", prepared.memory_id, "--json"))
    out["cli_memory_show_solved.txt"] = _cli(ws.tht("memory", "show", prepared.solved_id, "--json"))
    out["cli_memory_search.txt"] = _cli(
        ws.tht("memory", "search", SECOND_QUESTION, "--json"), round_scores=True
    )
    out["cli_memory_search_explain.txt"] = _cli(
        ws.tht("memory", "search", SECOND_QUESTION, "--explain", "--json"), round_scores=True
    )
    (ws.root / ".tht" / "memory_index" / "memory_index.json").unlink()
    out["cli_memory_search_unavailable.txt"] = _cli(
        ws.tht("memory", "search", SECOND_QUESTION, "--json")
    )
    # F8: declined / resumed
    ws = copy(prepared.at_f8)
    ws.answer(a, prepared.promotion_review, "--choose", "none")
    out["f8_declined.jsonl"] = _window(ws, a, "memory_promotion")
    ws = copy(prepared.at_f8)
    ws.ok("session", "pause", a, "--as", H)
    ws.ok("session", "resume", a, "--as", H)
    ws.answer(a, prepared.promotion_review, "--choose", f"c{prepared.candidate_seq}")
    out["f8_resume.jsonl"] = _window(ws, a, "memory_promotion")
    # F8: none (already in memory; no clarification in the session)
    ws = copy(prepared.promoted)
    ws.skip_datamart(a2)
    out["f8_none_in_memory.jsonl"] = _window(ws, a2, "memory_promotion")
    ws = copy(prepared.at_f2)
    ws.answer(b, prepared.recall_review, "--choose", f"m:{prepared.memory_id}")
    ws.drive_f3_to_f7(b)
    ws.skip_datamart(b)
    out["f8_none_no_clarification.jsonl"] = _window(ws, b, "memory_promotion")
    return out


@pytest.fixture(scope="module")
def rows(prepared: Prepared, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return _rows(prepared, tmp_path_factory.mktemp("memory-golden"))


def test_the_memory_rows_match_their_golden_files(
    rows: dict[str, bytes], update_golden: bool
) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    if update_golden:
        for stale in GOLDEN.iterdir():
            if stale.name not in rows:
                stale.unlink()
        for name, data in rows.items():
            (GOLDEN / name).write_bytes(data)
    for name, data in rows.items():
        path = GOLDEN / name
        assert path.exists(), f"golden/memory/{name} missing: run pytest --update-golden"
        assert data == path.read_bytes(), f"{name}: changed (see golden/memory/{name})"
    assert {p.name for p in GOLDEN.iterdir()} == set(rows)


def test_the_golden_rows_are_the_rows_they_claim(rows: dict[str, bytes]) -> None:
    """What each golden file must show, whatever its bytes (so a regenerated file that lost
    its point fails here)."""

    def types(name: str) -> list[str]:
        return [json.loads(line)["type"] for line in rows[name].splitlines()]

    assert "memory_nothing_recalled" in types("f2_none_empty.jsonl")
    assert b"the workspace memory is empty" in rows["f2_none_empty.jsonl"]
    assert "memory_nothing_recalled" in types("f2_none_near_miss.jsonl")
    assert b"relevance floor" in rows["f2_none_near_miss.jsonl"]
    assert types("f2_applied.jsonl")[-4:] == [
        "review_answered",
        "memory_applied",
        "memory_rejected",
        "stage_completed",
    ]
    assert types("f2_rejected.jsonl").count("memory_rejected") == 2
    assert "memory_applied" not in types("f2_rejected.jsonl")
    assert {"session_paused", "session_resumed"} <= set(types("f2_resume.jsonl"))
    assert {"session_paused", "session_resumed"} <= set(types("f8_resume.jsonl"))
    assert "memory_promoted" in types("f8_promoted.jsonl")
    assert "memory_promotion_declined" in types("f8_declined.jsonl")
    assert "memory_promoted" not in types("f8_declined.jsonl")
    for name in ("f8_none_in_memory.jsonl", "f8_none_no_clarification.jsonl"):
        assert types(name) == ["stage_started", "memory_nothing_to_promote", "stage_completed"]
    assert [json.loads(line)["type"] for line in rows["registry.jsonl"].splitlines()] == [
        "memory_saved",
        "solved_question_saved",
    ]
    assert rows["cli_memory_search_unavailable.txt"].startswith(b"exit 6\n")


def test_the_golden_rows_name_no_machine_path(rows: dict[str, bytes]) -> None:
    for name, data in rows.items():
        assert b"/tmp" not in data and b"pytest-of" not in data, name
