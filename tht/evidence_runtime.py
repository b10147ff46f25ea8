"""Composition root of the Evidence module: its capability object, built for one command.

The only place that builds what the Evidence module is given (ARCHITECTURE §3.4, spec 003 §11):
paths and settings from ``workspace.yaml``, the clock, and — lazily, opened on first use and
closed when the command ends — the workspace's vector store, embedder and BM25 encoder
(``kernel.vectors.factory``) and the optional model restructuring (``kernel.llm``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from kernel.clock import Clock
    from kernel.trust import ReviewerSigner, Trust
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.embedder import Embedder
    from kernel.vectors.store import VectorStore
    from kernel.workspace import Workspace
    from kernel.workspace_settings import EvidenceSettingsView, WorkspaceSettingsView
    from modules.evidence import EvidencePaths
    from modules.evidence.capabilities import EvidenceCapabilities
    from modules.evidence.restructuring import ModelRestructurer

__all__ = ["EvidenceRuntime", "open_evidence", "progress_reporter"]

_T = TypeVar("_T")


@dataclass
class EvidenceRuntime:
    workspace: Workspace
    paths: EvidencePaths
    settings: EvidenceSettingsView  # the `evidence:` section of workspace.yaml
    workspace_settings: WorkspaceSettingsView
    clock: Clock  # the composition root's (THT_CLOCK-aware, as for sessions)
    nonce: Callable[[], str] | None = None  # deterministic under THT_CLOCK / THT_SEED
    # the caller's trust when it has one (a session command's kernel already verified the
    # reviewer registry): read again from the workspace only when it has none
    trust_of: Callable[[], Trust] | None = None
    _opened: dict[str, Any] = field(default_factory=dict)

    def _once(self, name: str, build: Callable[[], _T]) -> _T:
        if name not in self._opened:
            self._opened[name] = build()
        built: _T = self._opened[name]
        return built

    def vector_store(self) -> VectorStore:
        from kernel.vectors.factory import open_vector_store

        return self._once(
            "store", lambda: open_vector_store(self.workspace, self.workspace_settings)
        )

    def embedder(self) -> Embedder:
        """The workspace's embedder; ``openai`` resolves its profile from the built-in ones and
        ``evidence.profiles`` of the user config file (as the restructurer does)."""
        from kernel.vectors.factory import open_embedder

        def build() -> Embedder:
            profiles, source = (
                _user_evidence_profiles()
                if self.workspace_settings.evidence.embedder == "openai"
                else (None, "provider profiles")
            )
            return open_embedder(
                self.workspace, self.workspace_settings, profiles=profiles, profiles_source=source
            )

        return self._once("embedder", build)

    def bm25(self) -> Bm25Encoder:
        from kernel.vectors.factory import bm25_encoder

        stemming: Literal["first", "per_language"] = (
            "first" if self.settings.bm25_stemming == "first" else "per_language"
        )
        return self._once("bm25", lambda: bm25_encoder(self.workspace_settings, stemming=stemming))

    def restructurer(self) -> ModelRestructurer | None:
        """The optional model restructuring (``evidence.restructure_profile``), else None.

        The profile is a built-in one or one defined under ``evidence.profiles`` of the user
        config file (keys only by environment variable name); the transport is
        ``kernel.llm``'s OpenAI-compatible client: one call per source, never retried.
        """
        profile_id = getattr(self.settings, "restructure_profile", None)
        if not profile_id:
            return None
        import os

        from kernel.llm.client import ChatMessage, OpenAICompatibleClient
        from kernel.llm.settings import resolve_profile
        from modules.evidence.restructuring import ModelRestructurer

        profiles, source = _user_evidence_profiles()
        profile = resolve_profile(
            str(profile_id),
            file_profiles=profiles,
            env=os.environ,
            source=source,
            cloud_opt_in=bool(self.settings.restructure_cloud_opt_in),
            opt_in_hint="set evidence.restructure_cloud_opt_in: true in workspace.yaml",
        )
        client = OpenAICompatibleClient(env=os.environ)
        timeout_ms = int(self.settings.restructure_timeout_ms)

        def chat(system: str, user: str, schema: dict[str, Any]) -> str:
            answer = client.chat(
                profile,
                [ChatMessage("system", system), ChatMessage("user", user)],
                max_tokens=4000,
                timeout_ms=timeout_ms,
                json_schema=schema if profile.response_format == "json-schema" else None,
                schema_name="evidence_units",
            )
            return answer.raw_text

        return ModelRestructurer(chat=chat, describe=f"profile {profile.id}")

    def trust(self) -> Trust:
        """The workspace's trust (signed mode, the reviewer registry's signature check), read
        once per command: a signed workspace's generations need a reviewer's approval."""
        if self.trust_of is not None:
            return self.trust_of()
        from tht.composition import trust_of

        return self._once("trust", lambda: trust_of(self.workspace))

    def capabilities(
        self,
        progress: Callable[[str, int, int], None] | None = None,
        *,
        approver: ReviewerSigner | None = None,
    ) -> EvidenceCapabilities:
        from modules.evidence.capabilities import EvidenceCapabilities, EvidenceSettings
        from modules.evidence.fusion import fusion_settings

        fusion = self.settings.fusion
        extra: dict[str, Any] = {} if self.nonce is None else {"nonce": self.nonce}
        return EvidenceCapabilities(
            paths=self.paths,
            settings=EvidenceSettings(
                max_chunk_chars=self.settings.max_chunk_chars,
                rrf_k=self.settings.rrf_k,
                fusion=fusion_settings(
                    fusion.method,
                    # plain RRF keeps the workspace's evidence.rrf_k; weighted has its own k
                    rrf_k=fusion.k if fusion.method == "weighted" else self.settings.rrf_k,
                    dense_weight=fusion.dense_weight,
                    bm25_weight=fusion.bm25_weight,
                    cross_lingual_bm25=fusion.cross_lingual_bm25,
                    languages=tuple(self.workspace_settings.languages),
                    translate_bm25=fusion.translate_bm25,
                    translate_terms=fusion.translate_terms,
                    align_vocabulary=fusion.align_vocabulary,
                    align_min_cosine=fusion.align_min_cosine,
                ),
            ),
            clock=self.clock.now,
            vector_store=self.vector_store,
            embedder=self.embedder,
            bm25=self.bm25,
            restructurer=self.restructurer,
            progress=progress,
            approval_required=self.trust().signed,
            check_signature=self.trust().check_signature,
            approver=approver,
            **extra,
        )

    def active_generation(self) -> dict[str, object] | None:
        from modules.evidence.generations import GenerationStateError, load_generation_state

        try:
            state = load_generation_state(self.paths.state_dir)
        except GenerationStateError as err:
            return {"id": None, "error": str(err)}
        return state.active.to_json() if state.active is not None else None

    def approval_problem(self) -> str | None:
        """Why the active generation would be refused in this signed workspace (no reviewer's
        approval, or one that does not verify); None when there is none to refuse or the
        workspace is unsigned."""
        from modules.evidence.approval import ApprovalProblem, check_approval
        from modules.evidence.generations import GenerationStateError, load_generation_state

        trust = self.trust()
        if not trust.signed:
            return None
        try:
            active = load_generation_state(self.paths.state_dir).active
        except GenerationStateError:
            return None  # reported as unreadable by the caller
        if active is None:
            return None
        try:
            check_approval(active, trust.check_signature)
        except ApprovalProblem as err:
            return err.message
        return None

    def close(self) -> None:
        for name in ("store", "embedder"):
            closer = getattr(self._opened.pop(name, None), "close", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    closer()


def open_evidence(root: Path, *, trust: Callable[[], Trust] | None = None) -> EvidenceRuntime:
    """The Evidence module's runtime for one command, with the composition root's clock and,
    when the run is deterministic (``THT_CLOCK`` or ``THT_SEED``), a nonce from the seed, so
    generation ids and ``created_at`` repeat from run to run."""
    import os

    from kernel.workspace import open_workspace
    from modules.evidence import EvidencePaths
    from tht.composition import clock_from_env

    ws = open_workspace(root)
    settings = ws.settings()
    nonce = None
    if os.environ.get("THT_CLOCK") or os.environ.get("THT_SEED"):
        seeded = f"seed:{os.environ.get('THT_SEED', '')}"

        def nonce() -> str:
            return seeded

    return EvidenceRuntime(
        workspace=ws,
        paths=EvidencePaths.of(ws),
        settings=settings.evidence,
        workspace_settings=settings,
        clock=clock_from_env(ws.state_dir),
        nonce=nonce,
        trust_of=trust,
    )


@contextlib.contextmanager
def progress_reporter(*, enabled: bool, label: str) -> Iterator[Callable[..., None] | None]:
    """A rich progress bar on stderr for long runs (never under --json or off a terminal).

    The callback takes ``(item)`` or ``(stage, done, total)``.
    """
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(f"{label} {{task.description}}"),
        BarColumn(),  # pulses while the total is unknown
        MofNCompleteColumn(),  # "3/10"; only the count until the total is known, never "/None"
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("", total=None)

        def report(item: str, done: int | None = None, total: int | None = None) -> None:
            if done is None:
                progress.update(task, description=item, advance=1)
            else:
                progress.update(task, description=item, completed=done, total=total)

        yield report


def _user_evidence_profiles() -> tuple[dict[str, Any] | None, str]:
    """``evidence.profiles`` of the user config file (None when absent) and where it came from."""
    from kernel.config_errors import load_yaml_mapping
    from kernel.errors import UsageError
    from tht.paths import user_config_file

    path = user_config_file()
    if not path.is_file():
        return None, str(path)
    section = load_yaml_mapping(path).get("evidence") or {}
    if not isinstance(section, dict):
        raise UsageError(f"{path}: evidence: must be a mapping")
    profiles = section.get("profiles")
    if profiles is not None and not isinstance(profiles, dict):
        raise UsageError(f"{path}: evidence.profiles: must be a mapping")
    return profiles, f"{path}: evidence"
