"""``tht intent parse QUESTION``: the IntentParser alone (ARCHITECTURE §6, docs/disambiguation.md).

``{"parser", "dimensions": [...], "period", "clarify"}`` and beside them ``measures``,
``periods``, ``assumptions``, ``missing``, ``unresolved``, ``fallback_reason`` and ``question``
(the text the parser read). The DomainProfile is ``domain:`` of ``workspace.yaml``; today is the
composition root's clock (``THT_CLOCK=fixed:…`` makes it deterministic).

The SecurityGate runs first, on the question as given: when it refuses, the parser reads the
masked question, ``clarify`` is ``out_of_scope_entity`` and no model is called, so a refused
entity never reaches a provider nor this output.

``--parser llm`` uses a provider profile (docs/llm.md) chosen by ``--profile``, else
``THT_INTENT_PROFILE``, else ``disambiguation.intent.activeProfile`` of the user config file
(``profiles``, ``cloudOptIn``, ``timeoutMs`` beside it; ``THT_INTENT_BASE_URL`` / ``_MODEL`` /
``_API_KEY_ENV`` / ``_RESPONSE_FORMAT`` override the profile's fields). Without one, or on any
failure, the rules answer and ``fallback_reason`` says why. Exit 0 whatever the clarify mode;
2 for bad options or a bad ``workspace.yaml``, 3 outside a workspace. Nothing is written
(``THT_CLOCK``'s own step file aside).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, invocation

if TYPE_CHECKING:
    from modules.disambiguation.intent import Intent, IntentParser

app = typer.Typer(
    name="intent",
    help="The IntentParser: the dimensions, measures and period a question asks for.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

ENV_PREFIX = "THT_INTENT_"
DEFAULT_TIMEOUT_MS = 4000


@app.command("parse")
def parse(
    question: Annotated[str, typer.Argument(help="The question to parse.")],
    parser: Annotated[
        str, typer.Option("--parser", help="rules (offline, the default) | llm.")
    ] = "rules",
    profile: Annotated[
        str | None,
        typer.Option("--profile", help="Provider profile for --parser llm.", show_default=False),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Parse QUESTION into dimensions, measures, period and the clarify mode. Exit 0."""
    from kernel.errors import UsageError
    from kernel.workspace import open_workspace
    from modules.disambiguation import SecurityGate
    from tht.composition import clock_from_env

    inv = invocation(workspace, json_, debug)
    if not question.strip():
        raise UsageError("QUESTION is empty")
    if parser not in ("rules", "llm"):
        raise UsageError(f"--parser {parser!r}: expected rules or llm")
    if profile is not None and parser != "llm":
        raise UsageError("--profile chooses the model of --parser llm; add --parser llm")
    ws = open_workspace(inv.workspace)
    domain = ws.settings().domain_profile()
    verdict = SecurityGate(domain).check(question)
    chosen = _rules() if parser == "rules" else _llm(profile, inv.note)
    intent = chosen.parse(
        verdict.masked, domain, clock_from_env(ws.state_dir), out_of_scope_entity=verdict.refused
    )
    body = {**intent.to_json(), "question": verdict.masked}
    inv.emit(body, _human(intent))


def _rules() -> IntentParser:
    from modules.disambiguation.intent_rules import RuleIntentParser

    return RuleIntentParser()


def _intent_section() -> tuple[Mapping[str, Any], str]:
    """``disambiguation.intent`` of the user config file ({} when absent) and its source name."""
    from kernel.config_errors import load_yaml_mapping
    from kernel.errors import UsageError
    from tht.paths import user_config_file

    path = user_config_file()
    if not path.is_file():
        return {}, f"{path}: disambiguation.intent"
    section: Any = load_yaml_mapping(path).get("disambiguation") or {}
    section = section.get("intent") if isinstance(section, dict) else None
    if section is not None and not isinstance(section, dict):
        raise UsageError(f"{path}: disambiguation.intent: must be a mapping")
    return section or {}, f"{path}: disambiguation.intent"


def _llm(profile_id: str | None, note: Any) -> IntentParser:
    """The LLM parser with its provider, or without one and the reason (it then falls back)."""
    import os

    from kernel.errors import ThtError
    from kernel.llm.client import OpenAICompatibleClient
    from kernel.llm.settings import ProfileEnvNames, resolve_profile
    from modules.disambiguation.intent_llm import LLMIntentParser

    try:
        section, source = _intent_section()
        env_layer = ProfileEnvNames.with_prefix(ENV_PREFIX).read(os.environ)
        chosen = profile_id or env_layer.profile or section.get("activeProfile")
        if not chosen:
            return LLMIntentParser(client=None, provider=None, unavailable="no_profile")
        opt_in = section.get("cloudOptIn") is True or os.environ.get(
            f"{ENV_PREFIX}CLOUD_OPT_IN", ""
        ).strip().lower() in ("1", "true", "yes")
        profiles = section.get("profiles")
        provider = resolve_profile(
            str(chosen),
            file_profiles=profiles if isinstance(profiles, dict) else None,
            layers=[env_layer],
            env=os.environ,
            source=source,
            cloud_opt_in=opt_in,
            opt_in_hint=(
                f"set disambiguation.intent.cloudOptIn: true (or {ENV_PREFIX}CLOUD_OPT_IN=true)"
            ),
        )
        timeout_ms = int(os.environ.get(f"{ENV_PREFIX}TIMEOUT_MS") or section.get("timeoutMs") or 0)
    except (ThtError, ValueError) as err:
        note(f"warning: the LLM parser is not available, the rules answer: {err}")
        return LLMIntentParser(client=None, provider=None, unavailable="profile_invalid")
    return LLMIntentParser(
        client=OpenAICompatibleClient(env=os.environ),
        provider=provider,
        timeout_ms=timeout_ms if timeout_ms > 0 else DEFAULT_TIMEOUT_MS,
    )


def _human(intent: Intent) -> str:
    def mention(m: Any) -> str:
        value = f" = {m.value}" if m.value else ""
        return f'{m.name} ("{m.matched}"{value})'

    lines = [f"parser: {intent.parser}"]
    if intent.fallback_reason:
        lines[0] += f" (fallback: {intent.fallback_reason})"
    for p in intent.periods:
        relative = ", relative" if p.relative else ""
        lines.append(f'period: {p.start} to {p.last_day} ({p.grain}{relative}, "{p.text}")')
    lines += [f'unresolved period: "{text}"' for text in intent.unresolved]
    if intent.dimensions:
        lines.append("dimensions: " + ", ".join(mention(m) for m in intent.dimensions))
    if intent.measures:
        lines.append("measures: " + ", ".join(mention(m) for m in intent.measures))
    if intent.missing:
        lines.append("missing: " + ", ".join(intent.missing))
    lines += [f"assumption: {a}" for a in intent.assumptions]
    lines.append(f"clarify: {intent.clarify}")
    return "\n".join(lines)
