"""Bad input: one clear line on stderr, the documented exit code, and nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result

QUESTION = "How many ablation procedures were performed in 2023?"
CLARIFY = {"type": "concept_clarified", "subject": "a", "payload": {"meaning": "m"}}


@pytest.fixture
def session(workspace: Path, tht: Callable[..., Result]) -> str:
    return str(tht("session", "new", QUESTION, "--json").json()["session"])


def _ledger(workspace: Path, session: str) -> bytes:
    return (workspace / "sessions" / session / "ledger.jsonl").read_bytes()


def _refused(done: Result, code: int) -> None:
    assert done.code == code, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr


def _file(tmp_path: Path, content: str | dict) -> str:
    path = tmp_path / "proposal.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


@pytest.mark.parametrize(
    ("stage", "proposal", "code", "needle"),
    [
        ("disambiguation", "{not json", 2, "not valid JSON"),
        ("disambiguation", {"kind": "select", "prompt": "p", "colour": "red"}, 2, "colour"),
        ("disambiguation", {"kind": "guess"}, 2, "kind"),
        (
            "disambiguation",
            {
                "kind": "select",
                "prompt": "p",
                "options": [{"id": "a", "label": "A", "events": [{"type": "made_up"}]}],
            },
            2,
            "unknown event type 'made_up'",
        ),
        (
            "disambiguation",
            {
                "kind": "select",
                "prompt": "p",
                "options": [
                    {
                        "id": "a",
                        "label": "A",
                        "events": [{"type": "concept_clarified", "payload": {"meaning": 3}}],
                    }
                ],
            },
            2,
            "does not match its schema",
        ),
        (
            "disambiguation",
            {
                "kind": "select",
                "prompt": "p",
                "options": [
                    {"id": "a", "label": "A", "events": [{"type": "sql_approved", "payload": {}}]}
                ],
            },
            5,
            "may not emit 'sql_approved'",
        ),
        ("disambiguation", {"kind": "auto", "events": [CLARIFY]}, 5, "review_required"),
        ("nowhere", {"kind": "confirm"}, 3, "unknown stage 'nowhere'"),
        ("sql", {"kind": "confirm"}, 5, "the current stage is disambiguation"),
        (
            "disambiguation",
            {"kind": "confirm", "artifacts": [{"name": "sql_final.sql", "content": "x"}]},
            5,
            "may not write artifact",
        ),
        (
            "disambiguation",
            {"kind": "select", "prompt": "p", "options": []},
            2,
            "at least one option",
        ),
        (
            "disambiguation",
            {"kind": "revision", "target": "sql", "reason": "r"},
            5,
            "earlier stage",
        ),
    ],
)
def test_bad_proposals_change_nothing(
    workspace: Path,
    tht: Callable[..., Result],
    session: str,
    tmp_path: Path,
    stage: str,
    proposal: str | dict,
    code: int,
    needle: str,
) -> None:
    before = _ledger(workspace, session)
    done = tht("propose", stage, "--file", _file(tmp_path, proposal), session)
    _refused(done, code)
    assert needle in done.stderr
    assert _ledger(workspace, session) == before
    assert not (workspace / "sessions" / session / "objects").exists()


def test_missing_proposal_file(workspace: Path, tht: Callable[..., Result], session: str) -> None:
    _refused(tht("propose", "disambiguation", "--file", "/nonexistent/p.json", session), 2)


def test_json_error_object_on_stdout(
    workspace: Path, tht: Callable[..., Result], session: str, tmp_path: Path
) -> None:
    done = tht(
        "propose", "nowhere", "--file", _file(tmp_path, {"kind": "confirm"}), session, "--json"
    )
    assert done.code == 3
    assert done.json()["error"]["code"] == "not_found"


@pytest.fixture
def review(workspace: Path, tht: Callable[..., Result], session: str, tmp_path: Path) -> int:
    body = {
        "kind": "select",
        "prompt": "p",
        "options": [{"id": "a", "label": "A", "events": [CLARIFY]}],
    }
    done = tht("propose", "disambiguation", "--file", _file(tmp_path, body), session, "--json")
    return int(done.json()["review"])


H = ("--as", "human:ann")


@pytest.mark.parametrize(
    ("args", "env", "code", "needle"),
    [
        (("--choose", "a", *H), {"THT_ACTOR": "agent"}, 5, "human-only"),
        (("--choose", "a", "--as", "agent"), {}, 5, "agent may not"),
        (("--choose", "a", "--as", "bob"), {}, 2, "expected human:<id>"),
        (("--choose", "a"), {}, 2, "--as human:<id>"),
        (("--choose", "zz", *H), {}, 2, "unknown option(s) zz"),
        (("--approve", *H), {}, 2, "--choose"),
        (("--choose", "a", "--approve", *H), {}, 2, "exactly one"),
    ],
)
def test_bad_answers_change_nothing(
    workspace: Path,
    tht: Callable[..., Result],
    session: str,
    review: int,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    code: int,
    needle: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    before = _ledger(workspace, session)
    done = tht("review", "answer", str(review), session, *args)
    _refused(done, code)
    assert needle in done.stderr
    assert _ledger(workspace, session) == before


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (("review", "answer", "99"), 3, "seq 99 does not exist"),
        (("review", "answer", "2"), 5, "not an open review"),
        (("decision", "retract", "99", "--reason", "r"), 3, "seq 99 does not exist"),
        (("decision", "retract", "2", "--reason", "r"), 5, "not a decision"),
        (("decision", "retract", "3", "--reason", "r"), 5, "admission"),
        (("decision", "retract", "3"), 2, "reason"),
        (("stage", "skip", "rewriting", "--reason", "r"), 5, "cannot be skipped"),
        (("stage", "skip", "cte", "--reason", "r"), 5, "only the current stage"),
        (("stage", "skip", "nowhere", "--reason", "r"), 3, "unknown stage"),
        (("stage", "reopen", "sql", "--reason", "r"), 5, "not been reached"),
        (("stage", "reopen", "admission", "--reason", "r"), 5, "cannot be reopened"),
        (("session", "resume"), 5, "only a paused one resumes"),
        (("session", "derive"), 5, "only a finalized one"),
    ],
)
def test_bad_decisions_change_nothing(
    workspace: Path,
    tht: Callable[..., Result],
    session: str,
    argv: tuple[str, ...],
    code: int,
    needle: str,
) -> None:
    before = _ledger(workspace, session)
    done = (
        tht(*argv[:3], session, *argv[3:], *H) if argv[0] != "session" else tht(*argv, session, *H)
    )
    _refused(done, code)
    assert needle in done.stderr
    assert _ledger(workspace, session) == before


def test_unknown_artifact_is_not_found(
    workspace: Path, tht: Callable[..., Result], session: str
) -> None:
    done = tht("artifact", "show", "question.md", session)
    _refused(done, 3)
    assert "no artifact 'question.md'" in done.stderr


def test_unknown_session_and_not_a_workspace(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    _refused(tht("session", "status", "01NOSUCHSESSION"), 3)
    _refused(tht("session", "status", "x", "--workspace", str(tmp_path / "empty")), 3)
    _refused(tht("session", "status"), 2)


def test_broken_workspace_yaml_names_file_and_field(
    workspace: Path, tht: Callable[..., Result]
) -> None:
    (workspace / "workspace.yaml").write_text("version: 1\nevidence:\n  max_chunk_chars: lots\n")
    done = tht("session", "new", QUESTION)
    _refused(done, 2)
    assert "workspace.yaml" in done.stderr
    assert "evidence.max_chunk_chars" in done.stderr


def test_finalized_session_accepts_nothing(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    from kernel.clock import FixedClock, SeededIds
    from kernel.store.fs import FileSystemStore
    from kernel.workflow_kernel import WorkflowKernel
    from kernel.workspace import open_workspace
    from tests.golden import scenarios

    ws = open_workspace(workspace)
    kernel = WorkflowKernel(
        FileSystemStore(ws.sessions_dir, ws.cache_dir), clock=FixedClock(), ids=SeededIds(3)
    )
    run = scenarios.Run(kernel, ws)
    scenarios.happy_path(run)
    before = _ledger(workspace, run.session)
    attempts = [
        ("session", "pause", run.session, "--as", "human:ann"),
        ("session", "finalize", run.session, "--as", "human:ann"),
        ("stage", "reopen", "sql", run.session, "--reason", "r", "--as", "human:ann"),
        ("decision", "retract", "8", run.session, "--reason", "r", "--as", "human:ann"),
        ("propose", "datamart", "--file", _file(tmp_path, {"kind": "confirm"}), run.session),
    ]
    for argv in attempts:
        done = tht(*argv)
        _refused(done, 5)
        assert "finalized" in done.stderr
    assert _ledger(workspace, run.session) == before
    report = tht("artifact", "show", "report.md", run.session).stdout
    assert report.startswith(f"# Session {run.session}")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("search", "find", ""), "QUERY is empty"),
        (("search", "find", "  \t"), "QUERY is empty"),
        (("gate", "check", ""), "QUESTION is empty"),
        (("intent", "parse", " "), "QUESTION is empty"),
        (("schema", "link", ""), "QUESTION is empty"),
        (("memory", "search", ""), "QUERY is empty"),
    ],
)
def test_an_empty_question_or_query_is_a_usage_error_everywhere(
    workspace: Path, tht: Callable[..., Result], args: tuple[str, ...], needle: str
) -> None:
    """An empty text is never searched, parsed or gated as if it were one (a search of "" used
    to rank every evidence unit; the gate allowed it)."""
    done = tht(*args)
    _refused(done, 2)
    assert needle in done.stderr


@pytest.mark.parametrize(
    "args",
    [("memory", "show", ""), ("memory", "forget", " ", "--reason", "x", "--as", "human:ann")],
)
def test_an_empty_memory_id_is_a_usage_error(
    workspace: Path, tht: Callable[..., Result], args: tuple[str, ...]
) -> None:
    done = tht(*args)
    _refused(done, 2)
    assert "ID is empty" in done.stderr


def test_a_reviewer_argument_that_is_no_human_id_names_the_argument(
    workspace: Path, tht: Callable[..., Result]
) -> None:
    for args in (("reviewer", "add", "ann"), ("serve", "token", "add", "ann")):
        done = tht(*args)
        _refused(done, 2)
        assert "REVIEWER 'ann': expected human:<id>" in done.stderr and "--as" not in done.stderr


def test_schemas_export_to_a_folder_it_cannot_write_is_one_line_exit_2(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = tht(
        "schemas", "export", "--out", str(blocker / "schemas"), "--doc", str(tmp_path / "d.md")
    )
    _refused(done, 2)
    assert "cannot write" in done.stderr and "internal error" not in done.stderr
    assert not (tmp_path / "d.md").exists()
