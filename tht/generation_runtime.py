"""The Description Generation Run, composed: setup, lock, provider calls, appends (docs/catalog.md).

- the model: the setup-level Metadata Generation Model Configuration
  (:mod:`tht.generation_setup`), never ``workspace.yaml``;
- **At most one active run per installation**: an exclusive ``flock`` on
  ``<user data dir>/locks/description-generation.lock`` (it holds the pid) for the whole run; a
  second run exits 4 at once. A run recorded active whose lock is free belongs to a process that
  died: nothing starts until **Description Generation Unlock** (:func:`unlock`) records it
  ``interrupted``.
- :func:`generate`: sequential batches; each valid result is appended (``description_generated``)
  as soon as its answer is validated, so a kill keeps what was saved. A provider failure
  (timeout, 5xx, invalid JSON) changes nothing saved: its targets are counted failed and the run
  goes on, or ends ``failed`` (a fatal kind, or :data:`MAX_CONSECUTIVE_FAILURES` in a row).
  The run log ``catalog/runs/<run>.log`` (the Description Generation Events) and the ledger get
  counts and error kinds only — never a prompt, a value or a response.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from modules.catalog import Catalog, LoadedCatalog
    from modules.catalog.generation_run import (
        GenerationPrompt,
        GenerationTarget,
        RunCounts,
        Status,
    )
    from tht.composition import App
    from tht.generation_setup import GenerationSetup

__all__ = [
    "FATAL_KINDS",
    "MAX_CONSECUTIVE_FAILURES",
    "generate",
    "generation_lock_path",
    "unlock",
]

logger = logging.getLogger(__name__)

#: provider failures after which asking again is pointless: the run ends ``failed``
FATAL_KINDS = frozenset({"auth-error", "missing-credential", "model-unavailable", "network-error"})
MAX_CONSECUTIVE_FAILURES = 3
_APPEND_ATTEMPTS = 5

Chat = Callable[["GenerationPrompt"], str]
Progress = Callable[[int, int, str], None]


def generation_lock_path() -> Path:
    from tht.paths import user_data_dir

    return user_data_dir() / "locks" / "description-generation.lock"


def model_chat(setup: GenerationSetup, schema: Any, schema_name: str) -> Chat:
    """One prompt → the model's raw answer text, through ``kernel/llm`` with the setup's
    profile and timeout and a structured-output ``schema`` (every catalog model run uses it)."""
    from kernel.llm.client import ChatMessage, OpenAICompatibleClient

    client = OpenAICompatibleClient(env=os.environ)

    def chat(prompt: GenerationPrompt) -> str:
        answer = client.chat(
            setup.profile,
            [ChatMessage("system", prompt.system), ChatMessage("user", prompt.user)],
            max_tokens=prompt.max_tokens,
            timeout_ms=setup.timeout_ms,
            json_schema=schema,
            schema_name=schema_name,
        )
        return answer.raw_text

    return chat


def _client_chat(setup: GenerationSetup) -> Chat:
    from modules.catalog.generation_run import ANSWER_SCHEMA

    return model_chat(setup, ANSWER_SCHEMA, "descriptions")


# ----------------------------------------------------------------------------- the run


def _lock(path: Path, busy: str) -> Any:
    from kernel.process_lock import process_lock

    return process_lock(path, what="generation lock", busy=busy)


def _language(app: App) -> str:
    languages = tuple(app.settings.languages)
    return languages[0] if languages else "en"


def generate(
    app: App,
    *,
    scope: Sequence[str] | None,
    missing_only: bool,
    profile_id: str | None = None,
    progress: Progress | None = None,
    chat: Chat | None = None,
) -> dict[str, Any]:
    """A Description Generation Run; its body (``--json``). Exit 6 when it ends ``failed``."""
    from kernel.errors import PolicyError, UnavailableError
    from modules.catalog.generation_run import (
        RunCounts,
        finish_status,
        plan_batches,
        plan_started,
        select_targets,
    )
    from tht.catalog_runtime import open_catalog, run_log_path
    from tht.generation_setup import load_setup

    setup = load_setup(profile_id)
    ask = chat or _client_chat(setup)
    catalog = open_catalog(app)
    language = _language(app)
    selection = select_targets(catalog.load_for_write().state, scope, missing_only=missing_only)
    busy = "a Description Generation Run is active (pid {pid}); one at a time per installation"
    with _lock(generation_lock_path(), busy):
        loaded = catalog.load_for_write()
        stale = loaded.state.active_generation
        if stale is not None:
            raise PolicyError(
                f"Description Generation Run {stale} is recorded active but no process holds it: "
                "run `tht catalog describe --unlock`, then `--generate --missing-only`",
                details={"run": stale},
            )
        selection = select_targets(loaded.state, scope, missing_only=missing_only)
        counts = RunCounts(requested=len(selection.requested), skipped=selection.already_described)
        body: dict[str, Any] = {"run": None, "status": "nothing", "profile": setup.profile.id}
        if not selection.wanted:
            return {**body, "language": language, **counts.to_json(), "failed_targets": []}
        run = catalog.caps.ids.session_id(catalog.caps.clock.now())
        while run in loaded.state.generation_runs:  # seeded ids (THT_SEED) repeat per process
            run = catalog.caps.ids.session_id(catalog.caps.clock.now())
        profile = setup.profile
        started = plan_started(
            run,
            selection,
            profile=profile.id,
            model=profile.model,
            missing_only=missing_only,
            language=language,
        )
        loaded = _append(catalog, loaded, [started])
        log = catalog.caps.run_log
        log(
            run,
            f"started: {len(selection.wanted)} target(s) through {profile.id} ({profile.model})",
        )
        batches = plan_batches(selection.wanted, setup.batch_columns)
        try:
            loaded, stopped = _batches(
                catalog, loaded, run, batches, counts, ask, language, profile.id, progress
            )
        except KeyboardInterrupt:  # Ctrl-C: recorded interrupted, what was saved stays
            _finish(catalog, catalog.load_for_write(), run, counts, "interrupted", "interrupted")
            raise
        status = finish_status(counts, stopped)
        reason = "" if status == "completed" else (stopped or counts.last_failure)
        loaded = _finish(catalog, loaded, run, counts, status, reason)
        body = {
            "run": run,
            "status": status,
            "profile": profile.id,
            "model": profile.model,
            "language": language,
            "scope": None if selection.scope is None else list(selection.scope),
            "missing_only": missing_only,
            **counts.to_json(),
            "failed_targets": counts.failed_targets,
            "reason": reason,
            "seq": loaded.state.last_seq,
            "log": str(run_log_path(app, run).relative_to(app.workspace.root)),
        }
        if status == "failed":
            raise UnavailableError(
                f"Description Generation Run {run} failed ({reason or 'no valid answer'}): what "
                "was saved stays; run again with --missing-only",
                details=body,
            )
        return body


def _batches(
    catalog: Catalog,
    loaded: LoadedCatalog,
    run: str,
    batches: Sequence[Any],
    counts: RunCounts,
    ask: Chat,
    language: str,
    profile: str,
    progress: Progress | None,
) -> tuple[LoadedCatalog, str]:
    """Ask batch after batch; the state after the last append and why the run stopped early."""
    from kernel.llm.errors import ProviderError
    from modules.catalog.generation_run import build_prompt, plan_generated, validate_answer

    log = catalog.caps.run_log
    in_a_row = 0
    for number, batch in enumerate(batches, start=1):
        where = f"batch {number}/{len(batches)} ({batch.table}, {len(batch.targets)} target(s))"
        if progress is not None:
            progress(number - 1, len(batches), batch.table)
        prompt = build_prompt(loaded.state, batch, language)
        kind = ""
        try:
            outcome = validate_answer(ask(prompt), batch, language)
            kind = outcome.problem
        except ProviderError as err:
            kind, outcome = err.kind, None
        if outcome is None or not outcome.results:
            kind = kind or "invalid-answer"  # JSON of the right shape, no valid item in it
            _failed(counts, batch.targets, kind)
            in_a_row += 1
            log(run, f"{where}: failed ({kind}); nothing saved")
            if kind in FATAL_KINDS or in_a_row >= MAX_CONSECUTIVE_FAILURES:
                rest = [t for b in batches[number:] for t in b.targets]
                counts.skipped += len(rest)
                log(run, f"stopped after {in_a_row} failure(s) in a row: {len(rest)} skipped")
                return loaded, kind
            continue
        in_a_row = 0
        drafts = plan_generated(run, outcome.results, profile=profile, language=language)
        loaded, kept = _append_results(catalog, loaded, drafts)
        saved = [r for r in outcome.results if r.target.ref in kept]
        lost = [r.target for r in outcome.results if r.target.ref not in kept]
        counts.generated += sum(not r.non_generatable for r in saved)
        counts.non_generatable += sum(r.non_generatable for r in saved)
        _failed(counts, [*outcome.failed, *lost], "invalid-item" if outcome.failed else "")
        log(
            run,
            f"{where}: {len(saved)} saved ({sum(r.non_generatable for r in saved)} "
            f"non-generatable), {len(outcome.failed) + len(lost)} failed",
        )
    if progress is not None and batches:
        progress(len(batches), len(batches), "done")
    return loaded, ""


def _failed(counts: RunCounts, targets: Sequence[GenerationTarget], kind: str) -> None:
    counts.failed += len(targets)
    counts.failed_targets.extend(t.ref for t in targets)
    if kind and targets:
        counts.last_failure = kind


def _exists(state: Any, ref: str) -> bool:
    """Whether the target is still a Catalog Table or Column (as the fold locates it)."""
    if ref in state.tables:
        return True
    table, dot, column = ref.partition(".")
    found = state.tables.get(table) if dot else None
    return found is not None and found.column(column) is not None


def _append(catalog: Catalog, loaded: LoadedCatalog, drafts: list[Any]) -> LoadedCatalog:
    return _append_results(catalog, loaded, drafts)[0]


def _append_results(
    catalog: Catalog, loaded: LoadedCatalog, drafts: list[Any]
) -> tuple[LoadedCatalog, set[str]]:
    """Append, re-reading the verified ledger when a curation command appended meanwhile; a
    result whose target left the catalog meanwhile is dropped (the fold would refuse it)."""
    from kernel.errors import ConflictError

    for attempt in range(_APPEND_ATTEMPTS):
        kept = [
            d
            for d in drafts
            if d.type != "description_generated" or _exists(loaded.state, d.payload.target)
        ]
        try:
            after = catalog.append(loaded, kept) if kept else loaded
            return after, {d.payload.target for d in kept if d.type == "description_generated"}
        except ConflictError:
            if attempt == _APPEND_ATTEMPTS - 1:
                raise
            loaded = catalog.load_for_write()
    raise AssertionError("unreachable")


def _finish(
    catalog: Catalog,
    loaded: LoadedCatalog,
    run: str,
    counts: RunCounts,
    status: Status,
    reason: str = "",
) -> LoadedCatalog:
    """The run's end; its saved counts are the ledger's own tally (what the fold checks), the
    targets neither saved nor failed are skipped."""
    from modules.catalog.generation_run import plan_finished

    record = loaded.state.generation_runs[run]
    counts.generated, counts.non_generatable = record.generated, record.non_generatable
    counts.skipped = counts.requested - counts.generated - counts.non_generatable - counts.failed
    after = _append(catalog, loaded, [plan_finished(run, counts, status, reason)])
    catalog.caps.run_log(
        run,
        f"{status}: {counts.generated} generated, {counts.non_generatable} non-generatable, "
        f"{counts.failed} failed, {counts.skipped} skipped" + (f" ({reason})" if reason else ""),
    )
    return after


# ----------------------------------------------------------------------------- unlock


def unlock(app: App) -> dict[str, Any]:
    """Description Generation Unlock: the run recorded active, with no live process holding the
    lock, is recorded ``interrupted`` (what it saved stays). Exit 5 while a process holds it or
    when no run is recorded active."""
    from kernel.errors import ConflictError, PolicyError
    from modules.catalog.generation_run import RunCounts, plan_finished
    from tht.catalog_runtime import open_catalog

    catalog = open_catalog(app)
    try:
        with _lock(generation_lock_path(), "{pid}"):
            loaded = catalog.load_for_write()
            active = loaded.state.active_generation
            if active is None:
                raise PolicyError(
                    "no Description Generation Run is recorded active in this workspace: "
                    "nothing to unlock"
                )
            record = loaded.state.generation_runs[active]
            counts = RunCounts(
                requested=record.requested,
                generated=record.generated,
                non_generatable=record.non_generatable,
            )
            counts.skipped = record.requested - record.generated - record.non_generatable
            after = catalog.append(
                loaded, [plan_finished(active, counts, "interrupted", "unlocked")]
            )
            catalog.caps.run_log(
                active,
                f"interrupted (unlocked: no live process held the run): {record.generated} "
                f"generated, {record.non_generatable} non-generatable saved, {counts.skipped} "
                "not done",
            )
    except ConflictError as err:
        pid = err.details.get("pid")
        raise PolicyError(
            f"a live process (pid {pid}) holds the Description Generation Run: nothing to unlock",
            details={"pid": pid},
        ) from err
    return {"run": active, "status": "interrupted", **counts.to_json(), "seq": after.state.last_seq}
