"""The deterministic router (spec 000 §7.3 ``scoreSkills`` / ``routePrompt``, §8.2).

Pure and synchronous: a prompt, the compiled catalog's lookup and the repository context in;
scored candidates with their diagnostics out. No per-target loop over rules on the hot path: the
prompt's n-gram keys are looked up in the catalog's inverted index and only the postings found
are visited.

Signals per target: positive (name, curated, catalog, body, capability, ext, pattern), intents
(boost + priority), locks, anti-patterns, negated matches (penalty), soft/hard suppression, hard
exclusion, the context boost (file types of the working folder; it never creates a candidate)
and the role rule (an orchestrator needs a composite prompt). Explicit choice (``!id`` or naming
a multi-word id in the text) locks the target above everything except a user negation.
"""

from __future__ import annotations

import json
import os
import re

from modules.routing import typos
from modules.routing.hotwords import PromptRouting, parse_hotwords
from modules.routing.injection import scan as scan_injection
from modules.routing.text import Analysis, analyze, fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

__all__ = ["ROUTING_CONFIG", "Candidate", "Routing", "route"]

with open(os.path.join(os.path.dirname(__file__), "data", "routing.json"), "rb") as _f:
    ROUTING_CONFIG: dict[str, Any] = json.load(_f)

_POSITIVE = frozenset({"name", "curated", "catalog", "body", "capability", "ext", "pattern"})
_COMPOSITE_CLAUSE_WEIGHT = 2.0
_USE_WORDS = frozenset(
    "usa usare usate usiamo utilizza utilizzare adopera attiva con tramite via use using "
    "with run apply activate".split()
)
_TARGET_NOUNS = frozenset({"skill", "server", "mcp", "agent", "agente"})

_ID_SPLIT = re.compile(r"[-_.]")

Lookup = "Callable[[Iterable[str]], Mapping[str, list[list[Any]]]]"


class Candidate:
    """One scored target with the diagnostics of §8.2 (``candidateScores``)."""

    __slots__ = (
        "anti",
        "clauses",
        "context",
        "covered",
        "excluded_by",
        "explicit",
        "hard_excluded",
        "hard_suppressed",
        "id",
        "index",
        "intents",
        "kind",
        "lock_priority",
        "negated",
        "penalty",
        "positive",
        "rank",
        "record",
        "signals",
        "soft_warnings",
    )

    def __init__(self, index: int, record: dict[str, Any]) -> None:
        self.index = index
        self.record = record
        self.id: str = record["id"]
        self.kind: str = record["kind"]
        self.positive = 0.0
        self.penalty = 0.0
        self.context = 0.0
        self.signals: list[str] = []
        self.negated: list[str] = []
        self.anti: list[str] = []
        self.intents: dict[str, tuple[int, float]] = {}
        self.lock_priority = 0
        self.explicit = False
        self.hard_excluded = False
        self.hard_suppressed = False
        self.excluded_by: str | None = None
        self.soft_warnings: list[str] = []
        self.clauses: dict[int, float] = {}
        self.covered: set[int] = set()  # prompt positions its positive signals matched
        self.rank = 0

    @property
    def intent_boost(self) -> float:
        return sum(boost for _, boost in self.intents.values())

    @property
    def raw_score(self) -> float:
        """Positive evidence before penalties (the "strong before deprioritization" score)."""
        return round(self.positive + self.intent_boost + self.context, 2)

    @property
    def score(self) -> float:
        return round(self.raw_score - self.penalty, 2)

    @property
    def eligible(self) -> bool:
        if self.hard_excluded:
            return False
        return not (self.hard_suppressed and not self.explicit)

    def diagnostics(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "rawScore": self.raw_score,
            "score": self.score,
            "deterministicRank": self.rank,
            "hardExcluded": self.hard_excluded,
            "hardSuppressed": self.hard_suppressed,
            "explicit": self.explicit,
            "lockPriority": self.lock_priority,
            "matchedSignals": self.signals,
            "matchedIntentIds": sorted(self.intents),
            "negatedSignals": self.negated,
            "antiSignals": self.anti,
            "softWarnings": self.soft_warnings,
            "category": self.record.get("category"),
            "routingRole": self.record.get("routingRole"),
        }


