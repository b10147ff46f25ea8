"""``make demo``: one session from question to finalization, on embedded defaults.

A fresh workspace in a temporary folder (removed at the end), or in ``$THT_DEMO_DIR`` (kept),
bound to a small hospital-admissions SQLite database the project generates deterministically
(:mod:`tht.demo_database`); the catalog is synced from it. A scripted agent (the proposal files
in ``golden/demo/``) and a scripted reviewer drive the real ``tht`` command line through
admission, F1–F8 — schema linking over the catalog, SQL checked against it (a typo is refused),
a retraction, a revision request that reopens F5, F7 verified by tht itself on the database —,
the memory promotion contribution and finalization, printing the stage timeline as it goes and
ending with ``tht ledger verify``. No server, no network, no model.

The output is the same from run to run (``THT_CLOCK`` and ``THT_SEED`` fix times and ids; the
workspace folder is shown as ``$THT_WORKSPACE``), except the reviewer key's id and public key,
random by design, and the hashes that chain over its signatures.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tht.demo_database import DEMO_QUESTION as QUESTION

#: where the demo database lives, relative to the workspace (the binding's url)
DATABASE = "data/ospedali.db"
REVIEWER = "human:reviewer"
#: the later question of the second session, which Memory recalls the first one for
SECOND_QUESTION = "Quante ablazioni per ospedale nel 2025?"
#: the demo reviewer's passphrase, typed at the pty like a person would (a demo-only key)
PASSPHRASE = "demo reviewer passphrase"


def _proposals_dir() -> Path:
    here = Path(__file__).resolve().parents[1] / "golden" / "demo"
    if not here.is_dir():
        raise SystemExit(f"demo proposals not found in {here}")
    return here


class Demo:
    def __init__(self, workspace: Path, proposals: Path) -> None:
        self.workspace = workspace
        self.proposals = proposals
        self.env = dict(
            os.environ,
            THT_WORKSPACE=str(workspace),
            THT_CLOCK="fixed:2026-11-30T09:00:00Z",
            THT_SEED="2026",
            THT_HOME=str(workspace / ".tht" / "user-data"),
            NO_COLOR="1",
        )
        self.env.pop("THT_ACTOR", None)
        self.env.pop("THT_SESSION", None)

    def show(self, text: str) -> str:
        """``text`` with the workspace folder shown as ``$THT_WORKSPACE``: the same every run."""
        return text.replace(str(self.workspace), "$THT_WORKSPACE")

    def tht(self, *args: str, show: bool = True, json_out: bool = False, expect: int = 0) -> Any:
        argv = [sys.executable, "-m", "tht", *args]
        if json_out:
            argv.append("--json")
        if show:
            print(self.show(f"\n$ tht {shlex.join(args)}"), flush=True)
        if "--as" in args or args[:2] == ("reviewer", "add"):
            done = self._as_reviewer(argv, args)
        else:
            done = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=False)
        if done.returncode != expect:
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"demo step failed (exit {done.returncode}): tht {shlex.join(args)}")
        if show and not json_out:
            print(self.show(done.stdout.rstrip("\n")), flush=True)
        if expect and done.stderr.strip():  # a refusal shown on purpose: stdout, in order
            print(self.show(done.stderr.rstrip("\n")), flush=True)
        elif done.stderr.strip() and show:
            print(self.show(done.stderr.rstrip("\n")), file=sys.stderr, flush=True)
        if expect:
            print(f"(exit {done.returncode}, as expected: nothing was recorded)", flush=True)
            return None
        return json.loads(done.stdout) if json_out else done.stdout

    def _as_reviewer(self, argv: list[str], args: tuple[str, ...]) -> Any:
        """The scripted reviewer types their passphrase at a terminal (a pty), exactly as a
        person would: signed mode reads it from /dev/tty only, never from stdin or env."""
        from tht.ptyrun import run_in_terminal

        typed = [PASSPHRASE, PASSPHRASE] if args[:2] == ("reviewer", "add") else [PASSPHRASE]
        run = run_in_terminal(argv, env=self.env, typed=typed, timeout=120)
        return subprocess.CompletedProcess(argv, run.returncode, run.stdout, run.stderr)

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.tht("session", "status", show=False, json_out=True)
        return result

    def timeline(self) -> None:
        self.tht("session", "status")

    def seq_of(self, kind: str, subject: str) -> int:
        for decision in self.status()["effective_decisions"]:
            if decision["type"] == kind and decision["subject"] == subject:
                return int(decision["seq"])
        raise SystemExit(f"no effective {kind} for {subject!r}")

    def propose(self, stage: str, name: str, *, expect: int = 0) -> int | None:
        path = self.proposals / name
        text = path.read_text(encoding="utf-8")
        placeholders = set(re.findall(r'"\$\{(\w+):([^}]+)\}"', text))
        if placeholders:
            for kind, subject in placeholders:
                text = text.replace(f'"${{{kind}:{subject}}}"', str(self.seq_of(kind, subject)))
            path = self.workspace / ".tht" / f"rendered-{name}"
            path.write_text(text, encoding="utf-8")
        print(f"\n$ tht propose {stage} --file golden/demo/{name}", flush=True)
        if expect:
            self.tht("propose", stage, "--file", str(path), show=False, expect=expect)
            return None
        result = self.tht("propose", stage, "--file", str(path), show=False, json_out=True)
        review = result.get("review")
        print(f"{stage}: {result['state']}" + (f" (review {review})" if review else ""), flush=True)
        return int(review) if review is not None else None

    def open_review(self, stage: str) -> int:
        for review in self.tht("review", "list", show=False, json_out=True):
            if review["stage"] == stage:
                return int(review["seq"])
        raise SystemExit(f"no open review of {stage}")

    def second_session(self) -> None:
        """A later question on the same workspace: F2 recalls the first session's promoted
        clarification and its solved question; the reviewer applies the clarification."""
        first = self.env["THT_SESSION"]
        created = self.tht("session", "new", SECOND_QUESTION, show=False, json_out=True)
        self.env["THT_SESSION"] = created["session"]
        print(
            f"\n# a second session on the same workspace\n$ tht session new "
            f"{shlex.quote(SECOND_QUESTION)}\nsession {created['session']} admitted",
            flush=True,
        )
        self.tht("memory", "search", SECOND_QUESTION)
        print("\n# F1: only the year needs a decision; closing F1 runs F2, which recalls memory")
        self.answer(self.propose("disambiguation", "20-f1-year.json"), "--choose", "year")
        self.answer(self.propose("disambiguation", "03-f1-confirm.json"), "--approve")
        recall = self.open_review("memory_recall")
        self.tht("review", "show", str(recall))
        memory = next(
            o["id"]
            for o in self.tht("review", "show", str(recall), show=False, json_out=True)["options"]
            if o["id"].startswith("m:")
        )
        self.answer(recall, "--choose", memory)
        self.timeline()
        self.env["THT_SESSION"] = first

    def answer(self, seq: int | None, *how: str) -> None:
        assert seq is not None
        self.tht("review", "answer", str(seq), *how, "--as", REVIEWER)

    def run(self) -> None:
        print("tht demo: one analytics session, question to finalization (no server, no model)")
        self.tht("workspace", "init", str(self.workspace), "--name", "demo-hospital")

        print("\n# The workspace database: hospital admissions (SQLite, read only to tht)")
        from tht.demo_database import make_demo_database

        make_demo_database(self.workspace / DATABASE)
        with (self.workspace / "workspace.yaml").open("a", encoding="utf-8") as settings:
            settings.write(f'\ndatabase: {{url: "sqlite:///{DATABASE}"}}\n')
        print(f'(generated {DATABASE}; workspace.yaml: database: {{url: "sqlite:///{DATABASE}"}})')
        self.tht("catalog", "sync")
        self.tht("catalog", "relationships")

        print("\n# Signed human decisions: the reviewer's key, unlocked at a terminal only")
        self.tht("reviewer", "add", REVIEWER)

        print("\n# Evidence: the team's curated knowledge, prepared, evaluated and published")
        sources = self.proposals / "evidence"
        (self.workspace / "evidence" / "sources" / "procedure.md").write_bytes(
            (sources / "procedure.md").read_bytes()
        )
        (self.workspace / "evidence" / "eval.yaml").write_bytes(
            (sources / "eval.yaml").read_bytes()
        )
        print("(golden/demo/evidence/procedure.md and eval.yaml copied into the workspace)")
        self.tht("evidence", "prepare")
        self.tht("evidence", "publish", "--as", REVIEWER)
        created = self.tht("session", "new", QUESTION, show=False, json_out=True)
        session = created["session"]
        print(
            f"\n$ tht session new {shlex.quote(QUESTION)}\nsession {session} admitted", flush=True
        )
        self.env["THT_SESSION"] = session
        self.timeline()

        print(
            "\n# F1 disambiguation: the agent reads the evidence pack and proposes; a human decides"
        )
        self.tht("search", "pack", "--stage", "disambiguation")
        self.answer(self.propose("disambiguation", "01-f1-ablazione.json"), "--choose", "flag")
        self.answer(
            self.propose("disambiguation", "02-f1-period.json"), "--choose", "year,hospital"
        )
        print("\n# closing F1 runs F2: Memory recalls nothing yet (the workspace memory is empty)")
        self.answer(self.propose("disambiguation", "03-f1-confirm.json"), "--approve")

        print("\n# F3 rewriting: question.md is rendered by tht from the decisions, then approved")
        self.answer(self.propose("rewriting", "04-f3-rewrite.json"), "--choose", "accept")
        self.answer(self.propose("rewriting", "05-f3-confirm.json"), "--approve")
        self.tht("artifact", "show", "question.md")

        print("\n# F4 schema linking over the catalog and the evidence; one decision is retracted")
        self.tht("schema", "link", QUESTION, "--limit", "5")
        self.tht("search", "pack", "--stage", "schema_linking")
        self.answer(
            self.propose("schema_linking", "06-f4-linking.json"),
            "--choose",
            "tables,ev-ablazione,ev-anno,ev-overview",
        )
        retracted = self.seq_of("evidence_accepted", "evidence:ricoveri-e-procedure")
        self.tht(
            "decision",
            "retract",
            str(retracted),
            "--reason",
            "a general overview, not evidence for this question",
            "--as",
            REVIEWER,
        )
        self.answer(self.propose("schema_linking", "07-f4-confirm.json"), "--approve")
        self.timeline()

        print("\n# F5 CTE and F6 SQL, checked against the session's catalog snapshot")
        self.answer(self.propose("cte", "08-f5-cte.json"), "--choose", "approve")
        self.answer(self.propose("cte", "09-f5-confirm.json"), "--approve")
        print("\n# a proposal whose SQL names what the database does not have is refused whole")
        self.propose("sql", "10b-f6-sql-typo.json", expect=2)
        self.answer(self.propose("sql", "10-f6-sql.json"), "--choose", "approve")
        before_reopen = self.status()["last_seq"]

        print("\n# F6 finds a problem in F5: a revision request; the reviewer approves the reopen")
        revision = self.propose("sql", "11-f6-revision.json")
        self.tht("review", "show", str(revision))
        self.answer(revision, "--approve", "--rationale", "cancelled procedures must not count")
        self.timeline()

        print("\n# F5 and F6 again")
        self.answer(self.propose("cte", "12-f5-cte-fixed.json"), "--choose", "approve")
        self.answer(self.propose("cte", "09-f5-confirm.json"), "--approve")
        self.answer(self.propose("sql", "13-f6-sql-fixed.json"), "--choose", "approve")
        print("\n# approving F6 runs F7: tht itself runs the SQL read-only and records the result")
        self.answer(self.propose("sql", "17-f6-confirm.json"), "--approve")
        self.tht("artifact", "show", "result_sample.json")

        print("\n# F8 datamart is skipped")
        self.tht(
            "stage",
            "skip",
            "datamart",
            "--reason",
            "a one-off question: no datamart",
            "--as",
            REVIEWER,
        )

        print("\n# before_finalize: tht computes the memory promotion candidates from the ledger")
        self.tht("memory", "promote", "--preview")
        promotion = self.open_review("memory_promotion")
        self.tht("review", "show", str(promotion))
        clarified = self.seq_of("concept_clarified", "ablazione")
        print("\n# the reviewer promotes the clarification: the registry is written first")
        self.answer(promotion, "--choose", f"c{clarified}")

        print("\n# finalize: report.md, then the session is immutable; its solved question")
        print("# joins the workspace memory (the outbox)")
        self.tht("session", "finalize", "--as", REVIEWER)
        self.timeline()
        self.tht("artifact", "show", "report.md")
        self.tht("memory", "list")

        print(f"\n# time travel: the session as it was before the reopen (seq {before_reopen})")
        self.tht("session", "status", "--at", str(before_reopen))

        print("\n# the ledger's hash chain")
        self.tht("ledger", "verify")
        self.second_session()

        print("\n# analytics: stage durations and review waits, imported from the ledgers")
        self.tht("analytics", "scan", "--sessions", str(self.workspace))
        self.tht("analytics", "sessions")

        print("\n# routing: the coding agent's host asks which skill fits a prompt (always exit 0)")
        catalog = self.proposals.parent / "routing" / "compiled" / "tesisquare.pack"
        prompt = "analizza il ticket mantis 1234 e controlla la query sul database"
        payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt})
        shown = catalog.relative_to(catalog.parents[3])
        print(f"\n$ echo '{payload}' | tht-route-hook --catalog {shown}")
        hook = subprocess.run(
            [sys.executable, "-m", "tht.hooks.route_hook", "--catalog", str(catalog)],
            input=payload,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        print(hook.stdout.strip() or "(no hint)", flush=True)


def main() -> None:
    """``$THT_DEMO_DIR`` (an empty or missing folder): the workspace is built there and kept;
    otherwise in a temporary folder removed at the end (and never named as if it remained)."""
    keep = os.environ.get("THT_DEMO_DIR")
    if keep:
        workspace = Path(keep).expanduser().absolute()
        if workspace.exists() and (not workspace.is_dir() or any(workspace.iterdir())):
            raise SystemExit(f"THT_DEMO_DIR={keep} is not an empty folder")
        Demo(workspace, _proposals_dir()).run()
        print(
            "\n# the reviewer web UI on this workspace (docs/web.md):\n"
            f"#   tht serve token add human:you --workspace {keep}\n"
            f"#   tht serve --workspace {keep}     # http://127.0.0.1:8765/"
        )
        print(f"\ndemo done: the workspace is kept in THT_DEMO_DIR={keep}")
        return
    with tempfile.TemporaryDirectory(prefix="tht-demo-") as tmp:
        Demo(Path(tmp) / "workspace", _proposals_dir()).run()
    print("\ndemo done: the temporary workspace was removed (set THT_DEMO_DIR=DIR to keep it)")


if __name__ == "__main__":
    main()
