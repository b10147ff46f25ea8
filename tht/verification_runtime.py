"""``tht stage run``: a stage's own module invocation, composed here (ARCHITECTURE §6).

tht runs a step itself when it emits a module decision (``kernel.events.MODULE_DECISION_TYPES``):
F2 ``memory_recall`` and F8's ``memory_promotion`` (Memory, ``tht.memory_runtime``), and F7
``verification`` — the approved
``sql_final.sql`` runs read-only against the Workspace Database with the binding's limits, and
:func:`kernel.verification.plan_verification` turns what happened into the outcome the kernel
applies as ``module:core``. It also runs by itself right after a human approves F6
(:func:`after_answer`), so a session never waits on an agent to "claim" a verification.

An unreachable database is not a failed verification: exit 6 and nothing is written, and the
command can be run again. A query that errors or times out *is* one: ``result_verified`` ok false
with the reason, and the stage fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel.errors import NotFoundError, PolicyError, ThtError, UsageError
from kernel.events import MODULE_DECISION_TYPES, info_of
from kernel.outcomes import ModuleOutcome
from kernel.workflow import StepSpec
from kernel.workflow_kernel import Applied, LoadedSession
from tht.composition import App

__all__ = ["after_answer", "run_stage", "runnable"]

_SQL_ARTIFACT = "sql_final.sql"


def runnable(step: StepSpec) -> bool:
    """Whether tht runs this step's module itself (``tht stage run``)."""
    return any(t in MODULE_DECISION_TYPES for t in step.emits)


def _binding(app: App) -> Any:
    from tht.catalog_runtime import binding

    bound = binding(app)
    if bound is None:
        raise UsageError(
            f"{app.workspace.settings_file.name}: no database bound (add `database: {{url: "
            "sqlite:///data/your.db}}`): F7 runs the approved SQL against the workspace database"
        )
    return bound


def _sql_of(app: App, loaded: LoadedSession) -> bytes:
    if loaded.state.effective_artifact(_SQL_ARTIFACT) is None:
        raise PolicyError(
            f"session {loaded.session} has no approved {_SQL_ARTIFACT}: F6 must be approved first"
        )
    return app.kernel.artifact(loaded.session, _SQL_ARTIFACT, loaded=loaded)


def run_stage(app: App, session: str, stage: str) -> dict[str, Any]:
    """Run ``stage``'s module and apply its outcome; the ``tht stage run --json`` body."""
    loaded = app.kernel.load(session)
    step = loaded.workflow.step(stage)  # unknown stage → exit 3
    from tht.disambiguation_runtime import is_f1

    if not runnable(step) and not is_f1(step.owner, step.emits):
        raise PolicyError(
            f"stage {stage} has no module invocation that tht runs in this version (owner "
            f"{step.owner}): its outcome comes from a proposal (`tht propose {stage} --file …`)"
        )
    view = loaded.state.stage(stage)
    if loaded.state.current_stage != stage or view is None:
        current = loaded.state.current_stage or "none"
        shown = view.state if view is not None else "not a stage"
        raise PolicyError(f"stage {stage} is {shown}, not the current stage ({current})")
    decision = next((t for t in step.emits if t in MODULE_DECISION_TYPES), None)
    run = _MODULE_RUNS[decision] if decision is not None else _disambiguate
    applied = run(app, loaded, stage)
    return _run_json(applied, stage)


def _disambiguate(app: App, loaded: LoadedSession, stage: str) -> Applied:
    """F1 on request (`tht stage run disambiguation`): the next ambiguity over the catalog."""
    from tht.disambiguation_runtime import run_disambiguation

    return run_disambiguation(app, loaded, stage)


def _recall(app: App, loaded: LoadedSession, stage: str) -> Applied:
    from tht.memory_runtime import run_recall

    return run_recall(app, loaded, stage)


def _promotion(app: App, loaded: LoadedSession, stage: str) -> Applied:
    from tht.memory_runtime import run_promotion

    return run_promotion(app, loaded, stage)


def _verify(app: App, loaded: LoadedSession, stage: str) -> Applied:
    from kernel.database import run_read_only
    from kernel.database.errors import QueryFailed, QueryRefused, QueryTimeout
    from kernel.verification import VERIFIER, plan_verification, plan_verification_failure

    sql = _sql_of(app, loaded)
    binding = _binding(app)
    database = binding.display
    limits = app.settings.database
    limit = limits.row_limit if limits is not None else 1000
    timeout_ms = limits.timeout_ms if limits is not None else 30_000
    expected = _snapshot_binding(app, loaded)
    outcome: ModuleOutcome | None = None
    try:
        text = sql.decode("utf-8")
    except UnicodeDecodeError:
        outcome = plan_verification_failure(
            sql, code="error", reason="sql_final.sql is not UTF-8", database=database
        )
    else:
        from tht.sql_runtime import runnable_sql

        # the approved F5 CTEs the final SQL names without defining them go in front, as approved
        text = runnable_sql(app, loaded, text, binding.sqlglot_dialect)
        if expected and expected != database:
            # workspace.yaml can be edited by anyone with the user's account: a result from
            # another database than the one the session's catalog came from verifies nothing
            outcome = plan_verification_failure(
                sql,
                code="database",
                reason=(
                    f"the database bound now ({database}) is not the one this session's "
                    f"catalog snapshot was synced from ({expected}): restore the Database "
                    "Binding in workspace.yaml, or reopen schema_linking to link against the "
                    "catalog of the database bound now"
                ),
                database=database,
            )
    if outcome is None:
        try:
            result = run_read_only(binding, text, limit=limit, timeout_ms=timeout_ms)
        except QueryTimeout as err:
            outcome = plan_verification_failure(
                sql, code="timeout", reason=err.message, database=database
            )
        except QueryRefused as err:
            outcome = plan_verification_failure(
                sql, code="refused", reason=err.message, database=database
            )
        except QueryFailed as err:
            reason = _reason(app, loaded, text, err.message)
            outcome = plan_verification_failure(sql, code="error", reason=reason, database=database)
        else:
            from tht.sensitive_runtime import result_mask

            # the Sensitive Data Policy: result columns carrying a sensitive column's values
            masked = result_mask(app, text, [c.name for c in result.columns], loaded)
            outcome = plan_verification(sql, result, limit=limit, masked=masked, database=database)
    return app.kernel.apply_outcome(loaded.session, stage, outcome, actor=VERIFIER, loaded=loaded)