class Routing:
    """The deterministic routing of one prompt: candidates ranked, plus what the gate needs."""

    __slots__ = (
        "analysis",
        "candidates",
        "composite",
        "composite_targets",
        "config",
        "explicit_ids",
        "injected",
        "prompt",
        "top_intent",
        "unknown_explicit",
    )

    def __init__(self, prompt: PromptRouting, analysis: Analysis, config: Mapping[str, Any]):
        self.prompt = prompt
        self.analysis = analysis
        self.config = config
        self.candidates: list[Candidate] = []
        self.explicit_ids: list[str] = []
        self.unknown_explicit: list[str] = []
        self.composite = False
        self.composite_targets: list[str] = []
        self.injected = False  # the prompt has injection cues (§14.3)
        self.top_intent: tuple[str, str, int] | None = None  # (intent id, target, priority)

    @property
    def language(self) -> str:
        return self.analysis.lang

    def ranked(self, kind: str | None = None) -> list[Candidate]:
        """Eligible candidates in deterministic order (locks first, then score, then id)."""
        return [c for c in self.candidates if c.eligible and (kind is None or c.kind == kind)]

    def diagnostics(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "contextMode": self.prompt.context_mode,
            "explicitIds": self.explicit_ids,
            "unknownExplicitIds": self.unknown_explicit,
            "composite": self.composite,
            "compositeTargets": self.composite_targets,
            "topIntent": (
                None
                if self.top_intent is None
                else {
                    "id": self.top_intent[0],
                    "target": self.top_intent[1],
                    "priority": self.top_intent[2],
                }
            ),
            "candidateScores": [c.diagnostics() for c in self.candidates],
        }


class _Candidates(dict[int, Candidate]):
    """Candidates by catalog index, made on first touch (``cands[i]``); ``get`` never makes one."""

    __slots__ = ("_target",)

    def __init__(self, target: Callable[[int], dict[str, Any]]) -> None:
        super().__init__()
        self._target = target

    def __missing__(self, index: int) -> Candidate:
        made = self[index] = Candidate(index, self._target(index))
        return made


def route(
    prompt: str,
    lookup: Callable[[Iterable[str]], Mapping[str, list[list[Any]]]],
    target: Callable[[int], dict[str, Any]],
    *,
    context_extensions: Iterable[str] = (),
    config: Mapping[str, Any] | None = None,
) -> Routing:
    """Score ``prompt`` against the catalog reached through ``lookup`` and ``target``."""
    cfg = config or ROUTING_CONFIG
    parsed = parse_hotwords(prompt)
    analysis = analyze(parsed.text)
    routing = Routing(parsed, analysis, cfg)
    if parsed.none:
        return routing

    spans = _ngram_spans(analysis, int(cfg.get("maxN", 4)))
    implicit, context = _extension_keys(analysis, context_extensions)
    mentions = _mentions(analysis)
    found = dict(lookup(_wanted_keys(parsed, spans, implicit, context, mentions)))
    _typos(analysis, spans, found, lookup)

    cands = _Candidates(target)
    _explicit_hotwords(routing, found, cands, cfg)
    neutral = _named_ids(routing, mentions, found, cands, cfg)
    per_target = _match_keys(routing, spans, context, neutral, found, cands, cfg)
    _accept_positive(analysis, per_target, cands)

    _composite(routing, cands.values())
    _multi_phase(routing, found, cands, cfg)
    _multi_source(routing, cands, cfg)
    _settle(routing, cands, cfg)
    _kinds_set_aside(analysis, found, cands)
    _rank(routing, cands)
    return routing


