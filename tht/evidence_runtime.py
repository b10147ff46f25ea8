"""Composition root of the Evidence module: settings, paths and capabilities for the commands.

The only place that builds what the Evidence module is given (ARCHITECTURE §3.4, spec 003 §11):
its paths, its settings from ``workspace.yaml``, and — as they land — the vector store, the
embedder, the clock and the model transport, each behind the module's own capability object.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EvidenceRuntime", "open_evidence", "progress_reporter"]


@dataclass(frozen=True)
class EvidenceRuntime:
    paths: Any  # modules.evidence.EvidencePaths
    settings: Any  # the `evidence:` section of workspace.yaml
    workspace_settings: Any

    def restructurer(self) -> Any:
        """The optional model restructuring; None until a model is configured."""
        return None

    def active_generation(self) -> dict[str, object] | None:
        return None


def open_evidence(root: Path) -> EvidenceRuntime:
    from kernel.workspace import open_workspace
    from modules.evidence import EvidencePaths

    ws = open_workspace(root)
    settings = ws.settings()
    return EvidenceRuntime(
        paths=EvidencePaths.of(ws), settings=settings.evidence, workspace_settings=settings
    )


@contextlib.contextmanager
def progress_reporter(*, enabled: bool, label: str) -> Iterator[Callable[[str], None] | None]:
    """A rich progress line on stderr for long runs (never under --json or off a terminal)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn(f"{label} {{task.description}}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("", total=None)

        def report(item: str) -> None:
            progress.update(task, description=item, advance=1)

        yield report
