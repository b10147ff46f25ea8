"""The agent skill (``SKILL.md``): what a coding agent must know to drive a tht session, generated
from per-module fragments (spec 003 §10; docs/agent-skill.md).

Each module ships the instructions for its own part as a Markdown fragment beside its code;
:data:`FRAGMENTS` is the static, ordered list of them (no discovery). :func:`render` joins them
under a YAML front matter (``name``, ``description``: the format Claude Code and Codex read) and
expands the generated sections a fragment asks for with a directive line — ``<!-- tht:stages
-->``, ``<!-- tht:events owner=OWNER -->``, ``<!-- tht:human-only -->``, ``<!-- tht:protected
-->`` — from the data that decides them: ``workflow.yaml`` (stages, owners, completion, skip,
emits, artifacts), the event registry (payload fields), the guard's tables (human-only commands,
protected paths). So a changed workflow changes the skill, and prose cannot drift from it.

The output is byte-stable: no dates, no machine paths, nothing from the environment; the order
is the workflow's, the fragments' and the tables', sorted where none is given. The committed
``skills/tht-session/SKILL.md`` must equal :func:`build` (a test says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from kernel.workflow import StepSpec, WorkflowSpec

__all__ = [
    "FRAGMENTS",
    "SKILL_DESCRIPTION",
    "SKILL_NAME",
    "SKILL_RELATIVE_PATH",
    "Fragment",
    "build",
    "human_only_commands",
    "proposal_kinds",
    "read_fragments",
    "render",
    "stage_runs",
    "tht_artifacts",
]

SKILL_NAME = "tht-session"
SKILL_RELATIVE_PATH = Path("skills") / SKILL_NAME / "SKILL.md"
# What the host reads before it loads the skill: what it is for and when to use it (≤ 1024
# characters, one line, no ": " so it stays a plain YAML scalar).
SKILL_DESCRIPTION = (
    "Drive a tht analytics session as its coding agent - read the session state, propose "
    "clarifications, evidence, schema links, CTEs and SQL with tht propose, run tht's own "
    "stages, and leave every decision to the human reviewer. Use when working in a tht "
    "workspace (a folder with workspace.yaml) or when the user asks a question of the "
    "workspace database through tht."
)

_ROOT = Path(__file__).resolve().parent.parent  # the folder holding kernel/, modules/, tht/


class Fragment(NamedTuple):
    """One source fragment: its path from the folder that holds the packages."""

    path: str
    about: str  # whose instructions these are


#: The static, ordered list of fragments (spec 003 §10: no discovery).
FRAGMENTS: tuple[Fragment, ...] = (
    Fragment("kernel/_skill/kernel.md", "the kernel: the session loop, proposals, core stages"),
    Fragment("tht/_skill/commands.md", "tht: the commands an agent runs and must never run"),
    Fragment("modules/disambiguation/skill.md", "Disambiguation: admission, F1, F3"),
    Fragment("modules/memory/skill.md", "Memory: F2 recall, the memory promotion"),
    Fragment("modules/evidence/skill.md", "Evidence: packs, search, evidence decisions"),
    Fragment("modules/catalog/skill.md", "the Metadata Catalog: schema linking, SQL checks"),
    Fragment("modules/routing/skill.md", "Routing: the host's prompt hints"),
)

_DIRECTIVE = re.compile(r"^<!-- tht:([a-z][a-z-]*)((?: [a-z_]+=[A-Za-z0-9_.,-]+)*) -->$")
_ALL_KINDS = ("select", "decide", "confirm", "auto", "revision", "fail")
_MODULE_RUN_KINDS = ("revision", "fail")  # tht/ownership.py: what a module-run step accepts
_CODES = {"preflight": "pre", "contribution": "ext", "finalize": "fin", "stage": "-"}


def read_fragments(root: Path = _ROOT) -> tuple[tuple[Fragment, str], ...]:
    """Each fragment of :data:`FRAGMENTS` with its text (UTF-8, ``\\n`` line ends)."""
    from kernel.errors import NotFoundError, UsageError

    texts = []
    for fragment in FRAGMENTS:
        path = root / fragment.path
        try:
            raw = path.read_bytes()
        except FileNotFoundError as err:
            raise NotFoundError(f"skill fragment {fragment.path} is missing") from err
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise UsageError(f"skill fragment {fragment.path}: not UTF-8 ({err})") from err
        texts.append((fragment, text.replace("\r\n", "\n")))
    return tuple(texts)


def build(workflow: WorkflowSpec | None = None) -> bytes:
    """The SKILL.md bytes for ``workflow`` (default: the packaged workflow.yaml)."""
    from kernel.workflow import load_workflow

    spec = workflow if workflow is not None else load_workflow()
    return render(spec, read_fragments()).encode("utf-8")


# ----------------------------------------------------------------------------- derived facts


def proposal_kinds(step: StepSpec) -> tuple[str, ...]:
    """The proposal kinds ``tht propose`` accepts on ``step`` (tht/ownership.py, the kernel's
    completion rule): none on the preflight and on finalization, ``revision``/``fail`` on a step
    that is tht's own work, ``auto`` only where completion is automatic."""
    from kernel.events import MODULE_DECISION_TYPES
    from tht.ownership import NO_PROPOSALS

    if step.kind == "preflight" or step.owner in NO_PROPOSALS:
        return ()
    if any(t in MODULE_DECISION_TYPES for t in step.emits):
        return _MODULE_RUN_KINDS
    if step.completion == "automatic":
        return _ALL_KINDS
    return tuple(k for k in _ALL_KINDS if k != "auto")