def _ngram_spans(analysis: Analysis, max_n: int) -> dict[str, list[tuple[int, int]]]:
    """Every n-gram key of the prompt with the positions it covers."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for key, first, last in analysis.ngrams(max_n):
        spans.setdefault(key, []).append((first, last))
    return spans


def _extension_keys(
    analysis: Analysis, context_extensions: Iterable[str]
) -> tuple[set[str], set[str]]:
    """File-type keys named in the prompt, and the working folder's ones it does not name."""
    implicit = {"ext:" + ext for ext in analysis.extensions}
    context = {"ext:" + ext.lower().lstrip(".") for ext in context_extensions} - implicit
    return implicit, context


def _wanted_keys(
    parsed: PromptRouting,
    spans: dict[str, list[tuple[int, int]]],
    implicit: set[str],
    context: set[str],
    mentions: dict[str, tuple[int, int, bool]],
) -> list[str]:
    """The index keys to look up: n-grams, file types, named ids, hotwords, the orchestrators."""
    wanted = list(spans) + sorted(implicit) + sorted(context) + [f"@{m}" for m in mentions]
    wanted += [f"@{e}" for e in parsed.explicit]
    wanted.append("role:orchestrator")
    return wanted


def _explicit_hotwords(
    routing: Routing,
    found: dict[str, list[list[Any]]],
    cands: _Candidates,
    cfg: Mapping[str, Any],
) -> None:
    """``!id`` hotwords lock their target; an unknown one is reported."""
    for explicit in routing.prompt.explicit:
        postings = found.get(f"@{explicit}")
        if not postings:
            routing.unknown_explicit.append(explicit)
            continue
        chosen = cands[postings[0][0]]
        chosen.explicit = True
        chosen.lock_priority = int(cfg.get("explicitLockPriority", 1000))
        chosen.signals.append(f"explicit:!{explicit}")


def _named_ids(
    routing: Routing,
    mentions: dict[str, tuple[int, int, bool]],
    found: dict[str, list[list[Any]]],
    cands: _Candidates,
    cfg: Mapping[str, Any],
) -> set[int]:
    """Ids named in the text: negated (excluded), injected (warned) or chosen ("usa X").

    Returns the prompt positions that are the ids' own words: no evidence for anything.
    """
    analysis = routing.analysis
    folded = fold(routing.prompt.text)
    # injected words are evidence for nothing
    neutral, injected = scan_injection(analysis.offsets, folded, analysis.words)
    routing.injected = injected
    for mention, (first, last, framed) in mentions.items():
        postings = found.get(f"@{mention}")
        if not postings:
            if framed and _ID_SPLIT.search(mention):  # an invented id ("la skill mcp-foo-2")
                neutral.update(range(first, last + 1))
            continue
        named = cands[postings[0][0]]
        occurrences = _occurrences(analysis, mention) or [(first, last)]
        if last > first or framed:  # the id's own words are not evidence for it
            for lo, hi in occurrences:
                neutral.update(range(lo, hi + 1))
        if any(any(analysis.negated[lo : hi + 1]) for lo, hi in occurrences):
            named.hard_excluded = True  # a user negation outranks any choice (§7.1)
            named.excluded_by = "user-negation"
            named.negated.append(f"id:{mention}")
        elif injected:
            named.soft_warnings.append("injected-mention")
        elif any(_use_verb_before(analysis, lo) for lo, _ in occurrences) and not named.explicit:
            named.explicit = True
            named.lock_priority = int(cfg.get("explicitLockPriority", 1000))
            named.signals.append(f"explicit:{mention}")
    return neutral


_Slots = dict[int, dict[tuple[int, int], tuple[float, str, bool]]]


