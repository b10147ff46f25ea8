"""``tht evaluator health / models``: is the routing evaluator's provider reachable, does it accept
our key, does it have the configured model? (spec 000 §15.5, §16.8; docs/llm.md)

Both commands call ``GET {baseUrl}/models`` only: no prompt is sent and no model is loaded. They
work whether or not the evaluator is enabled, for any profile (``--profile``), so a setup can be
checked before it is switched on; a cloud profile needs no opt-in here because nothing but the key
leaves the machine. Exit 0 when healthy, 6 when the provider is unreachable or refuses us, 2 for a
configuration error (the message names the file and field).

Typer and the standard library at top level; everything else inside the commands.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

app = typer.Typer(
    help="The routing evaluator's provider: health check and model listing.",
    no_args_is_help=True,
)

ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile",
        help="Provider profile (default: MCP_ROUTING_EVALUATOR_PROFILE, else activeProfile in "
        "routing.evaluator of the user config, else ollama-local).",
        show_default=False,
    ),
]
TimeoutOpt = Annotated[
    int, typer.Option("--timeout-ms", help="Deadline of the call.", min=50, max=60_000)
]


def evaluator_section() -> tuple[dict[str, Any], str]:
    """``routing.evaluator`` of the user config file ({} when absent) and the file's name."""
    from kernel.config_errors import load_yaml_mapping
    from kernel.errors import UsageError
    from tht.paths import user_config_file

    path = user_config_file()
    if not path.is_file():
        return {}, str(path)
    routing = load_yaml_mapping(path).get("routing") or {}
    if not isinstance(routing, dict):
        raise UsageError(f"{path}: routing: must be a mapping")
    section = routing.get("evaluator") or {}
    if not isinstance(section, dict):
        raise UsageError(f"{path}: routing.evaluator: must be a mapping")
    return section, str(path)


def resolve_cli_profile(profile_id: str | None) -> Any:
    """The profile to check: CLI > env > file > default, validated, key not required here."""
    import os

    from kernel.llm.settings import ProfileEnvNames, resolve_profile
    from modules.routing.evaluator.config import DEFAULT_PROFILE, ENV_PREFIX

    section, source = evaluator_section()
    names = ProfileEnvNames.with_prefix(ENV_PREFIX)
    env_layer = names.read(os.environ)
    chosen = profile_id or env_layer.profile or section.get("activeProfile") or DEFAULT_PROFILE
    profiles = section.get("profiles")
    return resolve_profile(
        str(chosen),
        file_profiles=profiles if isinstance(profiles, dict) else None,
        layers=[env_layer],
        env=os.environ,
        source=f"{source}: routing.evaluator",
        cloud_opt_in=True,
        require_key=False,
    )


@app.command("health")
def health(
    profile: ProfileOpt = None,
    timeout_ms: TimeoutOpt = 2000,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Reachability, authentication and presence of the configured model (GET /models)."""
    import os

    from kernel.errors import UnavailableError
    from kernel.llm.client import OpenAICompatibleClient

    inv = invocation(workspace, json_, debug)
    chosen = resolve_cli_profile(profile)
    result = OpenAICompatibleClient(env=os.environ).health(chosen, timeout_ms=timeout_ms)
    report = {
        "profile": chosen.id,
        "status": result.status,
        "reachable": result.reachable,
        "authenticated": result.authenticated,
        "model": chosen.model,
        "modelPresent": result.model_present,
        "modelCount": result.model_count,
        "latencyMs": result.latency_ms,
        "statusClass": result.status_class,
        "location": chosen.location,
        "remoteDataPolicy": chosen.remote_data_policy,
        "responseFormat": chosen.response_format,
        "baseUrl": chosen.base_url,
    }
    if not result.ok:
        raise UnavailableError(
            f"profile {chosen.id}: {result.status}"
            + (f" (HTTP {result.status_class})" if result.status_class else "")
            + (f"; model {chosen.model} is not listed" if result.status == "model-missing" else ""),
            details=report,
        )
    inv.emit(
        report,
        human=(
            f"{chosen.id}: ok — {chosen.model} is available at {chosen.base_url} "
            f"({result.latency_ms} ms; location {chosen.location}, {chosen.remote_data_policy})"
        ),
    )


@app.command("models")
def models(
    profile: ProfileOpt = None,
    timeout_ms: TimeoutOpt = 2000,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The model ids the profile's server lists (GET /models)."""
    import os

    from kernel.errors import UnavailableError
    from kernel.llm.client import OpenAICompatibleClient
    from kernel.llm.errors import ProviderError

    inv = invocation(workspace, json_, debug)
    chosen = resolve_cli_profile(profile)
    try:
        listing = OpenAICompatibleClient(env=os.environ).list_models(chosen, timeout_ms=timeout_ms)
    except ProviderError as err:
        where = f" (HTTP {err.status_class})" if err.status_class else ""
        raise UnavailableError(
            f"profile {chosen.id}: {err.kind}{where}",
            details={"profile": chosen.id, "status": err.kind, "statusClass": err.status_class},
        ) from None
    body = {
        "profile": chosen.id,
        "models": list(listing.model_ids),
        "configuredModel": chosen.model,
        "configuredModelPresent": chosen.model in listing.model_ids,
        "latencyMs": listing.latency_ms,
    }
    lines = [f"{'*' if m == chosen.model else ' '} {m}" for m in listing.model_ids]
    if not body["configuredModelPresent"]:
        lines.append(f"(configured model {chosen.model} is not listed)")
    inv.emit(body, human="\n".join(lines) if lines else "(no models listed)")