def stage_runs(step: StepSpec) -> bool:
    """Whether ``tht stage run STEP`` runs the step's own module (tht/verification_runtime.py:
    a step that emits a module decision, or F1's policy)."""
    from kernel.events import MODULE_DECISION_TYPES

    if any(t in MODULE_DECISION_TYPES for t in step.emits):
        return True
    return step.owner == "disambiguation" and "concept_clarified" in step.emits


def tht_artifacts(step: StepSpec) -> frozenset[str]:
    """The artifacts of ``step`` that tht writes itself: a proposal never carries them."""
    from kernel.schema_view import SNAPSHOT_ARTIFACT
    from kernel.verification import RESULT_SAMPLE
    from modules.disambiguation.question_document import QUESTION_DOCUMENT

    if step.kind == "finalize":
        return frozenset(step.artifacts)
    own = {QUESTION_DOCUMENT, SNAPSHOT_ARTIFACT, RESULT_SAMPLE}
    return frozenset(a for a in step.artifacts if a in own)


def human_only_commands() -> tuple[str, ...]:
    """Every human-only ``tht`` command line, as the guard hook refuses it (in its order)."""
    from tht.hooks.guard_rules import HUMAN_ONLY

    return tuple("tht " + " ".join(words) for words in HUMAN_ONLY)


# ----------------------------------------------------------------------------- rendering


def render(workflow: WorkflowSpec, fragments: Sequence[tuple[Fragment, str]]) -> str:
    """The whole SKILL.md (pure): front matter, a generated-file notice, every fragment with its
    directives expanded, then the events of any owner no fragment shows."""
    shown: set[str] = set()
    parts = [_front_matter(), _notice(workflow, fragments)]
    for fragment, text in fragments:
        parts.append(_expand(fragment, text, workflow, shown))
    rest = [s.owner for s in workflow.steps if s.emits and s.owner not in shown]
    if rest:
        body = ["## Other stages", ""]
        for owner in dict.fromkeys(rest):
            body += [f"### Stages owned by {owner}", "", *_events_table(workflow, owner), ""]
        parts.append("\n".join(body))
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


def _front_matter() -> str:
    return f"---\nname: {SKILL_NAME}\ndescription: {SKILL_DESCRIPTION}\n---"


def _notice(workflow: WorkflowSpec, fragments: Sequence[tuple[Fragment, str]]) -> str:
    sources = ", ".join(f.path for f, _ in fragments)
    return (
        "<!-- Generated by `tht agent skill build` - do not edit. Sources, in order: "
        f"{sources}; workflow {workflow.name} v{workflow.version}; the event registry "
        "(kernel/events.py) and the guard's tables (tht/hooks/guard_rules.py). -->"
    )


def _expand(fragment: Fragment, text: str, workflow: WorkflowSpec, shown: set[str]) -> str:
    from kernel.errors import UsageError

    lines: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.startswith("<!-- tht:"):
            lines.append(line.rstrip())
            continue
        match = _DIRECTIVE.match(line.strip())
        if match is None:
            raise UsageError(f"{fragment.path}:{number}: malformed directive {line.strip()!r}")
        name, args = match.group(1), dict(a.split("=", 1) for a in match.group(2).split())
        try:
            lines += _directive(name, args, workflow, shown)
        except KeyError as err:
            raise UsageError(f"{fragment.path}:{number}: {err.args[0]}") from err
    return "\n".join(lines)


def _directive(
    name: str, args: Mapping[str, str], workflow: WorkflowSpec, shown: set[str]
) -> list[str]:
    def no_args() -> None:
        if args:
            raise KeyError(f"tht:{name} takes no arguments")

    if name == "stages":
        no_args()
        return _stages_table(workflow)
    if name == "events":
        if set(args) != {"owner"}:
            raise KeyError("tht:events needs owner=OWNER (and nothing else)")
        shown.add(args["owner"])
        return _events_table(workflow, args["owner"])
    if name == "human-only":
        no_args()
        return [f"- `{command}`" for command in human_only_commands()]
    if name == "protected":
        no_args()
        from tht.hooks.guard_rules import PROTECTED_DIRS, PROTECTED_FILES

        return [f"- `{d}/`" for d in sorted(PROTECTED_DIRS)] + [
            f"- `{f}`" for f in sorted(PROTECTED_FILES)
        ]
    raise KeyError(f"unknown directive tht:{name}")


