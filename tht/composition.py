"""The composition root: the one place that builds the kernel and hands each module its own
capability object (static composition; no discovery, no registry, no runtime binding).

Kept light at import time: ``tht session status`` goes through here, so pydantic (workspace
settings) is only touched by operations that need the settings.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kernel.clock import Clock, IdFactory, SeededIds, SystemClock, SystemIds
from kernel.errors import UsageError
from kernel.outbox import OutboxItem, OutboxRun
from kernel.transitions import check_question
from kernel.trust import ReviewerSigner, Trust
from kernel.workflow import default_workflow_path
from kernel.workflow_kernel import Applied, WorkflowKernel
from kernel.workspace import Workspace, open_workspace
from kernel.workspace_settings import WorkspaceSettingsView
from tht.store_runtime import open_store, outbox_of

if TYPE_CHECKING:
    from kernel.outcomes import ModuleOutcome
    from modules.disambiguation import GateVerdict

__all__ = ["App", "clock_from_env", "open_app", "resolve_session", "trust_of"]

_COMMAND_TASK_PREFIX = "command:"


def clock_from_env(state_dir: Path) -> Clock:
    """``THT_CLOCK=fixed:<RFC 3339>`` makes time deterministic (demos, goldens, tests)."""
    spec = os.environ.get("THT_CLOCK", "")
    if not spec:
        return SystemClock()
    if not spec.startswith("fixed:"):
        raise UsageError(f"THT_CLOCK={spec!r}: expected fixed:<RFC 3339 instant>")
    try:
        start = datetime.fromisoformat(spec[len("fixed:") :].replace("Z", "+00:00"))
    except ValueError as err:
        raise UsageError(f"THT_CLOCK={spec!r}: expected fixed:<RFC 3339 instant>") from err
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return _SteppingClock(state_dir / "fake-clock", start.astimezone(UTC))


class _SteppingClock:
    """A deterministic clock shared by successive processes on one workspace: every reading is
    one second after the previous one (kept in a small file), starting at the given instant."""

    def __init__(self, path: Path, start: datetime) -> None:
        self._path = path
        self._start = start

    def now(self) -> datetime:
        from datetime import timedelta

        try:
            last = datetime.fromisoformat(self._path.read_text().strip())
            current = max(self._start, last + timedelta(seconds=1))
        except (OSError, ValueError):
            current = self._start
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._path.write_text(current.isoformat())
        return current


def _ids_from_env() -> IdFactory:
    seed = os.environ.get("THT_SEED")
    if seed is None:
        return SystemIds()
    try:
        return SeededIds(int(seed))
    except ValueError as err:
        raise UsageError(f"THT_SEED={seed!r}: expected an integer") from err


@dataclass
class App:
    workspace: Workspace
    kernel: WorkflowKernel
    clock: Clock
    _settings: WorkspaceSettingsView | None = field(default=None, repr=False)

    @property
    def settings(self) -> WorkspaceSettingsView:
        if self._settings is None:
            self._settings = self.workspace.settings()
        return self._settings

    # ------------------------------------------------------------------ sessions

    def new_session(
        self, question: str, *, actor: str, derived_from: str | None = None, reason: str = ""
    ) -> Applied:
        """Create a session and run Question Admission (Disambiguation) on it.

        Everything creation and admission need is checked first — the question, the workspace
        settings admission reads, then (in the kernel) the workflow and its approval — so a
        command that fails leaves nothing behind: no session folder, ledger or cache file.

        The SecurityGate reads the RAW question before anything else: a refused question's
        session is still created (the refusal is recorded), but with the masked question, so
        the refused text never reaches the ledger or anything that reads the session."""
        from modules.disambiguation import SecurityGate, session_question

        gate = None
        if derived_from is None:
            question = check_question(question)
        _ = self.settings  # workspace.yaml fully validated (exit 2) before anything is written
        attempts = self.settings.admission.attempts  # recorded in the session (spec 003 §17)
        if derived_from is None:
            gate = SecurityGate(self.settings.domain_profile()).check(question)
            created = self.kernel.create_session(
                session_question(question, gate), actor=actor, admission_attempts=attempts
            )
        else:
            created = self.kernel.derive(
                derived_from, actor=actor, reason=reason, admission_attempts=attempts
            )
        return self.admit(created.session, created.state.question, gate=gate)

    def rephrase(self, session: str, question: str, *, actor: str) -> Applied:
        """A refused question asked again in the same session (spec 003 §17): the SecurityGate
        reads the RAW text first, as for a new session, and the session keeps only its masked
        form; ``question_rephrased`` and admission's verdict on it are one batch (with the
        closing ``session_abandoned`` when it was the last allowed question)."""
        from modules.disambiguation import SecurityGate, session_question

        question = check_question(question)  # empty or too long: exit 2, nothing written
        gate = SecurityGate(self.settings.domain_profile()).check(question)
        masked = session_question(question, gate)
        outcome = self.admission_outcome(masked, gate=gate)
        return self.kernel.rephrase(session, masked, outcome, actor=actor)

    def admit(self, session: str, question: str, *, gate: GateVerdict | None = None) -> Applied:
        """Question Admission on the session's ``question``; ``gate``: the SecurityGate's
        verdict on the raw question (without it, the gate runs on ``question`` first)."""
        outcome = self.admission_outcome(question, gate=gate)
        return self.kernel.apply_outcome(
            session, "admission", outcome, actor="module:disambiguation"
        )

    def admission_outcome(self, question: str, *, gate: GateVerdict | None = None) -> ModuleOutcome:
        """Question Admission's verdict on ``question`` (the Disambiguation module's outcome),
        not yet applied."""
        from kernel.capabilities import DisambiguationCapabilities, WorkspaceScope
        from modules.disambiguation import admit

        settings = self.settings
        scope = WorkspaceScope(
            description=settings.scope.description,
            refuse=tuple(settings.scope.refuse),
            languages=tuple(settings.languages),
        )
        from tht.admission_runtime import scope_terms, value_check, word_bridge

        terms = scope_terms(self)
        caps = DisambiguationCapabilities(
            clock=self.clock,
            scope=scope,
            profile=settings.domain_profile(),
            scope_terms=terms,
            value_check=value_check(self) if terms else None,
            word_bridge=word_bridge(self, terms) if terms else None,
        )
        return admit(question, caps, gate)

    def propose(self, session: str, stage: str, data: bytes, source: str) -> Applied:
        """The stage owner's policy (tht/ownership.py) turns a proposal into an outcome, on the
        session loaded once (spec 003 §4.1)."""
        from kernel.reviewer_tools import parse_proposal
        from tht.disambiguation_runtime import prepare_f1
        from tht.ownership import policy_for
        from tht.rewriting_runtime import prepare_rewriting
        from tht.sql_runtime import prepare_proposal

        proposal = parse_proposal(data, source)
        self.gate_proposal(proposal)  # before anything reads it: a refused entity stops here
        loaded = self.kernel.load(session)
        step = loaded.workflow.step(stage)  # unknown stage → exit 3 before anything else
        # F5/F6 SQL artifacts checked (rejected whole, exit 2); F4 gains the catalog snapshot
        proposal = prepare_proposal(self, session, stage, proposal, loaded)
        # F3: question.md is rendered by tht from the verified decisions, never the agent's
        proposal = prepare_rewriting(stage, proposal, loaded)
        # F1: the agent's options are checked against the catalog like the module's own
        proposal = prepare_f1(self, stage, proposal, loaded)
        outcome = policy_for(step)(proposal, step, loaded.state)
        return self.kernel.apply_outcome(session, stage, outcome, actor="agent", loaded=loaded)

    def gate_proposal(self, proposal: object) -> None:
        """The SecurityGate on every text an agent's proposal carries (prompts, labels, event
        payloads, artifact contents): one that names a refused entity or a restricted subject
        is refused whole (exit 5, nothing written), and the message never repeats the text."""
        import msgspec

        from kernel.errors import PolicyError
        from modules.disambiguation import SecurityGate

        gate = SecurityGate(self.settings.domain_profile())

        def texts(value: object) -> list[str]:
            if isinstance(value, str):
                return [value]
            if isinstance(value, dict):
                return [t for v in value.values() for t in texts(v)]
            if isinstance(value, list | tuple):
                return [t for v in value for t in texts(v)]
            return []

        for text in texts(msgspec.to_builtins(proposal)):
            verdict = gate.check(text)
            if verdict.refused:
                raise PolicyError(
                    f"the proposal is refused by the SecurityGate: it names {verdict.code} text "
                    f"({verdict.reason}); nothing was recorded"
                )

    # ------------------------------------------------------------------ after finalize

    def after_finalize_tasks(self) -> tuple[str, ...]:
        """Memory's solved question (always), then the workspace's after-finalize hooks."""
        from tht.memory_runtime import SOLVED_TASK

        settings = self.settings
        hooks = settings.after_finalize
        return (SOLVED_TASK, *(f"{_COMMAND_TASK_PREFIX}{hook.name}" for hook in hooks))

    def outbox_handlers(self) -> Mapping[str, Callable[[OutboxItem], None]]:
        from tht.memory_runtime import SOLVED_TASK, solved_question_task

        settings = self.settings
        handlers: dict[str, Callable[[OutboxItem], None]] = {
            SOLVED_TASK: solved_question_task(self)
        }
        for hook in settings.after_finalize:
            handlers[f"{_COMMAND_TASK_PREFIX}{hook.name}"] = self._command_handler(
                tuple(hook.command), float(hook.timeout_s)
            )
        return handlers

    def _command_handler(
        self, command: tuple[str, ...], timeout: float
    ) -> Callable[[OutboxItem], None]:
        def run(item: OutboxItem) -> None:
            import json

            loaded = self.kernel.load(item.session)
            summary = {
                "session": item.session,
                "task": item.task,
                "question": loaded.state.question,
                "last_seq": loaded.state.last_seq,
                "head": loaded.head,
                "report": f"sessions/{item.session}/artifacts/report.md",
            }
            env = dict(os.environ, THT_SESSION=item.session, THT_WORKSPACE=str(self.workspace.root))
            done = subprocess.run(
                list(command),
                input=json.dumps(summary).encode(),
                cwd=self.workspace.root,
                env=env,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(f"{command[0]} exited {done.returncode}")

        return run

    def finalize(self, session: str, *, actor: str) -> Applied:
        """Finalize; the session's after-finalize hooks are enqueued in the outbox (the command
        runs them at once: :meth:`run_after_finalize`)."""
        self.kernel.after_finalize = self.after_finalize_tasks()
        return self.kernel.finalize(session, actor=actor)

    def run_after_finalize(self, session: str) -> list[dict[str, object]]:
        """Run the session's pending outbox items now (best effort: the finalization stands
        whatever they do) and say how each went — ``{"task", "status": "done" | "retrying" |
        "failed" | "pending", "error"}`` — so the command can report what failed and that
        `tht outbox run` retries it."""
        outbox = self.kernel.outbox
        if outbox is None:
            return []
        run = outbox.run(self.outbox_handlers(), self.clock, session=session)
        return _hook_outcomes(outbox.items(), run, session)

    def run_outbox(self, *, session: str | None = None, force: bool = False) -> object:
        outbox = self.kernel.outbox
        assert outbox is not None
        return outbox.run(self.outbox_handlers(), self.clock, session=session, force=force)


def _hook_outcomes(
    items: list[OutboxItem], run: OutboxRun, session: str
) -> list[dict[str, object]]:
    retrying, failed = set(run.retrying), set(run.failed)
    outcomes: list[dict[str, object]] = []
    for item in items:
        if item.session != session:
            continue
        if item.id in failed or item.status == "failed":
            status = "failed"
        elif item.id in retrying:
            status = "retrying"
        else:
            status = item.status
        outcomes.append(
            {
                "task": item.task.removeprefix(_COMMAND_TASK_PREFIX),
                "status": status,
                "error": item.last_error,
            }
        )
    return outcomes


def _signed_setting(workspace: Workspace) -> bool:
    """``human_decisions: signed`` in workspace.yaml, read without pydantic (a hot path): a
    text test is enough to turn signing *on*; a file that does not parse is reported by the
    commands that load the settings."""
    try:
        text = workspace.settings_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    import re

    return re.search(r"(?m)^human_decisions:\s*['\"]?signed\b", text) is not None


def _has_registry(workspace: Workspace) -> bool:
    """Whether a reviewer registry may exist, read without importing it: a non-empty
    ``reviewers/ledger.jsonl`` (``ReviewerRegistry.exists`` then decides); a file that cannot
    be looked at counts as one (the registry then reports it)."""
    try:
        return (workspace.reviewers_dir / "ledger.jsonl").stat().st_size > 0
    except FileNotFoundError:
        return False
    except OSError:
        return True


def trust_of(workspace: Workspace, unlock: Callable[[str], ReviewerSigner] | None = None) -> Trust:
    """Signed mode and the signature check, from the reviewer registry (a ledger verified on
    every use) and workspace.yaml. A registry that does not verify trusts nobody: every signed
    human decision then fails its check, and nothing new can be signed.

    ``unlock``: how a reviewer's key is unlocked (default: the passphrase at the controlling
    terminal); the web UI passes the key its signed-in reviewer unlocked for that browser
    session."""
    signed = _signed_setting(workspace)
    unlocker = unlock or _unlocker(None)
    from tht.witness_runtime import witness_path

    witness = witness_path(workspace, "reviewers")
    if not _has_registry(workspace) and not witness.exists():
        # an unsigned workspace's `tht session status` builds this too (is it signed?): no
        # registry, no signature stack to import (cryptography costs ~20 ms)
        return Trust(signed=signed, unlock=unlocker if signed else None)
    from kernel.reviewer_registry import ReviewerRegistry

    registry = ReviewerRegistry(workspace.reviewers_dir, witness=witness)
    if not registry.exists() and not registry.witnessed():
        return Trust(signed=signed, unlock=unlocker if signed else None)
    report = registry.verify()
    state = registry.state()
    if not report.ok:
        rolled = [p for p in report.problems if p.code == "rolled_back"]
        reason = (
            f"the reviewer registry was rolled back ({rolled[0].message})"
            if rolled
            else "the reviewer registry does not verify (`tht reviewer verify`)"
        )

        def broken(event: object) -> str | None:
            return reason

        return Trust(signed=True, human_check=broken, unlock=_unlocker(reason))
    return Trust(
        signed=signed or state.signed,
        human_check=state.check_human_event,
        approved_workflows=state.approved_workflows,
        unlock=unlocker,
        check_signature=state.signature_valid,
        compromised=state.compromised_signature,
    )


def _unlocker(broken: str | None) -> Callable[[str], ReviewerSigner]:
    def unlock(reviewer: str) -> ReviewerSigner:
        from kernel.errors import IntegrityError, PolicyError

        if broken is not None:
            raise IntegrityError(broken)
        from tht.reviewer_keys import unlock as unlock_key

        found = _UNLOCKED.get(reviewer)
        if found is not None:
            return found
        try:
            key = unlock_key(reviewer)
        except FileNotFoundError as err:  # pragma: no cover - unlock maps it already
            raise PolicyError(str(err)) from err
        _UNLOCKED[reviewer] = key
        return key

    return unlock


#: the reviewer keys this command unlocked, kept for its lifetime only (in memory): one command
#: that signs twice — the memory registry's entry, then the session's answer — asks once
_UNLOCKED: dict[str, ReviewerSigner] = {}


def open_app(workspace_root: Path, *, unlock: Callable[[str], ReviewerSigner] | None = None) -> App:
    """The composed application on one workspace; ``unlock``: see :func:`trust_of`."""
    workspace = open_workspace(workspace_root)
    # store.kind decides (an unknown kind is exit 2, never a silent fs store); postgres: the URL
    # from its environment variable (unset: exit 2), an unreachable server exit 6
    store = open_store(workspace)
    clock = clock_from_env(workspace.state_dir)
    custom = workspace.root / "workflow.yaml"
    kernel = WorkflowKernel(
        store,
        clock=clock,
        ids=_ids_from_env(),
        workflow_path=custom if custom.is_file() else default_workflow_path(),
        workflow_cache=workspace.cache_dir,
        outbox=outbox_of(workspace, store),
        trust=lambda: trust_of(workspace, unlock),
    )
    return App(workspace=workspace, kernel=kernel, clock=clock)


def resolve_session(app: App, session: str | None) -> str:
    """``SESSION`` (or ``$THT_SESSION``): an exact id or a unique prefix of at least 4 chars."""
    if not session:
        raise UsageError("no session given: pass SESSION or set THT_SESSION")
    store = app.kernel.store
    if store.exists(session):
        return session
    if len(session) >= 4:
        matches = [s for s in store.session_ids() if s.startswith(session.upper())]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise UsageError(f"session prefix {session!r} is ambiguous: {', '.join(matches[:5])}")
    from kernel.errors import NotFoundError

    raise NotFoundError(f"session {session} does not exist in {app.workspace.root}")
