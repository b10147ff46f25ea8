"""``tht route catalog build``: skills + overrides + MCP manifests + agents → compiled catalog.

Steps (spec 000 §10.3, §23.1, work packages 2, 3, 5A):

1. read the skill folders, the MCP manifests and the agents source;
2. apply the semantic overrides by id (an override naming an unknown id is a build error);
3. validate cross references (``compatibleWith``, agents' skills) and report skills without a
   ``semanticSummary``;
4. derive signals from the catalog text (:mod:`modules.routing.signals`) and add the curated
   rules (keywords, patterns, anti-patterns, intents, locks, suppressions, exclusions);
5. build the inverted index, plus its typo keys (:mod:`modules.routing.typos`), and write the
   pack (:mod:`modules.routing.pack`), ordered by id, with a SHA-256 fingerprint. Same inputs,
   same bytes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kernel.errors import UsageError
from modules.routing.pack import SIGNALS_VERSION, encode_pack
from modules.routing.signals import TargetTerms, derive_terms, phrase_keys, phrase_weight, weigh
from modules.routing.sources import (
    AgentsFile,
    McpManifest,
    McpServer,
    Override,
    OverridesFile,
    SkillSource,
)
from modules.routing.text import LANGUAGES, analyze
from modules.routing.typos import fuzzy_index

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["BuildReport", "build_catalog"]

CURATED_WEIGHT = 3.0
PATTERN_WEIGHT = 3.0
PATTERN_GAP = 3


class BuildReport:
    """What the build saw: counts, skills without summary, warnings (never fatal)."""

    __slots__ = ("fingerprint", "index_keys", "missing_summary", "targets", "warnings")

    def __init__(self) -> None:
        self.fingerprint = ""
        self.targets: dict[str, int] = {"skill": 0, "mcp": 0, "agent": 0}
        self.index_keys = 0
        self.missing_summary: list[str] = []
        self.warnings: list[str] = []

    def to_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "skills": self.targets["skill"],
            "mcps": self.targets["mcp"],
            "agents": self.targets["agent"],
            "indexKeys": self.index_keys,
            "skillsWithoutSummary": self.missing_summary,
            "warnings": self.warnings,
        }


def _generic_tokens(ids: Sequence[str]) -> frozenset[str]:
    """Id tokens shared by a quarter or more of the ids (e.g. ``mcp`` in ``mcp-*``)."""
    counts: dict[str, int] = {}
    for target_id in ids:
        for token in set(target_id.replace("_", "-").replace(".", "-").split("-")):
            counts[token] = counts.get(token, 0) + 1
    limit = max(2, len(ids) / 4)
    return frozenset(t for t, c in counts.items() if c >= limit)


def _card(base: dict[str, Any], override: Override | None) -> dict[str, Any]:
    card = dict(base)
    if override is not None:
        for field in (
            "category",
            "semanticSummary",
            "capabilities",
            "notFor",
            "compatibleWith",
            "routingRole",
        ):
            value = getattr(override, field)
            if value not in (None, []):
                card[field] = value
    return card


def _pattern_posting(phrase: str) -> list[tuple[str, list[str], str]]:
    out: list[tuple[str, list[str], str]] = []
    seen: set[str] = set()
    for lang in LANGUAGES:
        analysis = analyze(phrase, lang=lang)
        stems = [s for s, c in zip(analysis.stems, analysis.content, strict=True) if c]
        if len(stems) < 2:
            continue
        marker = " ".join(stems)
        if marker not in seen:
            seen.add(marker)
            out.append((stems[0], stems[1:], " ".join(phrase.lower().split())[:60]))
    return out


def build_catalog(
    skills: Sequence[SkillSource],
    *,
    overrides: OverridesFile | None = None,
    overrides_name: str = "overrides",
    manifests: Sequence[tuple[str, McpManifest]] = (),
    agents: tuple[str, AgentsFile] | None = None,
) -> tuple[bytes, BuildReport]:
    """Compile the catalog. Errors name the file and field (:class:`UsageError`)."""
    report = BuildReport()
    servers = _servers(manifests)
    skill_ids = {skill.id for skill in skills}
    all_overrides = dict(overrides.overrides) if overrides else {}
    _check_ids(skill_ids, servers, all_overrides, overrides_name)
    cards, texts = _cards(skills, servers, all_overrides, agents, skill_ids)
    _check_cards(cards, overrides_name, report)
    routable = [i for i, card in enumerate(cards) if card["kind"] != "agent"]
    derived = _derive(cards, texts, routable)
    post = _Postings()
    _post_routable(post, cards, routable, derived, all_overrides)
    _post_agents(post, cards)
    return _encode(cards, post.final(), report)


def _servers(manifests: Sequence[tuple[str, McpManifest]]) -> dict[str, tuple[str, McpServer]]:
    """Every MCP server by id, with the manifest it comes from; an id defined twice is an error."""
    servers: dict[str, tuple[str, McpServer]] = {}
    for source, manifest in manifests:
        for position, server in enumerate(manifest.servers):
            if server.id in servers:
                raise UsageError(
                    f"{source}: servers[{position}].id: {server.id!r} is already defined in "
                    f"{servers[server.id][0]}"
                )
            servers[server.id] = (source, server)
    return servers


def _check_ids(
    skill_ids: set[str],
    servers: dict[str, tuple[str, McpServer]],
    all_overrides: dict[str, Override],
    overrides_name: str,
) -> None:
    """No id is both a skill and a server; every override names one of them."""
    clash = skill_ids & servers.keys()
    if clash:
        name = sorted(clash)[0]
        raise UsageError(f"{servers[name][0]}: id {name!r} is both a skill and an MCP server")
    for key in sorted(all_overrides):
        if key not in skill_ids and key not in servers:
            raise UsageError(
                f"{overrides_name}: overrides.{key}: no skill or MCP server has this id"
            )


def _cards(
    skills: Sequence[SkillSource],
    servers: dict[str, tuple[str, McpServer]],
    all_overrides: dict[str, Override],
    agents: tuple[str, AgentsFile] | None,
    skill_ids: set[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any] | None]]:
    """The target cards (skills, servers by id, agents by id) and the text of each routable one."""
    cards: list[dict[str, Any]] = []
    texts: list[dict[str, Any] | None] = []
    for skill in skills:
        base: dict[str, Any] = {
            "id": skill.id,
            "kind": "skill",
            "category": None,
            "semanticSummary": None,
            "capabilities": [],
            "notFor": [],
            "compatibleWith": [],
            "routingRole": "specialist",
        }
        cards.append(_card(base, all_overrides.get(skill.id)))
        texts.append(
            {"description": skill.description, "when": skill.when_to_use, "body": skill.body}
        )
    for server_id in sorted(servers):
        _, server = servers[server_id]
        cards.append(_card(server.model_dump(), all_overrides.get(server_id)))
        texts.append({"description": server.semanticSummary or "", "when": "", "body": ""})
    if agents is not None:
        agents_source, agents_file = agents
        for position, agent in enumerate(sorted(agents_file.agents, key=lambda a: a.id)):
            for skill_id in agent.skills:
                if skill_id not in skill_ids:
                    raise UsageError(
                        f"{agents_source}: agents[{position}].skills: unknown skill {skill_id!r}"
                    )
            cards.append({**agent.model_dump(), "kind": "agent"})
            texts.append(None)
    return cards, texts


def _check_cards(cards: list[dict[str, Any]], overrides_name: str, report: BuildReport) -> None:
    """``compatibleWith`` names known ids; count the targets and the skills without summary."""
    known = {card["id"] for card in cards}
    for card in cards:
        for other in card.get("compatibleWith") or []:
            if other not in known:
                raise UsageError(
                    f"{overrides_name}: overrides.{card['id']}.compatibleWith: unknown id {other!r}"
                )
        if card["kind"] == "skill" and not card.get("semanticSummary"):
            report.missing_summary.append(card["id"])
        report.targets[card["kind"]] += 1


def _derive(
    cards: list[dict[str, Any]], texts: list[dict[str, Any] | None], routable: list[int]
) -> dict[str, TargetTerms]:
    """Each routable target's signals, derived from its text and weighed across the catalog."""
    all_ids = [card["id"] for card in cards]
    generic = _generic_tokens([cards[i]["id"] for i in routable])
    derived: dict[str, TargetTerms] = {}
    for i in routable:
        card, text = cards[i], texts[i]
        assert text is not None
        derived[card["id"]] = derive_terms(
            name=card["id"],
            description=text["description"],
            when_to_use=text["when"],
            body=text["body"],
            capabilities=card.get("capabilities") or [],
            other_ids=[other for other in all_ids if other != card["id"]],
            generic_tokens=generic,
        )
    weigh(derived, len(routable))
    return derived


