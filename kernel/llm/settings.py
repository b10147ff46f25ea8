"""Resolving and validating a provider profile (spec 000 §17.1, §17.3, §17.5).

Precedence, strongest first: command-line overrides > environment > user file > built-in defaults.
The kernel never reads the environment or a path on its own: the caller passes the user file's
``profiles`` mapping, the environment mapping and the *names* of the variables that override a
profile (:class:`ProfileEnvNames`), so routing (``MCP_ROUTING_EVALUATOR_*``), evidence and the
IntentParser each keep their own names over the same mechanism.

Validation (§17.5) raises :class:`kernel.errors.UsageError` whose message names the source and the
field path (``profiles.ollama-cloud.baseUrl: ...``). It never includes a secret: a key can only be
*named* (``apiKeyEnv``), and a field that looks like a key in clear is refused by name.

Pydantic is imported on first use only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kernel.config_errors import usage_error_from_validation
from kernel.errors import UsageError
from kernel.llm.profiles import (
    BUILTIN_PROFILES,
    ModelMetadata,
    ProviderProfile,
    classify_location,
    is_loopback_url,
    policy_for_location,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "ProfileEnvNames",
    "ProfileOverrides",
    "api_key_present",
    "profile_ids",
    "resolve_profile",
    "validate_base_url",
]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_PLACEHOLDER = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,15}$")
_SECRET_FIELD = re.compile(
    r"(?i)^(api[_-]?key|apikey|key|token|secret|password|passwd|authorization|bearer|"
    r"client[_-]?secret|access[_-]?token|auth[_-]?token|credentials?)$"
)


@dataclass(frozen=True)
class ProfileOverrides:
    """One precedence layer over the file's profile: the non-sensitive fields a flag or a variable
    may change. ``None`` means "not given at this layer"."""

    profile: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    response_format: str | None = None

    def as_fields(self) -> dict[str, str]:
        """The given fields in the file's camelCase names (``profile`` excluded)."""
        names = {
            "base_url": "baseUrl",
            "model": "model",
            "api_key_env": "apiKeyEnv",
            "response_format": "responseFormat",
        }
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in names and value is not None and value != "":
                out[names[f.name]] = value
        return out


@dataclass(frozen=True)
class ProfileEnvNames:
    """Names of the environment variables that override a profile, e.g. routing's §17.3 names."""

    profile: str
    base_url: str
    model: str
    api_key_env: str
    response_format: str

    @classmethod
    def with_prefix(cls, prefix: str) -> ProfileEnvNames:
        """``MCP_ROUTING_EVALUATOR_`` → ``..._PROFILE``, ``..._BASE_URL``, ``..._MODEL``, ..."""
        return cls(
            profile=f"{prefix}PROFILE",
            base_url=f"{prefix}BASE_URL",
            model=f"{prefix}MODEL",
            api_key_env=f"{prefix}API_KEY_ENV",
            response_format=f"{prefix}RESPONSE_FORMAT",
        )

    def read(self, env: Mapping[str, str]) -> ProfileOverrides:
        """The override layer the environment gives (empty values count as unset)."""

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        return ProfileOverrides(
            profile=get(self.profile),
            base_url=get(self.base_url),
            model=get(self.model),
            api_key_env=get(self.api_key_env),
            response_format=get(self.response_format),
        )


def profile_ids(file_profiles: Mapping[str, Any] | None) -> list[str]:
    """Every profile id known: the built-ins, then the user file's own, in file order."""
    ids = list(BUILTIN_PROFILES)
    for key in file_profiles or {}:
        if key not in ids:
            ids.append(str(key))
    return ids


def api_key_present(profile: ProviderProfile, env: Mapping[str, str]) -> bool:
    """Whether the variable named by ``apiKeyEnv`` holds a non-empty value."""
    return bool(profile.api_key_env and env.get(profile.api_key_env, "").strip())