def _snapshot_binding(app: App, loaded: LoadedSession) -> str:
    """The binding the session's catalog snapshot (F4) was synced from; "" when the session
    recorded none, or one written before snapshots recorded it."""
    from kernel.schema_view import SNAPSHOT_ARTIFACT, StaticSchemaView
    from tht.sql_runtime import session_view

    if loaded.state.effective_artifact(SNAPSHOT_ARTIFACT) is None:
        return ""
    view = session_view(app, loaded, verified=True)
    return view.binding if isinstance(view, StaticSchemaView) else ""


def _reason(app: App, loaded: LoadedSession, sql: str, reason: str) -> str:
    """The database's reason, its quoted fragments removed when the SQL reads a table with a
    sensitive column (the reason is recorded in the ledger; a value may be quoted in it)."""
    from tht.sensitive_runtime import reads_sensitive, redact_reason

    return redact_reason(reason) if reads_sensitive(app, sql, loaded) else reason


#: the module run of a step, by the module decision it emits (so a custom workflow's step runs
#: by what it records, not by its name)
_MODULE_RUNS: dict[str, Callable[[App, LoadedSession, str], Applied]] = {
    "result_verified": _verify,
    "memory_nothing_recalled": _recall,
    "memory_nothing_to_promote": _promotion,
}


def _run_json(applied: Applied, stage: str) -> dict[str, Any]:
    types = [info_of(e).type for e in applied.events]
    if "stage_failed" in types:
        status = "failed"
    elif "stage_completed" in types:
        status = "completed"
    elif "review_requested" in types:
        status = "review"
    else:
        status = "nothing"
    review = next((e.seq for e in applied.events if info_of(e).type == "review_requested"), None)
    invocation = next((e.invocation for e in applied.events if e.invocation), None)
    return {
        "session": applied.session,
        "stage": stage,
        "invocation": invocation,
        "status": status,
        "review": review,
        "events": [e.seq for e in applied.events],
        "current_stage": applied.state.current_stage,
        **_verified(applied),
        **_module_reason(applied),
    }


def _module_reason(applied: Applied) -> dict[str, Any]:
    """Why a module run completed its step with nothing to review, or what it asks."""
    from kernel.events import MemoryNothingRecalled, MemoryNothingToPromote, ReviewRequested

    for event in applied.events:
        if isinstance(event, MemoryNothingRecalled | MemoryNothingToPromote):
            return {"reason": event.payload.reason}
        if isinstance(event, ReviewRequested):
            return {"prompt": event.payload.prompt, "options": len(event.payload.options)}
    return {}


def _verified(applied: Applied) -> dict[str, Any]:
    from kernel.events import ResultVerified

    for event in applied.events:
        if isinstance(event, ResultVerified):
            payload = event.payload
            return {
                "verified": {
                    "ok": payload.ok,
                    "rows": payload.rows,
                    "elapsed_ms": payload.elapsed_ms,
                    "result_sha256": payload.result_sha256,
                    "reason": payload.reason,
                }
            }
    return {}


def after_answer(app: App, applied: Applied) -> dict[str, Any] | None:
    """After a human's answer: when the session now stands on a step tht runs itself (F6 was
    approved, so F7 is ready), run it at once. Returns the run's body, or
    ``{"status": "not_run", "reason"}`` when it cannot run now (no database bound, database
    unreachable), so the answer itself always stands."""
    state = applied.state
    stage = state.current_stage
    if stage is None or state.lifecycle != "active" or stage == "finalize":
        return None
    workflow = app.kernel.session_workflow(applied.session)
    try:
        step = workflow.step(stage)
    except NotFoundError:
        return None
    view = state.stage(stage)
    if not runnable(step) or view is None or view.state != "ready":
        return None
    try:
        return run_stage(app, applied.session, stage)
    except ThtError as err:
        # no database bound, or unreachable: the human answer stands (it is committed); say what
        # is missing — `tht stage run` runs it again, nothing of the run was written
        return {
            "stage": stage,
            "status": "not_run",
            "reason": err.message,
            "exit_code": err.exit_code,
        }
