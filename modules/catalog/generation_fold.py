"""The fold's rules for Description Generation Runs (glossary "Description Generation Run"),
(modules/catalog/fold.py dispatches to them). Pure; a rule that refuses an entry raises
:class:`~modules.catalog.descriptions.DescriptionRejected` (the fold records a problem, changes
nothing).

- :func:`run_started` — a run starts only while no other is active, with an id of its own.
- :func:`run_tallied` — a run's Generated Description (``description_generated`` with a run)
  only while that run is active; counted as generated or non-generatable as it arrives, so an
  interrupted run still shows what it saved.
- :func:`run_finished` — the active run's end: its counts agree with its own entries and
  account for every target it requested.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from kernel import catalog_events as cev
from modules.catalog.descriptions import DescriptionRejected
from modules.catalog.records import DescriptionGenerationRun

__all__ = ["run_finished", "run_started", "run_tallied"]

_Runs = Mapping[str, DescriptionGenerationRun]


def run_started(
    runs: _Runs, active: str | None, event: cev.DescriptionGenerationStarted
) -> DescriptionGenerationRun:
    p = event.payload
    if active is not None:
        raise DescriptionRejected(
            "run", f"generation run {active} is still active; {p.run} cannot start"
        )
    if p.run in runs:
        raise DescriptionRejected("run", f"generation run {p.run} already exists")
    return DescriptionGenerationRun(
        id=p.run,
        status="active",
        profile=p.profile,
        model=p.model,
        scope=p.scope,
        missing_only=p.missing_only,
        language=p.language,
        requested=p.requested,
        started_seq=event.seq,
        started_ts=event.ts,
    )


def run_tallied(
    runs: _Runs, active: str | None, run: str | None, non_generatable: bool
) -> DescriptionGenerationRun | None:
    """The run counting a ``description_generated`` (None: not a run's)."""
    if run is None:
        return None
    found = runs.get(run)
    if found is None or active != run:
        raise DescriptionRejected("run", f"{run} is not the active Description Generation Run")
    if non_generatable:
        return msgspec.structs.replace(found, non_generatable=found.non_generatable + 1)
    return msgspec.structs.replace(found, generated=found.generated + 1)


def run_finished(
    runs: _Runs, active: str | None, event: cev.DescriptionGenerationFinished
) -> DescriptionGenerationRun:
    p = event.payload
    found = runs.get(p.run)
    if found is None or active != p.run:
        raise DescriptionRejected("run", f"{p.run} is not the active Description Generation Run")
    if (p.generated, p.non_generatable) != (found.generated, found.non_generatable):
        raise DescriptionRejected(
            "run",
            f"generation run {p.run} reports {p.generated} generated and "
            f"{p.non_generatable} non-generatable; its entries say {found.generated} and "
            f"{found.non_generatable}",
        )
    total = p.generated + p.non_generatable + p.failed + p.skipped
    if total != found.requested or min(p.failed, p.skipped) < 0:
        raise DescriptionRejected(
            "run", f"generation run {p.run} accounts for {total} of {found.requested} targets"
        )
    return msgspec.structs.replace(
        found,
        status=p.status,
        failed=p.failed,
        skipped=p.skipped,
        reason=p.reason,
        ended_seq=event.seq,
        ended_ts=event.ts,
    )