def validate_base_url(url: str) -> str | None:
    """The problem with ``url`` as an OpenAI-compatible base URL, or ``None`` when it is fine.

    It must be http(s), have a host, no user:password, no query or fragment, and a path that ends
    in ``/v1`` (``http://127.0.0.1:11434/v1``, ``https://gateway.example/openai/v1``).
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "must not contain credentials (user:password@); name a variable in apiKeyEnv"
    if parts.query or parts.fragment:
        return "must not have a query string or fragment"
    if port is not None and not 0 < port < 65536:
        return "has an invalid port"
    if not parts.path.rstrip("/").endswith("/v1"):
        return "its path must end in /v1 (the OpenAI-compatible root)"
    return None


def _models() -> type[BaseModel]:
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

        @model_validator(mode="before")
        @classmethod
        def _no_secret_fields(cls, data: Any) -> Any:
            if isinstance(data, Mapping):
                for key in data:
                    if isinstance(key, str) and _SECRET_FIELD.match(key):
                        raise ValueError(
                            f"field {key!r} would hold a secret in clear: secrets never go in "
                            "this file; put the key in an environment variable and name that "
                            "variable in apiKeyEnv"
                        )
            return data

    class Metadata(_Strict):
        family: str | None = Field(default=None, max_length=80)
        parameterClass: str | None = Field(default=None, max_length=40)
        variant: str | None = Field(default=None, pattern="^(instruct|reasoning|unknown)$")
        quantization: str | None = Field(default=None, max_length=80)
        evaluatorProfileVersion: str | None = Field(default=None, max_length=120)

    class Profile(_Strict):
        protocol: str = Field(pattern="^openai-chat-completions$")
        family: str = Field(pattern="^(ollama|lmstudio|custom)$")
        location: str = Field(pattern="^(local|lan|cloud)$")
        baseUrl: str = Field(min_length=1, max_length=2000)
        model: str = Field(min_length=1, max_length=200, pattern=r"^[^\s\x00-\x1f]+$")
        modelMetadata: Metadata = Field(default_factory=Metadata)
        apiKeyEnv: str | None = Field(default=None, pattern=_ENV_NAME.pattern)
        apiKeyPlaceholder: str | None = Field(default=None, pattern=_PLACEHOLDER.pattern)
        apiKeyRequired: bool | None = None
        responseFormat: str = Field(pattern="^(json-schema|json-object|prompt-json)$")
        supportedResponseFormats: list[str] = Field(
            default_factory=lambda: ["json-object", "prompt-json"], min_length=1
        )
        supportsModelListing: bool = True
        supportsUsage: bool = True
        remoteDataPolicy: str = Field(pattern="^(local-only|internal-network|external-cloud)$")

        @model_validator(mode="after")
        def _coherent(self) -> Profile:
            problem = validate_base_url(self.baseUrl)
            if problem:
                raise ValueError(f"baseUrl {problem}")
            for fmt in self.supportedResponseFormats:
                if fmt not in ("json-schema", "json-object", "prompt-json"):
                    raise ValueError(f"supportedResponseFormats: unknown format {fmt!r}")
            if self.responseFormat not in self.supportedResponseFormats:
                raise ValueError(
                    f"responseFormat {self.responseFormat!r} is not declared in "
                    f"supportedResponseFormats {self.supportedResponseFormats}"
                )
            expected = policy_for_location(self.location)  # type: ignore[arg-type]
            if self.remoteDataPolicy != expected:
                raise ValueError(
                    f"remoteDataPolicy {self.remoteDataPolicy!r} does not match location "
                    f"{self.location!r} (expected {expected!r})"
                )
            if self.location == "local" and not is_loopback_url(self.baseUrl):
                raise ValueError(
                    "location 'local' needs a loopback baseUrl (127.0.0.1, localhost, ::1); "
                    "a server elsewhere on the network is location 'lan'"
                )
            return self

    return Profile


def resolve_profile(
    profile_id: str,
    *,
    file_profiles: Mapping[str, Any] | None,
    layers: Sequence[ProfileOverrides] = (),
    env: Mapping[str, str],
    source: str = "configuration",
    cloud_opt_in: bool = False,
    opt_in_hint: str = "opt in to cloud profiles explicitly",
    require_key: bool = True,
) -> ProviderProfile:
    """Build and validate profile ``profile_id``.

    ``file_profiles`` is the user file's ``profiles`` mapping (camelCase entries; an entry whose id
    is a built-in is merged over the built-in field by field). ``layers`` are applied in order,
    weakest first (environment, then command line). ``env`` is read only to check that a required
    key is present. A profile classified ``cloud`` is refused unless ``cloud_opt_in``.
    """
    from pydantic import ValidationError

    path_root = f"profiles.{profile_id}"
    base = dict(BUILTIN_PROFILES.get(profile_id, {}))
    from_file = (file_profiles or {}).get(profile_id)
    if from_file is not None and not isinstance(from_file, Mapping):
        raise UsageError(f"{source}: {path_root}: must be a mapping")
    if not base and from_file is None:
        known = ", ".join(profile_ids(file_profiles))
        raise UsageError(f"{source}: unknown profile {profile_id!r} (known: {known})")
    merged: dict[str, Any] = {**base, **dict(from_file or {})}
    if "modelMetadata" in base and from_file and isinstance(from_file.get("modelMetadata"), dict):
        merged["modelMetadata"] = {**base["modelMetadata"], **from_file["modelMetadata"]}
    for layer in layers:
        changed = layer.as_fields()
        if "model" in changed and changed["model"] != merged.get("model"):
            merged.pop("modelMetadata", None)  # the metadata described another model
        merged.update(changed)

    try:
        model = _models().model_validate(merged)
    except ValidationError as err:
        errors = [
            {**e, "loc": (*path_root.split(".", 1), *tuple(e.get("loc", ())))}
            for e in err.errors(include_input=False, include_url=False)
        ]
        raise usage_error_from_validation(source, errors) from err

    data = model.model_dump()
    meta = data["modelMetadata"]
    declared = data["location"]
    location = classify_location(data["family"], declared, data["model"])
    required = data["apiKeyRequired"]
    if required is None:
        required = declared == "cloud" and not is_loopback_url(data["baseUrl"])
    profile = ProviderProfile(
        id=profile_id,
        family=data["family"],
        location=location,
        declared_location=declared,
        base_url=data["baseUrl"].rstrip("/"),
        model=data["model"],
        response_format=data["responseFormat"],
        supported_response_formats=tuple(data["supportedResponseFormats"]),
        remote_data_policy=policy_for_location(location),
        api_key_env=data["apiKeyEnv"],
        api_key_placeholder=data["apiKeyPlaceholder"],
        api_key_required=bool(required),
        supports_model_listing=data["supportsModelListing"],
        supports_usage=data["supportsUsage"],
        model_metadata=ModelMetadata(
            family=meta["family"],
            parameter_class=meta["parameterClass"],
            variant=meta["variant"],
            quantization=meta["quantization"],
            evaluator_profile_version=meta["evaluatorProfileVersion"],
        ),
    )
    if profile.api_key_required and require_key:
        if not profile.api_key_env:
            raise UsageError(f"{source}: {path_root}.apiKeyEnv: this profile needs a key")
        if not api_key_present(profile, env):
            raise UsageError(
                f"{source}: {path_root}.apiKeyEnv: the variable {profile.api_key_env} "
                "is not set (the key is read from it)"
            )
    if profile.location == "cloud" and not cloud_opt_in:
        why = " (its model is served from Ollama's cloud)" if profile.reclassified_cloud else ""
        raise UsageError(
            f"{source}: {path_root}: sends prompts off this machine{why}; {opt_in_hint}"
        )
    return profile
