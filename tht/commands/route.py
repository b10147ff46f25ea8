"""``tht route``: catalog build, explain, batch and eval (ARCHITECTURE §6; spec 000 §23, §26–27).

Typer and the standard library at top level; the routing module and rich inside the commands.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tht.options import DebugOpt, JsonOpt, WorkspaceOpt, dumps, invocation

app = typer.Typer(
    help="Skill/MCP routing: catalog build, explain, batch, eval.", no_args_is_help=True
)
catalog_app = typer.Typer(help="The compiled routing catalog.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")

CatalogOpt = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        help="Compiled catalog (default: $THT_ROUTING_CATALOG, else routing.catalog in the user "
        "config).",
        show_default=False,
    ),
]


def _routing_settings() -> dict[str, Any]:
    """The ``routing:`` section of the user config, validated (errors name file and field)."""
    from pydantic import BaseModel, ConfigDict, ValidationError

    from kernel.config_errors import load_yaml_mapping, usage_error_from_validation
    from tht.paths import user_config_file

    class Telemetry(BaseModel):
        model_config = ConfigDict(extra="forbid")
        enabled: bool = True

    class RoutingSettings(BaseModel):
        model_config = ConfigDict(extra="allow")  # routing.evaluator is owned by the evaluator
        catalog: str | None = None
        telemetry: Telemetry = Telemetry()
        semantic: dict[str, Any] | None = None

    path = user_config_file()
    if not path.is_file():
        return {}
    data = load_yaml_mapping(path).get("routing") or {}
    if not isinstance(data, dict):
        from kernel.errors import UsageError

        raise UsageError(f"{path}: routing: must be a mapping")
    try:
        RoutingSettings.model_validate(data)
    except ValidationError as err:
        errors = [{**e, "loc": ("routing", *e["loc"])} for e in err.errors()]
        raise usage_error_from_validation(path, errors) from err
    if data.get("semantic") is not None:
        from kernel.errors import UsageError
        from modules.routing.semantic import SemanticSettings

        try:
            SemanticSettings.from_section(data["semantic"])
        except ValueError as err:
            raise UsageError(f"{path}: {err}") from err
    return data


SemanticOpt = Annotated[
    bool,
    typer.Option(
        "--semantic",
        help="Also ask the semantic rescue on weak matches (skill vectors beside the catalog; "
        "routing.semantic of the user config, else the model in-process).",
    ),
]


def _semantic(enabled: bool, pack: Any) -> Any:
    """The semantic rescue plug for ``pack`` when ``--semantic`` is given, else None; a missing or
    foreign vectors file is a usage error here (the hook only skips the rescue)."""
    if not enabled:
        return None
    from kernel.errors import UsageError
    from modules.routing.semantic import (
        SemanticSettings,
        SemanticUnavailable,
        read_vectors,
        semantic_plug,
        sidecar_path,
    )

    settings = SemanticSettings.from_section(_routing_settings().get("semantic"))
    vectors_file = sidecar_path(pack.path)
    try:
        loaded = read_vectors(vectors_file, pack.fingerprint)
    except SemanticUnavailable as err:
        raise UsageError(
            f"{vectors_file}: {err} (build the catalog with `tht route catalog build --semantic`)"
        ) from err

    def warn(reason: str) -> None:
        sys.stderr.write(f"note: no semantic rescue for a prompt: {reason}\n")

    return semantic_plug(settings, vectors_file, pack.fingerprint, on_skip=warn, vectors=loaded)


def configured_catalog(option: Path | None = None) -> str | None:
    """The routing catalog a command reads, as the hook does: ``--catalog``, else
    ``$THT_ROUTING_CATALOG``, else ``routing.catalog`` of the user config (None: none)."""
    path: str | None = str(option) if option else os.environ.get("THT_ROUTING_CATALOG")
    if not path:
        configured = _routing_settings().get("catalog")
        path = str(Path(configured).expanduser()) if isinstance(configured, str) else None
    return path


def _catalog(option: Path | None) -> Any:
    from kernel.errors import UsageError
    from modules.routing.pack import CatalogError, open_pack, verify_pack

    path = configured_catalog(option)
    if not path:
        raise UsageError(
            "no routing catalog: pass --catalog FILE, set $THT_ROUTING_CATALOG or routing.catalog "
            "in the user config (build one with `tht route catalog build`)"
        )
    try:
        pack = open_pack(path)
    except CatalogError as err:
        raise UsageError(str(err)) from err
    if not verify_pack(pack):  # the hook skips this (its budget); a command never does
        raise UsageError(
            f"{path}: its content does not match its fingerprint (edited or damaged since it "
            "was built): rebuild it with `tht route catalog build`"
        )
    return pack


@catalog_app.command("build")
def catalog_build(
    skills: Annotated[Path, typer.Option("--skills", help="Folder of <skill>/SKILL.md.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the compiled catalog.")],
    mcp: Annotated[
        list[Path] | None, typer.Option("--mcp", help="MCP manifest (spec §11.2); repeatable.")
    ] = None,
    overrides: Annotated[
        Path | None, typer.Option("--overrides", help="Semantic overrides by id (spec §10).")
    ] = None,
    agents: Annotated[
        Path | None, typer.Option("--agents", help="Agents source (work package 5A).")
    ] = None,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Also write the skill vectors of the semantic rescue beside the catalog "
            "(<out>.semantic.json; the model runs in-process).",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Compile skills, overrides, MCP manifests and agents into a fingerprinted catalog."""
    inv = invocation(workspace, json_, debug)
    from modules.routing.catalog_build import build_catalog
    from modules.routing.sources import load_agents, load_mcp_manifest, load_overrides, read_skills

    sources = read_skills(skills)
    data, report = build_catalog(
        sources,
        overrides=load_overrides(overrides) if overrides else None,
        overrides_name=str(overrides) if overrides else "overrides",
        manifests=[(str(path), load_mcp_manifest(path)) for path in mcp or []],
        agents=(str(agents), load_agents(agents)) if agents else None,
    )
    from kernel.atomic import atomic_write

    vectors = None
    if semantic:
        from modules.routing.semantic import build_vectors

        vectors = build_vectors(report.fingerprint, sources)
    atomic_write(out, data, durable=True)
    body = {"catalog": str(out), **report.to_json()}
    if vectors is not None:
        from modules.routing.semantic import sidecar_path

        atomic_write(Path(sidecar_path(str(out))), vectors, durable=True)
        body["semanticVectors"] = sidecar_path(str(out))
    for skill_id in report.missing_summary:
        inv.note(f"note: skill {skill_id} has no semanticSummary (add one in the overrides)")
    inv.emit(
        body,
        human=(
            f"{out}: {report.targets['skill']} skills, {report.targets['mcp']} MCP servers, "
            f"{report.targets['agent']} agents, {report.index_keys} index keys\n"
            f"fingerprint {report.fingerprint}"
        ),
    )


