"""F7 verification as tht's own work (ARCHITECTURE §3.8): the pure half.

When F6 is approved, the composition root runs the effective ``sql_final.sql`` read-only with
limits (``kernel.database.run_read_only``) and hands what happened to :func:`plan_verification`,
which returns the ``ModuleOutcome`` of the ``verification`` stage's module invocation
(``module:core``): ``result_sample.json`` — columns, types, the first rows, the row count and the
result hash — and ``result_verified`` with ``ok`` true, which completes the stage; or, when the
query failed or timed out, ``result_verified`` with ``ok`` false and the reason, which fails the
stage and blocks finalization until a human approves a revision (or skips F7 where the workflow
lets a human skip it). An agent can no longer record a verification: kernel/outcomes.py refuses
``result_verified`` from anyone but ``module:core`` and kernel/replay.py rejects such lines.

The Sensitive Data Policy: the composition root passes the positions of the result columns that
carry a sensitive column's values (``kernel.database.sensitive_lineage``); in the sample their
values are :data:`MASKED` (``null`` stays ``null``) and ``masked`` lists those positions. The row
count and the result hash stay those of the real result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.events import ProposedEvent
from kernel.outcomes import ArtifactChange, Failure, ModuleOutcome

if TYPE_CHECKING:  # kernel.report imports this module on `tht session status`'s path: the
    # database package (its drivers' shims) is not loaded for a type
    from kernel.database.types import QueryResult

__all__ = [
    "DEFAULT_SAMPLE_ROWS",
    "MASKED",
    "RESULT_SAMPLE",
    "VERIFIER",
    "ResultSample",
    "mask_rows",
    "plan_verification",
    "plan_verification_failure",
    "read_sample",
]

RESULT_SAMPLE = "result_sample.json"
#: the actor of F7's module invocation
VERIFIER = "module:core"
#: rows the sample keeps (the row count and the hash cover what the query returned)
DEFAULT_SAMPLE_ROWS = 20
#: what a sensitive column's value is in the sample
MASKED = "[sensitive]"

_ENCODER = msgspec.json.Encoder(order="deterministic")


class ResultSample(msgspec.Struct, frozen=True, kw_only=True):
    """``result_sample.json``: what the reviewer and the report see of the verified result (the
    same result gives the same bytes: the elapsed time is in ``result_verified`` only)."""

    sql_sha256: str
    columns: tuple[dict[str, str], ...]
    rows: tuple[tuple[Any, ...], ...]
    row_count: int
    truncated: bool
    result_sha256: str
    limit: int
    #: the 0-based positions of the columns whose values are masked (absent when none)
    masked: tuple[int, ...] | msgspec.UnsetType = msgspec.UNSET


def _checks(result: QueryResult) -> tuple[str, ...]:
    checks = ["executed_read_only"]
    checks.append("non_empty" if result.row_count else "empty")
    if result.truncated:
        checks.append("truncated_at_limit")
    return tuple(checks)


def mask_rows(
    rows: Sequence[Sequence[Any]], masked: Collection[int]
) -> tuple[tuple[Any, ...], ...]:
    """``rows`` with the values at the ``masked`` positions replaced by :data:`MASKED`."""
    if not masked:
        return tuple(tuple(r) for r in rows)
    return tuple(
        tuple(MASKED if i in masked and v is not None else v for i, v in enumerate(row))
        for row in rows
    )


def plan_verification(
    sql: bytes,
    result: QueryResult,
    *,
    limit: int,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    masked: Collection[int] = (),
    database: str = "",
) -> ModuleOutcome:
    """The approved SQL ran (against ``database``, the binding's redacted display): write the
    sample (the ``masked`` positions masked), record ``result_verified`` ok, complete F7."""
    sql_sha256 = hashlib.sha256(sql).hexdigest()
    positions = tuple(sorted(set(masked)))
    sample = ResultSample(
        sql_sha256=sql_sha256,
        columns=tuple({"name": c.name, "type": c.type} for c in result.columns),
        rows=mask_rows(result.rows[:sample_rows], positions),
        row_count=result.row_count,
        truncated=result.truncated,
        result_sha256=result.sha256,
        limit=limit,
        masked=positions if positions else msgspec.UNSET,
    )
    verified = ProposedEvent(
        type="result_verified",
        payload={
            "rows": result.row_count,
            "checks": list(_checks(result)),
            "ok": True,
            "sql_sha256": sql_sha256,
            "result_sha256": result.sha256,
            "elapsed_ms": round(result.elapsed_ms, 3),
            "truncated": result.truncated,
            "database": database,
        },
    )
    content = _ENCODER.encode(sample) + b"\n"
    return ModuleOutcome(
        status="completed",
        events=(verified,),
        artifacts=(ArtifactChange(name=RESULT_SAMPLE, content=content),),
    )


def plan_verification_failure(
    sql: bytes, *, code: str, reason: str, database: str = ""
) -> ModuleOutcome:
    """The approved SQL did not run (an error, a timeout, another database than the session's):
    ``result_verified`` ok false with the reason, and the stage fails — it never completes on a
    failed verification."""
    sql_sha256 = hashlib.sha256(sql).hexdigest()
    verified = ProposedEvent(
        type="result_verified",
        payload={
            "rows": 0,
            "checks": [code],
            "ok": False,
            "sql_sha256": sql_sha256,
            "reason": reason,
            "database": database,
        },
    )
    return ModuleOutcome(
        status="failed",
        events=(verified,),
        failure=Failure(code=f"verification:{code}", message=reason),
    )


_DECODER = msgspec.json.Decoder(ResultSample)


def read_sample(data: bytes) -> ResultSample | None:
    """A ``result_sample.json`` back, or None when it is not one (display only)."""
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