def _match_keys(
    routing: Routing,
    spans: dict[str, list[tuple[int, int]]],
    context: set[str],
    neutral: set[int],
    found: dict[str, list[list[Any]]],
    cands: _Candidates,
    cfg: Mapping[str, Any],
) -> _Slots:
    """Visit the postings found: rules apply now; positive signals are collected per target and
    span (the heaviest per span) for :func:`_accept_positive`."""
    analysis = routing.analysis
    per_target: _Slots = {}
    for key, postings in found.items():
        if key.startswith(("@", typos.PREFIX, "role:")):
            continue
        if key in context:
            _context_boost(postings, cands, cfg)
            continue
        key_spans = spans.get(key) or [(-1, -1)]
        if neutral and key_spans[0][0] >= 0:
            key_spans = [
                (a, b) for a, b in key_spans if not any(p in neutral for p in range(a, b + 1))
            ]
            if not key_spans:
                continue
        for posting in postings:
            index, weight, kind, label = posting[0], float(posting[1]), posting[2], posting[3]
            extra = posting[4] if len(posting) > 4 else None
            for first, last in key_spans:
                negated = first >= 0 and any(analysis.negated[first : last + 1])
                if kind == "pattern":
                    end = _pattern_end(analysis, first, extra)
                    if end is None:
                        continue
                    last = end
                    negated = any(analysis.negated[first : last + 1])
                if kind in _POSITIVE:
                    slot = per_target.setdefault(index, {})
                    span = (first, last)
                    old = slot.get(span)
                    if old is None or weight > old[0]:
                        slot[span] = (weight, f"{kind}:{label}", negated)
                else:
                    _rule(routing, cands[index], kind, weight, label, extra, negated)
                break  # a key counts once per target
    return per_target


def _context_boost(postings: list[list[Any]], cands: _Candidates, cfg: Mapping[str, Any]) -> None:
    """A file type of the working folder the prompt does not name boosts its targets."""
    for posting in postings:
        if posting[2] == "ext":
            cands[posting[0]].context = max(
                cands[posting[0]].context, float(cfg.get("contextBoost", 1))
            )


def _accept_positive(analysis: Analysis, per_target: _Slots, cands: _Candidates) -> None:
    """Per target, the heaviest non-overlapping spans count: as evidence, or negated, as penalty."""
    for index, slots in per_target.items():
        candidate = cands[index]
        accepted: list[tuple[int, int]] = []
        for (first, last), (weight, label, negated) in sorted(
            slots.items(), key=lambda item: (-item[1][0], -(item[0][1] - item[0][0]), item[0])
        ):
            if first >= 0 and any(first <= b and a <= last for a, b in accepted):
                continue
            accepted.append((first, last))
            if negated:
                candidate.penalty += weight
                candidate.negated.append(label)
            else:
                candidate.positive += weight
                candidate.signals.append(label)
                if first >= 0:
                    candidate.covered.update(range(first, last + 1))
                    clause = analysis.clause[first]
                    candidate.clauses[clause] = candidate.clauses.get(clause, 0.0) + weight


def _multi_phase(
    routing: Routing,
    found: dict[str, list[list[Any]]],
    cands: _Candidates,
    cfg: Mapping[str, Any],
) -> None:
    """Multi-phase work across several specialist domains is what an orchestrator is for (§10.5):
    it leads, a specialist may follow as secondary."""
    phases = int(cfg.get("multiPhaseDomains", 3))
    leaders = [c for c in cands.values() if c.id in routing.composite_targets]
    if (
        phases
        and len(leaders) >= phases
        and not any(c.intents for c in leaders)
        and not any(len(c.record.get("compatibleWith") or ()) >= phases for c in leaders)
    ):
        lead = max(c.score for c in leaders)
        for posting in found.get("role:orchestrator", ()):
            orchestrator = cands.get(posting[0])
            if orchestrator is None or orchestrator.positive <= 0:
                continue  # it must be named by the prompt's own words too
            if orchestrator.eligible and orchestrator.score <= lead:
                orchestrator.positive += round(lead - orchestrator.score + 0.5, 2)
                orchestrator.signals.append(f"role:multi-phase({len(routing.composite_targets)})")