class _Postings:
    """The inverted index being built: per key, the heaviest posting per target and rule kind."""

    __slots__ = ("slots",)

    def __init__(self) -> None:
        self.slots: dict[str, dict[tuple[int, str], list[Any]]] = {}

    def __call__(
        self, key: str, target: int, weight: float, kind: str, label: str, extra: Any = None
    ) -> None:
        slot = self.slots.setdefault(key, {})
        marker = (target, kind if extra is None else f"{kind}:{extra}")
        old = slot.get(marker)
        if old is None or weight > old[1]:
            entry: list[Any] = [target, round(weight, 2), kind, label]
            if extra is not None:
                entry.append(extra)
            slot[marker] = entry

    def final(self) -> dict[str, list[Any]]:
        """Each key's postings in a stable order, plus the typo keys."""
        index: dict[str, list[Any]] = {
            key: sorted(slot.values(), key=lambda e: (e[0], e[2], str(e[4:])))
            for key, slot in self.slots.items()
        }
        index.update(fuzzy_index(index))
        return index


def _post_routable(
    post: _Postings,
    cards: list[dict[str, Any]],
    routable: list[int],
    derived: dict[str, TargetTerms],
    all_overrides: dict[str, Override],
) -> None:
    """A routable target's id, role, derived signals, file types and curated rules."""
    for i in routable:
        card = cards[i]
        terms = derived[card["id"]]
        post("@" + card["id"], i, 0.0, "id", card["id"])
        if card.get("routingRole") == "orchestrator" and card["kind"] == "skill":
            post("role:orchestrator", i, 0.0, "role", card["id"])
        for key, (weight, kind, label) in {**terms.positive, **terms.fixed}.items():
            if weight > 0:
                post(key, i, weight, kind, label)
        for key, (weight, kind, label) in terms.anti.items():
            post(key, i, weight, kind, label)
        ext_df = {ext: sum(1 for t in derived.values() if ext in t.ext) for ext in terms.ext}
        for ext, weight in terms.ext.items():
            factor = 1.0 if ext_df[ext] == 1 else 0.6
            post("ext:" + ext, i, weight * factor, "ext", "." + ext)
        override = all_overrides.get(card["id"])
        if override is not None:
            _curated(post, i, override)