def _code(items: Iterable[str]) -> str:
    shown = ", ".join(f"`{i}`" for i in items)
    return shown or "—"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _stages_table(workflow: WorkflowSpec) -> list[str]:
    rows = [
        "| code | stage | owner | completion | skip | you may propose | tht runs it | may emit "
        "| artifacts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for step in workflow.steps:
        kinds = proposal_kinds(step)
        if step.kind == "preflight":
            propose = "nothing (`tht session new` runs it)"
        elif not kinds:
            propose = "nothing (a human: `tht session finalize`)"
        else:
            propose = ", ".join(kinds)
        runs = f"`tht stage run {step.id}`" if stage_runs(step) else "—"
        own = tht_artifacts(step)
        artifacts = ", ".join(f"`{a}`" + (" (tht)" if a in own else "") for a in step.artifacts)
        cells = [
            step.display or _CODES[step.kind],
            f"`{step.id}`",
            step.owner,
            step.completion,
            step.skip,
            propose,
            runs,
            _code(step.emits),
            artifacts or "—",
        ]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    extension = [s for s in workflow.steps if s.kind == "contribution"]
    notes = [
        f"`{s.id}` is a {s.policy} contribution of the extension point `{s.extension_point}`."
        for s in extension
    ]
    notes.append(f"Any stage may also record the receipts {_code(workflow.receipts)}.")
    return [*rows, "", *notes]


def _recorded(step: StepSpec, event_type: str) -> str:
    from kernel.events import MODULE_DECISION_TYPES

    if step.kind == "preflight":
        return "by tht at `tht session new`; never proposed"
    if event_type in MODULE_DECISION_TYPES:
        return (
            f"by tht ({MODULE_DECISION_TYPES[event_type]}, `tht stage run {step.id}`); never "
            "proposed"
        )
    if any(t in MODULE_DECISION_TYPES for t in step.emits):
        return "when the reviewer answers tht's own review of the stage; never proposed"
    return "in an option you propose, when the reviewer chooses it"


def _events_table(workflow: WorkflowSpec, owner: str) -> list[str]:
    from kernel.events import EVENT_TYPES

    steps = [s for s in workflow.steps if s.owner == owner and s.emits]
    if not steps:  # another workflow (a workspace's own) may have no step of this owner
        return []
    rows = [
        "| stage | event | what it records | how it is recorded | payload (`?`: optional) |",
        "|---|---|---|---|---|",
    ]
    for step in steps:
        for event_type in step.emits:
            info = EVENT_TYPES[event_type]
            cells = [
                f"`{step.id}`",
                f"`{event_type}`",
                info.description,
                _recorded(step, event_type),
                _payload(info.payload),
            ]
            rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return rows


def _payload(payload: type) -> str:
    import msgspec

    info = msgspec.inspect.type_info(payload)
    assert isinstance(info, msgspec.inspect.StructType)
    return ", ".join(_field(f) for f in info.fields) or "(empty)"


def _field(field: Any) -> str:
    mark = "" if field.required else "?"
    return f"`{field.encode_name}{mark}: {_type(field.type)}`"


def _type(t: Any) -> str:
    """A JSON-ish name of a msgspec type: ``string``, ``[string]``, ``"a"|"b"``, ``{k: v}``."""
    import json

    import msgspec.inspect as mi

    simple: dict[type, str] = {
        mi.StrType: "string",
        mi.IntType: "integer",
        mi.FloatType: "number",
        mi.BoolType: "boolean",
        mi.NoneType: "null",
        mi.AnyType: "any",
    }
    for kind, name in simple.items():
        if isinstance(t, kind):
            return name
    if isinstance(t, mi.LiteralType):
        return "|".join(json.dumps(v) for v in t.values)
    if isinstance(t, mi.UnionType):
        return "|".join(_type(member) for member in t.types)
    if isinstance(t, mi.VarTupleType | mi.ListType | mi.SetType | mi.FrozenSetType):
        return f"[{_type(t.item_type)}]"
    if isinstance(t, mi.DictType):
        return f"{{{_type(t.key_type)}: {_type(t.value_type)}}}"
    if isinstance(t, mi.StructType):
        inner = ", ".join(
            f"{f.encode_name}{'' if f.required else '?'}: {_type(f.type)}" for f in t.fields
        )
        return f"{{{inner}}}"
    return type(t).__name__.removesuffix("Type").lower()