def _settle(routing: Routing, cands: _Candidates, cfg: Mapping[str, Any]) -> None:
    """Final adjustments: a context boost alone is nothing, an orchestrator without a composite
    prompt is penalized, and the scores are rounded."""
    orchestrator_penalty = float(cfg.get("orchestratorPenalty", 2))
    for candidate in cands.values():
        if candidate.context and candidate.positive <= 0:
            candidate.context = 0.0
        if (
            candidate.record.get("routingRole") == "orchestrator"
            and not routing.composite
            and not candidate.explicit
            and candidate.positive > 0
        ):
            candidate.penalty += orchestrator_penalty
            candidate.soft_warnings.append("orchestrator-without-composite")
        candidate.positive = round(candidate.positive, 2)
        candidate.penalty = round(candidate.penalty, 2)


# the words naming a kind of target: "No MCP tools here", "nessuna skill, rispondi tu"
_KIND_WORDS = {"mcp": "mcp", "skill": "skill", "skills": "skill"}
# what may follow a kind word set aside as a whole ("no MCP tools", "no skills please")
_KIND_TAILS = frozenset(
    "tool tools server servers strumento strumenti here qui please grazie thanks".split()
)


def _kinds_set_aside(
    analysis: Analysis, found: Mapping[str, list[list[Any]]], cands: _Candidates
) -> None:
    """A negation whose direct object is a kind of target ("No MCP tools here", "senza skill",
    "don't use any skills") excludes every target of that kind — for "MCP" also the skills whose
    id says so ("mcp-database-expert": the user calls them by that word) — except one the user
    chose by name ("no other skills, use the pptx skill"): the specific outranks the general. A
    kind word framing an id ("non usare la skill pdf", "the pdf skill is off limits") is the
    id's frame, not the kind."""
    if not analysis.negation_objects:
        return
    words = analysis.words
    inside = {p for _, first, last in analysis.compounds for p in range(first, last + 1)}
    kinds: set[str] = set()
    for pos in analysis.negation_objects:
        kind = _KIND_WORDS.get(words[pos])
        if kind is None or pos in inside:
            continue
        before = words[pos - 1] if pos > 0 else ""
        after = words[pos + 1] if pos + 1 < len(words) else ""
        if before and found.get(f"@{before}"):
            continue  # "the pdf skill is off limits"
        if (
            after
            and analysis.content[pos + 1]
            and after not in _KIND_TAILS
            and analysis.clause[pos + 1] == analysis.clause[pos]
        ):
            continue  # "non usare la skill pdf", "no skill creator"
        kinds.add(kind)
    if not kinds:
        return
    for candidate in cands.values():
        named = "mcp" in kinds and "mcp" in _ID_SPLIT.split(candidate.id)
        if (
            (candidate.kind in kinds or named)
            and not candidate.explicit
            and not candidate.hard_excluded
        ):
            candidate.hard_excluded = True
            candidate.excluded_by = "user-negation"
            candidate.negated.append(f"kind:{candidate.kind}")


def _rank(routing: Routing, cands: _Candidates) -> None:
    """Order the candidates (locks, score, id), rank the eligible ones, pick the top intent."""
    kept = [c for c in cands.values() if not _context_only(c)]
    ordered = sorted(kept, key=lambda c: (-c.lock_priority, -c.score, c.id))
    rank = 0
    for candidate in ordered:
        if candidate.eligible:
            rank += 1
            candidate.rank = rank
    routing.candidates = ordered
    best: tuple[int, str, str] | None = None
    for candidate in ordered:
        for intent_id, (priority, _) in candidate.intents.items():
            if best is None or (-priority, intent_id) < (-best[0], best[1]):
                best = (priority, intent_id, candidate.id)
    if best is not None:
        routing.top_intent = (best[1], best[2], best[0])
    routing.explicit_ids = [c.id for c in ordered if c.explicit and c.eligible]


