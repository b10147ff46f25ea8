"""Issue 10 "friction": what a reviewer and a script need to see, run through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tht.conftest import Result
from tests.tht.test_cli_golden import SELECT

ULID_LIKE = "01KDVDNA7ZQ8M3XKCW2M4Y9H1B"


def _session_with_decision(tht: Callable[..., Result], tmp_path: Path) -> str:
    proposal = tmp_path / "select.json"
    proposal.write_text(json.dumps(SELECT))
    session = tht("session", "new", "Quante ablazioni nel 2023?", "--json").json()["session"]
    seq = tht("propose", "disambiguation", "--file", str(proposal), session, "--json").json()
    assert (
        tht(
            "review", "answer", str(seq["review"]), session, "--choose", "flag", "--as", "human:ann"
        ).code
        == 0
    )
    return str(session)


def test_status_shows_effective_decisions_with_their_seqs_and_the_full_head(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    session = _session_with_decision(tht, tmp_path)
    done = tht("session", "status", session)
    assert done.code == 0
    head = tht("session", "status", session, "--json").json()["head"]
    assert "effective decisions: 2" in done.stdout
    row = next(line for line in done.stdout.splitlines() if "concept_clarified" in line)
    assert row.split()[:4] == ["8", "concept_clarified", "disambiguation", "ablazione"]
    assert "open reviews: none" in done.stdout
    assert head in done.stdout  # never cut to 16 characters


def test_status_renders_actor_and_retracted_stale_counts_from_the_state(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    from tht.composition import open_app
    from tht.projections import status_json
    from tht.render import render_status

    session = _session_with_decision(tht, tmp_path)
    assert tht("decision", "retract", "8", session, "--reason", "no", "--as", "human:ann").code == 0
    loaded = open_app(workspace).kernel.load(session)
    text = render_status(status_json(loaded.state, loaded.head), loaded.state)
    assert "effective decisions: 1 (1 retracted, 0 stale)" in text
    row = next(line for line in text.splitlines() if "question_admitted" in line)
    assert row.split()[-1] == "module:disambiguation"


def test_tables_never_truncate_ids_seqs_hashes_or_timestamps() -> None:
    from tht.render import render_table

    sha = "ab" * 32
    ts = "2026-01-01T00:00:12.123456Z"
    prose = "a long prompt that must wrap rather than push the identities out " * 3
    text = render_table(
        ["seq", "session", "sha256", "ts", "prompt"], [[12345, ULID_LIKE, sha, ts, prose]]
    )
    for value in ("12345", ULID_LIKE, sha, ts):
        assert value in text, value
    assert "…" not in text


def _workflow_help() -> str:
    """The stage block `tht propose --help` must show, computed from the packaged workflow."""
    from kernel.workflow import load_workflow

    spec = load_workflow()
    lines = ["Stages, in order (display code, id; what each may emit and write; completion):"]
    codes = {"preflight": "pre", "contribution": "ext", "finalize": "fin", "stage": "-"}
    pad = " " * 24
    for s in spec.steps:
        code = s.display or codes[s.kind]
        lines += textwrap.wrap(
            f"emits: {', '.join(s.emits) or '-'}",
            width=96,
            initial_indent=f"  {code:<4}{s.id:<18}",
            subsequent_indent=pad + "       ",
        )
        if s.artifacts:
            lines.append(f"{pad}artifacts: {', '.join(s.artifacts)}")
        lines.append(f"{pad}completion: {s.completion}; skip: {s.skip}")
    lines.append(f"  any stage may also append the receipts: {', '.join(spec.receipts) or '-'}")
    return "\n".join(lines)


def test_propose_help_lists_kinds_and_every_stage_as_in_workflow_yaml(
    tht: Callable[..., Result],
) -> None:
    done = tht("propose", "--help")
    assert done.code == 0
    for kind in ("select", "decide", "confirm", "auto", "revision", "fail"):
        assert f"\n    {kind} " in done.stdout, kind
    shown = "\n".join(line[2:] for line in done.stdout.splitlines())
    assert _workflow_help() in shown, "update propose's docstring:\n" + _workflow_help()


def test_unknown_event_type_suggests_the_close_match(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    bad = json.loads(json.dumps(SELECT))
    bad["options"][0]["events"][0]["type"] = "concept_clarifed"
    proposal = tmp_path / "typo.json"
    proposal.write_text(json.dumps(bad))
    session = tht("session", "new", "Quante ablazioni nel 2023?", "--json").json()["session"]
    done = tht("propose", "disambiguation", "--file", str(proposal), session)
    assert done.code == 2
    assert "unknown event type 'concept_clarifed'; did you mean concept_clarified?" in done.stderr


def test_ledger_verify_all_reports_every_session_and_exits_7_on_damage(
    workspace: Path, tht: Callable[..., Result], tmp_path: Path
) -> None:
    good = _session_with_decision(tht, tmp_path)
    bad = tht("session", "new", "Quante dimissioni nel 2024?", "--json").json()["session"]
    body = tht("ledger", "verify", "--all", "--json")
    assert body.code == 0
    assert body.json()["ok"] is True
    assert [s["session"] for s in body.json()["sessions"]] == [good, bad]
    ledger = workspace / "sessions" / bad / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b"dimissioni", b"dimissionX"))
    done = tht("ledger", "verify", "--all", "--json")
    assert done.code == 7
    rows = {s["session"]: s for s in done.json()["sessions"]}
    assert done.json()["ok"] is False
    assert rows[good]["ok"] and not rows[bad]["ok"] and rows[bad]["problems"]
    assert set(rows[bad]) == {"session", "ok", "events", "problems"}
    assert tht("ledger", "verify", "--all", good).code == 2


def _analytics(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os

    environ = {k: v for k, v in os.environ.items() if not k.startswith("THT_")}
    environ["THT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "tht", "analytics", *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def test_prune_without_yes_only_previews_and_deletes_nothing(tmp_path: Path) -> None:
    from tests.tht.analytics.conftest import HOOK_LOG

    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "route-hook.jsonl").write_bytes(HOOK_LOG.read_bytes())
    assert _analytics(home, "scan", "--json").returncode == 0
    total = json.loads(_analytics(home, "summary", "--json").stdout)["events"]["total"]
    assert total > 0
    for extra in ((), ("--dry-run",), ("--dry-run", "--yes")):
        done = _analytics(home, "prune", "--older-than", "0", *extra, "--json")
        assert done.returncode == 0, done.stderr
        body = json.loads(done.stdout)
        assert body["dry_run"] is True
        assert body["would_delete"]["runtime_events"] == total
        assert body["deleted"]["runtime_events"] == 0
    human = _analytics(home, "prune", "--older-than", "0")
    assert "would delete" in human.stdout and "--yes" in human.stdout
    assert json.loads(_analytics(home, "summary", "--json").stdout)["events"]["total"] == total
    done = _analytics(home, "prune", "--older-than", "0", "--yes", "--json")
    assert json.loads(done.stdout)["deleted"]["runtime_events"] == total
    assert json.loads(_analytics(home, "summary", "--json").stdout)["events"]["total"] == 0


def test_shell_completion_is_offered_and_completes_subcommands() -> None:
    import os

    done = subprocess.run(
        [sys.executable, "-m", "tht", "--help"], capture_output=True, text=True, check=False
    )
    assert "--install-completion" in done.stdout and "--show-completion" in done.stdout
    env = {
        **os.environ,
        "_THT_COMPLETE": "complete_bash",
        "COMP_WORDS": "tht session sh",
        "COMP_CWORD": "2",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tht"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0
    assert done.stdout.split() == ["show"]


@pytest.mark.parametrize("argv", [("doctor", "--help"), ("session", "show", "--help")])
def test_new_commands_have_help(tht: Callable[..., Result], argv: tuple[str, ...]) -> None:
    assert tht(*argv).code == 0