@app.command("explain")
def explain(
    prompt: Annotated[str, typer.Argument(help="The prompt to route.")],
    catalog: CatalogOpt = None,
    cwd: Annotated[
        Path | None, typer.Option("--cwd", help="Working folder for the context signal.")
    ] = None,
    semantic: SemanticOpt = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Every diagnostic: candidates, scores, signals, gate verdict, evaluator status, hints."""
    inv = invocation(workspace, json_, debug)
    from modules.routing.pipeline import run_routing
    from tht.hooks.route_hook import _context_extensions

    pack = _catalog(catalog)
    outcome = run_routing(
        prompt,
        pack,
        context_extensions=_context_extensions(str(cwd)) if cwd else (),
        semantic=_semantic(semantic, pack),
    )
    data = {"catalog": pack.fingerprint, **outcome.explain()}
    if inv.json:
        inv.emit(data)
        return
    _explain_table(data)


def _explain_table(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    routing = data["routing"]
    table = Table(title=f"candidates (language {routing['language']})")
    for column in ("rank", "id", "kind", "score", "raw", "lock", "flags", "signals"):
        table.add_column(column)
    for cand in routing["candidateScores"]:
        flags = []
        if cand["hardExcluded"]:
            flags.append("excluded")
        if cand["explicit"]:
            flags.append("explicit")
        flags += cand["softWarnings"]
        flags += [f"negated:{s}" for s in cand["negatedSignals"]]
        table.add_row(
            str(cand["deterministicRank"] or "-"),
            cand["id"],
            cand["kind"],
            f"{cand['score']:g}",
            f"{cand['rawScore']:g}",
            str(cand["lockPriority"] or ""),
            ", ".join(flags),
            ", ".join(cand["matchedSignals"] + [f"intent:{i}" for i in cand["matchedIntentIds"]]),
        )
    console.print(table)
    gate = data["gate"]
    console.print(
        f"gate: ambiguous={gate['ambiguous']} reasons={gate['reasons']} "
        f"invoke={gate['invoke']} skip={gate['skipReason']}; "
        f"evaluator: {data['evaluatorStatus']}; composite={routing['composite']}"
    )
    resolution = data["resolution"]
    console.print(f"reason codes: {resolution['reasonCodes']}")
    hints = ", ".join(f"{h['id']} ({h['kind']}, {h['role']})" for h in resolution["hints"])
    console.print(f"hints: {hints or '(none)'}")


@app.command("batch")
def batch(
    catalog: CatalogOpt = None,
    semantic: SemanticOpt = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """JSONL in (host payloads with "prompt"); JSONL out: hints, source, evaluator_status."""
    import json

    from kernel.errors import UsageError
    from modules.routing.pipeline import run_routing

    invocation(workspace, json_, debug)
    pack = _catalog(catalog)
    rescue = _semantic(semantic, pack)
    prompts: list[str] = []
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            payload = json.loads(line)
        except ValueError as err:
            raise UsageError(f"stdin line {number}: not JSON ({err})") from err
        if not isinstance(payload, dict) or not isinstance(payload.get("prompt"), str):
            raise UsageError(f'stdin line {number}: expected an object with a string "prompt"')
        prompts.append(payload["prompt"])
    for prompt in prompts:
        outcome = run_routing(prompt, pack, semantic=rescue)
        sys.stdout.write(
            dumps(
                {
                    "hints": outcome.hints(),
                    "source": outcome.resolution.source,
                    "evaluator_status": outcome.event["evaluator_status"],
                }
            )
            + "\n"
        )


@app.command("eval")
def evaluate(
    cases: Annotated[list[Path], typer.Option("--cases", help="Eval cases, JSONL (repeatable).")],
    catalog: CatalogOpt = None,
    profile: Annotated[
        list[str] | None,
        typer.Option(
            "--profile",
            help="Also run with the semantic evaluator on this provider profile (repeatable); "
            "the eval prompts are sent to it.",
        ),
    ] = None,
    oracle: Annotated[
        bool,
        typer.Option("--oracle", help="Also run with the oracle evaluator (reads the labels)."),
    ] = False,
    mode: Annotated[
        str,
        typer.Option("--mode", help="Evaluator mode for these runs: boost-only or hybrid."),
    ] = "boost-only",
    semantic: SemanticOpt = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """precision@1, recall@2, none-accuracy, false positives, forbidden hits; per language and
    category. With --profile/--oracle: the same against router + evaluator (spec §27.4)."""
    inv = invocation(workspace, json_, debug)
    from modules.routing.evaluation import case_result, summarize
    from modules.routing.pipeline import run_routing

    pack = _catalog(catalog)
    loaded = _load_cases(cases)
    if profile or oracle:
        from tht.commands.route_eval import evaluator_runs

        evaluator_runs(inv, pack, loaded, profiles=profile or [], oracle=oracle, mode=mode)
        return
    rescue = _semantic(semantic, pack)
    results = []
    for case in loaded:
        outcome = run_routing(case["prompt"], pack, semantic=rescue)
        results.append(case_result(case, [h.id for h in outcome.resolution.hints]))
    summary = {"catalog": pack.fingerprint, **summarize(results)}
    if inv.json:
        inv.emit(summary)
        return
    overall = summary["overall"]
    lines = [f"{len(loaded)} cases on catalog {pack.fingerprint[:19]}…"]
    for key in (
        "precision_at_1",
        "top1",
        "recall_at_2",
        "none_accuracy",
        "false_positive_rate",
        "forbidden_hits",
        "pass_rate",
        "max_hints",
    ):
        lines.append(f"  {key:20s} {overall[key]}")
    for lang, metrics in summary["by_language"].items():
        lines.append(
            f"  [{lang}] cases={metrics['cases']} p@1={metrics['precision_at_1']} "
            f"r@2={metrics['recall_at_2']} none={metrics['none_accuracy']} "
            f"fp={metrics['false_positive_rate']}"
        )
    lines.append(f"  failures: {len(summary['failures'])}")
    inv.emit(summary, human="\n".join(lines))


def _load_cases(files: list[Path]) -> list[dict[str, Any]]:
    import json

    from kernel.errors import UsageError
    from modules.routing.evaluation import validate_case

    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"{file}: cannot read: {err}") from err
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            try:
                case = json.loads(line)
            except ValueError as err:
                raise UsageError(f"{where}: not JSON ({err})") from err
            problems = validate_case(case, where)
            if problems:
                raise UsageError(problems[0], details={"problems": problems})
            if case["id"] in seen:
                raise UsageError(f"{where}: id: duplicate case id {case['id']!r}")
            seen.add(case["id"])
            cases.append(case)
    if not cases:
        raise UsageError("no eval cases found in " + ", ".join(str(f) for f in files))
    return cases