def _typos(
    analysis: Analysis,
    spans: dict[str, list[tuple[int, int]]],
    found: dict[str, list[list[Any]]],
    lookup: Callable[[Iterable[str]], Mapping[str, list[list[Any]]]],
) -> None:
    """Unmatched long words one edit from exactly one catalog word take its key (in place)."""
    unmatched: list[int] = []
    for pos, word in enumerate(analysis.words):
        if (
            analysis.content[pos]
            and len(word) >= typos.MIN_LENGTH
            and word.isalpha()
            and analysis.stems[pos] not in found
            and not analysis.stems[pos].isupper()  # a lexicon concept is a known word
        ):
            unmatched.append(pos)
    if not unmatched:
        return
    unmatched = unmatched[: typos.MAX_WORDS]
    variants = lookup(
        sorted({k for pos in unmatched for k in typos.variant_keys(analysis.words[pos])})
    )
    if not variants:
        return
    corrected: dict[str, list[tuple[int, int]]] = {}
    for pos in unmatched:
        word = analysis.words[pos]
        readings: dict[str, set[str]] = {}
        for variant in typos.variant_keys(word):
            for near, key in variants.get(variant, ()):
                if typos.one_edit_apart(word, str(near)):
                    readings.setdefault(str(near), set()).add(str(key))
        if len(readings) == 1:  # one reading only: an ambiguous typo is no evidence
            for key in readings.popitem()[1]:
                corrected.setdefault(key, []).append((pos, pos))
    fresh = [key for key in corrected if key not in found]
    found.update(lookup(fresh))
    for key, places in corrected.items():
        spans.setdefault(key, []).extend(places)


def _multi_source(routing: Routing, cands: dict[int, Candidate], cfg: Mapping[str, Any]) -> None:
    """Strong evidence for two or more specialists whose servers a multi-source specialist also
    works with (its card's ``compatibleWith`` names three or more): that specialist leads, when
    the prompt names it too (§10.2; "correlate heterogeneous sources")."""
    threshold = float(cfg.get("deterministicThreshold", 3))
    strong = [
        c
        for c in cands.values()
        if c.kind == "skill"
        and c.record.get("routingRole", "specialist") == "specialist"
        and c.score >= threshold
    ]
    if len(strong) < 2 or any(c.intents for c in strong):
        return
    for candidate in cands.values():
        servers = set(candidate.record.get("compatibleWith") or ())
        if candidate.kind != "skill" or len(servers) < 3 or candidate.positive <= 0:
            continue
        covered = [
            c
            for c in strong
            if c is not candidate and servers & set(c.record.get("compatibleWith") or ())
        ]
        if len(covered) >= 2:
            lead = max(c.score for c in covered)
            if candidate.score <= lead:
                candidate.positive += round(lead - candidate.score + 0.5, 2)
                candidate.signals.append(f"role:multi-source({len(covered)})")


def _context_only(candidate: Candidate) -> bool:
    """Reached only through the working folder's file types: not a candidate."""
    return not (
        candidate.positive
        or candidate.penalty
        or candidate.intents
        or candidate.lock_priority
        or candidate.explicit
        or candidate.hard_excluded
        or candidate.hard_suppressed
        or candidate.negated
    )


def _rule(
    routing: Routing,
    candidate: Candidate,
    kind: str,
    weight: float,
    label: str,
    extra: Any,
    negated: bool,
) -> None:
    if kind == "anti":
        if not negated and label not in candidate.anti:
            candidate.penalty += weight
            candidate.anti.append(label)
            candidate.soft_warnings.append(f"anti-pattern:{label}")
    elif negated:
        return
    elif kind == "intent":
        intent_id = str(extra["intent"])
        old = candidate.intents.get(intent_id)
        if old is None or weight > old[1]:
            candidate.intents[intent_id] = (int(extra.get("priority", 0)), weight)
    elif kind == "lock":
        candidate.lock_priority = max(candidate.lock_priority, int(extra.get("priority", 1)))
        candidate.signals.append(f"lock:{label}")
    elif kind == "suppress":
        if extra.get("mode") == "hard":
            candidate.hard_suppressed = True
            candidate.soft_warnings.append(f"hard-suppression:{label}")
        else:
            candidate.penalty += weight
            candidate.soft_warnings.append(f"soft-suppression:{label}")
    elif kind == "exclude" and not candidate.hard_excluded:
        candidate.hard_excluded = True
        candidate.excluded_by = f"catalog:{label}"


