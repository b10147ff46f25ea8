"""The Sensitive Data Suggestion Run with a model, composed (docs/catalog.md "Sensitive data").

- the model: the setup-level Metadata Generation Model Configuration of the Description
  Generation Runs (:mod:`tht.generation_setup`); :func:`configured_setup` is None when
  ``catalog.generation_profile`` is not set (the command then runs the offline pre-pass only);
- :func:`suggest`: the offline pre-pass, then the model over bounded batches of structural
  metadata (never a value), each answer validated locally; a provider failure (timeout, 5xx,
  invalid JSON, …) counts its batch failed and the run goes on (it stops on a fatal kind or
  after three failures in a row, the rest not asked). The merged proposal is returned whole;
  nothing is saved as a flag. The ledger gets one ``sensitive_suggestion_run`` with aggregate
  counts only — never a column of the proposal, a prompt or a response. Exit 6 only when no
  batch answered and the offline pre-pass proposed nothing either (the run is recorded first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from modules.catalog import Catalog, LoadedCatalog
    from modules.catalog.generation_run import GenerationBatch, GenerationPrompt
    from modules.catalog.sensitive_model import ModelCounts, ModelFlag
    from tht.composition import App
    from tht.generation_setup import GenerationSetup

__all__ = ["configured_setup", "suggest"]

Chat = Callable[["GenerationPrompt"], str]
Progress = Callable[[int, int, str], None]
_APPEND_ATTEMPTS = 5


def configured_setup() -> GenerationSetup | None:
    """The configured model, or None when ``catalog.generation_profile`` is not set; a
    configuration that sets it but is wrong exits 2 (as ``tht catalog generate``)."""
    from kernel.config_errors import load_yaml_mapping
    from tht.generation_setup import load_setup
    from tht.paths import user_config_file

    path = user_config_file()
    raw: Any = load_yaml_mapping(path).get("catalog") if path.is_file() else None
    if not isinstance(raw, dict) or not raw.get("generation_profile"):
        return None
    return load_setup()


def _client_chat(setup: GenerationSetup) -> Chat:
    from modules.catalog.sensitive_model import ANSWER_SCHEMA
    from tht.generation_runtime import model_chat

    return model_chat(setup, ANSWER_SCHEMA, "sensitive_flags")


def suggest(
    app: App,
    scope: Sequence[str] | None,
    setup: GenerationSetup,
    *,
    progress: Progress | None = None,
    chat: Chat | None = None,
) -> dict[str, Any]:
    """A model-based Sensitive Data Suggestion Run; its body (``--json``)."""
    from kernel.errors import UnavailableError
    from modules.catalog.sensitive_flags import suggest as offline_pass
    from modules.catalog.sensitive_model import (
        ModelCounts,
        merge,
        plan_model_batches,
        plan_model_run,
    )
    from tht.catalog_runtime import open_catalog

    ask = chat or _client_chat(setup)
    catalog = open_catalog(app)
    state = catalog.load_for_write().state
    suggestion = offline_pass(state, scope)
    names = suggestion.scope if suggestion.scope is not None else sorted(state.tables)
    batches = plan_model_batches([state.tables[n] for n in names], setup.batch_columns)
    counts = ModelCounts(batches=len(batches))
    flags = _ask_batches(state, batches, counts, ask, progress)
    proposals = merge(state, suggestion.proposals, flags, setup.profile.id)
    model_proposed = sum(f.sensitive for f in flags)
    profile, model = setup.profile.id, setup.profile.model
    loaded, run = _record(
        catalog,
        lambda run: plan_model_run(
            run, suggestion, len(proposals), model_proposed, counts, profile=profile, model=model
        ),
    )
    head = suggestion.to_json()
    body: dict[str, Any] = {
        "run": run,
        **head,
        "mode": "model",
        "proposed": len(proposals),
        "proposals": proposals,
        "profile": profile,
        "model": model,
        "offline_proposed": len(suggestion.proposals),
        "model_proposed": model_proposed,
        **counts.to_json(),
        "seq": loaded.state.last_seq,
    }
    if counts.batches and not counts.answered and not suggestion.proposals:
        raise UnavailableError(
            f"Sensitive Data Suggestion Run {run}: no batch answered "
            f"({counts.failure or 'no valid answer'}) and the offline pre-pass proposed "
            "nothing: nothing to show",
            details=body,
        )
    return body


def _ask_batches(
    state: Any,
    batches: Sequence[GenerationBatch],
    counts: ModelCounts,
    ask: Chat,
    progress: Progress | None,
) -> list[ModelFlag]:
    """Ask batch after batch; the valid items of every batch that answered."""
    from kernel.llm.errors import ProviderError
    from modules.catalog.sensitive_model import build_prompt, validate_answer
    from tht.generation_runtime import FATAL_KINDS, MAX_CONSECUTIVE_FAILURES

    flags: list[ModelFlag] = []
    in_a_row = 0
    for number, batch in enumerate(batches, start=1):
        if progress is not None:
            progress(number - 1, len(batches), batch.table)
        kind, outcome = "", None
        try:
            outcome = validate_answer(ask(build_prompt(state, batch)), batch)
            kind = outcome.problem
        except ProviderError as err:
            kind = err.kind
        if outcome is not None:
            counts.invalid_items += outcome.invalid_items
        if outcome is None or not outcome.flags:
            counts.failed_batches += 1
            counts.failure = kind or "invalid-answer"  # the right shape, no valid item
            in_a_row += 1
            if counts.failure in FATAL_KINDS or in_a_row >= MAX_CONSECUTIVE_FAILURES:
                counts.skipped_batches = len(batches) - number
                break
            continue
        in_a_row = 0
        flags.extend(outcome.flags)
    if progress is not None and batches:
        progress(len(batches), len(batches), "done")
    return flags


def _record(catalog: Catalog, draft: Callable[[str], Any]) -> tuple[LoadedCatalog, str]:
    """Append the run's entry on the ledger as it is now (a curation command may have
    appended while the model answered); a fresh run id."""
    from kernel.errors import ConflictError

    for attempt in range(_APPEND_ATTEMPTS):
        loaded = catalog.load_for_write()
        run = catalog.caps.ids.session_id(catalog.caps.clock.now())
        while run in loaded.state.suggestion_runs:  # seeded ids (THT_SEED) repeat per process
            run = catalog.caps.ids.session_id(catalog.caps.clock.now())
        try:
            return catalog.append(loaded, [draft(run)]), run
        except ConflictError:
            if attempt == _APPEND_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
