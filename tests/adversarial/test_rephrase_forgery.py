"""An attacker in the same shell forges the attempts policy's lines (spec 003 §17): a
``question_rephrased`` after an admitted question, one beyond the session's limit, a kernel
``session_abandoned`` that closes a session with attempts left — hash chain and anchor
recomputed, so only the replay can tell. The real CLI (a subprocess) must report it
(``tht ledger verify`` exit 7 naming seq and rule) and refuse the next rephrase (exit 7,
files byte-identical)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernel import events as ev
from tests.adversarial.test_ledger_forgery import (
    append_forged,
    codes,
    draft,
    snapshot,
    tht,
    verify_json,
)
from tests.golden import scenarios as sc

MODULE = "module:disambiguation"


def _build(root: Path, admitted: bool) -> str:
    run = sc.make_kernel(root)
    if admitted:
        sc.start(run)
    else:
        sc._refused_start(run)
    return run.session


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    top = tmp_path_factory.mktemp("rephrase-bases")
    out = {}
    for name in ("admitted", "refused"):
        ws = top / name / "ws"
        out[name] = (ws, _build(ws, name == "admitted"))
    return out


def _copy(bases: dict[str, tuple[Path, str]], name: str, tmp_path: Path) -> tuple[Path, str]:
    ws, session = bases[name]
    shutil.copytree(ws, tmp_path / name / "ws")
    return tmp_path / name / "ws", session


def _rephrased(attempt: int, actor: str = "agent") -> ev.EventDraft:
    return draft(
        "question_rephrased",
        actor,
        "admission",
        {"question": "How many ablations in 2023?", "attempt": attempt},
    )


def _verdict(epoch: int, *, admitted: bool) -> list[ev.EventDraft]:
    inv = {"invocation": f"admission#{epoch}"}
    started = draft("stage_started", "kernel", "admission", {}, attempt=1, **inv)
    if admitted:
        return [
            started,
            draft("question_admitted", MODULE, "admission", {"checks": ["usable"]}, **inv),
            draft("stage_completed", "kernel", "admission", {"via": "auto"}, **inv),
        ]
    return [
        started,
        draft("question_refused", MODULE, "admission", {"code": "too_short", "reason": "n"}, **inv),
        draft(
            "stage_failed",
            MODULE,
            "admission",
            {"code": "refused:too_short", "message": "n"},
            **inv,
        ),
    ]


def _closing(reason: str = "refused 3 times") -> ev.EventDraft:
    return draft("session_abandoned", "kernel", None, {"reason": reason})


def _assert_caught(ws: Path, session: str, expected: tuple[str, int]) -> None:
    code, body = verify_json(ws, session)
    assert code == 7, body
    assert body["ok"] is False
    assert expected in [(rule, seq) for rule, seq in codes(body)], codes(body)
    folder = ws / "sessions" / session
    before = snapshot(folder)
    done = tht(ws, "session", "rephrase", "How many ablations?", session, "--json")
    assert done.returncode == 7, (done.returncode, done.stdout, done.stderr)
    assert snapshot(folder) == before


def test_the_untouched_bases_verify_and_a_legal_rephrase_is_accepted(
    bases: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    ws, session = _copy(bases, "refused", tmp_path)
    assert verify_json(ws, session)[0] == 0
    done = tht(ws, "session", "rephrase", "How many ablations in 2023?", session, "--json")
    assert done.returncode == 0, done.stderr
    assert verify_json(ws, session)[0] == 0


def test_a_forged_rephrase_after_an_admitted_question_is_caught(
    bases: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    ws, session = _copy(bases, "admitted", tmp_path)
    seqs = append_forged(
        ws / "sessions" / session, session, [_rephrased(2), *_verdict(2, admitted=True)]
    )
    _assert_caught(ws, session, ("rephrase", seqs[0]))


def test_a_forged_rephrase_beyond_the_limit_is_caught(
    bases: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    """Questions 2 and 3 refused, the closing abandon left out, then a question 4 the session
    never allows: the missing closing and the extra question are both caught."""
    ws, session = _copy(bases, "refused", tmp_path)
    folder = ws / "sessions" / session
    append_forged(folder, session, [_rephrased(2), *_verdict(2, admitted=False)])
    third = append_forged(folder, session, [_rephrased(3), *_verdict(3, admitted=False)])
    fourth = append_forged(folder, session, [_rephrased(4), *_verdict(4, admitted=True)])
    code, body = verify_json(ws, session)
    assert code == 7
    assert ("attempts", third[-1]) in codes(body), codes(body)  # question 3 of 3 must close
    _assert_caught(ws, session, ("attempts", fourth[0]))  # question 4 of 3


def test_a_forged_kernel_abandon_is_caught(
    bases: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    ws, session = _copy(bases, "admitted", tmp_path)
    seqs = append_forged(ws / "sessions" / session, session, [_closing()])
    code, body = verify_json(ws, session)
    assert code == 7 and ("attempts", seqs[0]) in codes(body), codes(body)


def test_a_forged_early_closing_is_caught(
    bases: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    """A refused question 2 (of 3) with the kernel's closing tacked on: the session had an
    attempt left, so no legal command closes it."""
    ws, session = _copy(bases, "refused", tmp_path)
    seqs = append_forged(
        ws / "sessions" / session,
        session,
        [_rephrased(2), *_verdict(2, admitted=False), _closing()],
    )
    _assert_caught(ws, session, ("attempts", seqs[-1]))