def _pattern_end(analysis: Analysis, first: int, extra: Any) -> int | None:
    if first < 0 or not isinstance(extra, dict):
        return None
    seq = list(extra.get("seq") or [])
    gap = int(extra.get("gap", 3))
    clause = analysis.clause[first]
    pos = first
    for wanted in seq:
        limit = pos + gap + 1
        pos += 1
        while pos < len(analysis.stems) and pos <= limit:
            if analysis.clause[pos] != clause:
                return None
            if analysis.stems[pos] == wanted:
                break
            pos += 1
        else:
            return None
        if pos > limit:
            return None
    return pos


def _use_verb_before(analysis: Analysis, first: int) -> bool:
    """A verb of using (or "with"/"via") within three words before an id: "usa X", "use the X
    skill", "con X", "with X". A bare mention is not a choice."""
    return any(word in _USE_WORDS for word in analysis.words[max(0, first - 3) : first])


def _mentions(analysis: Analysis) -> dict[str, tuple[int, int, bool]]:
    """Ids named in the text: hyphenated compounds, a word next to "skill"/"server"/"mcp", or
    the word a negation sets aside (:attr:`Analysis.negation_objects`: a bare id there is
    excluded like a framed one — "don't use pdf" — while elsewhere in a negated scope it is only a
    penalty: "pdf" is also a format).

    ``(first, last, framed)``: the first occurrence, and whether a target noun frames it ("the
    X skill", "la skill X").
    """
    out: dict[str, tuple[int, int, bool]] = {}
    words = analysis.words

    def framed(first: int, last: int) -> bool:
        return (first > 0 and words[first - 1] in _TARGET_NOUNS) or (
            last + 1 < len(words) and words[last + 1] in _TARGET_NOUNS
        )

    for word, first, last in analysis.compounds:
        if word not in out or (framed(first, last) and not out[word][2]):
            out[word] = (first, last, framed(first, last))
    for pos, word in enumerate(words):
        if word in _TARGET_NOUNS:
            for other in (pos - 1, pos + 1):
                if 0 <= other < len(words) and words[other] not in _TARGET_NOUNS:
                    lo, hi = min(pos, other), max(pos, other)
                    if words[other] not in out:
                        out[words[other]] = (lo, hi, True)
    for pos in sorted(analysis.negation_objects):  # "don't use pdf", "senza pptx", "pdf excluded"
        for name in _bare_names(words[pos]):
            if name not in out:
                out[name] = (pos, pos, False)
    return out


def _bare_names(word: str) -> tuple[str, ...]:
    """The ids a bare word set aside may name: itself, and its singular ("no PDFs")."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return (word, word[:-1])
    return (word,)


def _occurrences(analysis: Analysis, name: str) -> list[tuple[int, int]]:
    """Every place the id's words appear in sequence (a name may be chosen once, negated later)."""
    parts = [p for p in _ID_SPLIT.split(name) if p]
    words = analysis.words
    size = len(parts)
    return [
        (pos, pos + size - 1)
        for pos in range(len(words) - size + 1)
        if words[pos : pos + size] == parts
    ]


def _composite(routing: Routing, candidates: Iterable[Candidate]) -> None:
    """Two or more clauses led by different specialists, each with a strong signal there.

    Orchestrators do not count: a composite prompt is one that spans several specialist domains.
    """
    best_by_clause: dict[int, tuple[float, str]] = {}
    for candidate in candidates:
        if candidate.kind != "skill" or candidate.record.get("routingRole") == "orchestrator":
            continue
        for clause, weight in candidate.clauses.items():
            if weight < _COMPOSITE_CLAUSE_WEIGHT:
                continue
            old = best_by_clause.get(clause)
            if old is None or (weight, candidate.id) > old:
                best_by_clause[clause] = (weight, candidate.id)
    targets = sorted({target for _, target in best_by_clause.values()})
    routing.composite_targets = targets
    routing.composite = len(targets) >= 2