def _post_agents(post: _Postings, cards: list[dict[str, Any]]) -> None:
    """An agent is found through the skills it works with (or any, when generic)."""
    for i, card in enumerate(cards):
        if card["kind"] == "agent":
            for skill_id in card.get("skills") or []:
                post(f"agent:{skill_id}", i, 0.0, "agent", card["id"])
            if card.get("generic"):
                post("agent:*", i, 0.0, "agent", card["id"])


def _encode(
    cards: list[dict[str, Any]], index: dict[str, list[Any]], report: BuildReport
) -> tuple[bytes, BuildReport]:
    """The pack's bytes (targets without empty fields) and the report with its fingerprint."""
    targets = []
    for i, card in enumerate(cards):
        record = {key: value for key, value in card.items() if value not in (None, [], "")}
        record["i"] = i
        targets.append(record)
    header = {
        "signalsVersion": SIGNALS_VERSION,
        "counts": dict(report.targets),
        "maxN": 4,
        "skillsWithoutSummary": report.missing_summary,
    }
    data = encode_pack(header, targets, index)
    report.index_keys = len(index)
    first_line = data[: data.index(b"\n")]
    report.fingerprint = json.loads(first_line)["fingerprint"]
    return data, report


def _curated(post: _Postings, target: int, override: Override) -> None:
    for phrase in override.keywords:
        for key, label in phrase_keys(phrase):
            post(key, target, phrase_weight(CURATED_WEIGHT, key), "curated", label)
    for phrase in override.antiPatterns:
        for key, label in phrase_keys(phrase):
            post(key, target, CURATED_WEIGHT, "anti", label)
    for phrase in override.patterns:
        for first, rest, label in _pattern_posting(phrase):
            post(first, target, PATTERN_WEIGHT, "pattern", label, {"seq": rest, "gap": PATTERN_GAP})
    for intent in override.intents:
        for phrase in intent.phrases:
            for key, label in phrase_keys(phrase):
                extra = {"intent": intent.id, "priority": intent.priority}
                post(key, target, intent.boost, "intent", label, extra)
    for lock in override.locks:
        for phrase in lock.phrases:
            for key, label in phrase_keys(phrase):
                post(key, target, 0.0, "lock", label, {"priority": lock.priority})
    for rule in override.suppressions:
        for phrase in rule.phrases:
            for key, label in phrase_keys(phrase):
                post(key, target, rule.penalty, "suppress", label, {"mode": rule.mode})
    for exclusion in override.exclusions:
        for phrase in exclusion.phrases:
            for key, label in phrase_keys(phrase):
                post(key, target, 0.0, "exclude", label)
