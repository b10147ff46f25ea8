"""The SecurityGate (ADR 0010, ARCHITECTURE §4.1): the deterministic guard on every question.

Always on, never replaceable (a final class: no protocol, nothing injected), never calls a model.
It reads the RAW question before anything else and refuses what the workspace's DomainProfile
declares off limits:

- ``competitor`` / ``out_of_scope``: a name (display or alias) of an external entity;
- ``restricted``: a restricted keyword, or a restricted pattern (a regular expression matched
  case-insensitively on the folded text).

Matching runs on the folded view (:mod:`modules.disambiguation.text_fold`): case, accents, NFKC,
look-alike letters, invisible characters and the separators between the letters of a name do
not matter ("R i v a l e", "RIVALE", "Rivalé", "Rіvale" with a Cyrillic і are all "rivale"). A
name matches whole words only: "Rivale" does not match inside "rivalerebbe" (list the forms to
refuse as aliases). Every occurrence is found; overlapping matches are resolved longest first,
and every character any refused match covers is masked. The home entity is never refused: a
refused name inside a longer-or-equal mention of the home entity is not a refusal.

:meth:`SecurityGate.check` is a pure function of (profile, question). ``masked`` is the raw
question with each refused span replaced by ``[competitor]``, ``[out_of_scope]`` or
``[restricted]``: it is the only form of a refused question anything downstream may receive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, final

from kernel.domain_profile import DomainProfile
from modules.disambiguation.text_fold import FoldedText, fold, is_joining, skeleton

__all__ = ["REFUSED_KINDS", "GateEntity", "GateKind", "GateVerdict", "SecurityGate"]

GateKind = Literal["competitor", "out_of_scope", "restricted"]
#: the order reasons are given in (and the admission code: the first kind refused)
REFUSED_KINDS: tuple[GateKind, ...] = ("restricted", "competitor", "out_of_scope")

_REASONS: dict[GateKind, str] = {
    "restricted": "asks about a restricted subject",
    "competitor": "names a competitor",
    "out_of_scope": "names an entity outside the workspace scope",
}
_SEPARATORS = r"[\W_]*"


@dataclass(frozen=True)
class GateEntity:
    """One refused mention: ``span`` is ``(start, end)`` in the raw question (code points,
    end exclusive); ``masked_span`` where its placeholder lies in ``GateVerdict.masked``."""

    kind: GateKind
    display: str
    span: tuple[int, int]
    masked_span: tuple[int, int]


@dataclass(frozen=True)
class GateVerdict:
    verdict: Literal["allow", "refuse"]
    masked: str
    entities: tuple[GateEntity, ...]
    #: what was refused, without the refused text (it is recorded in the ledger)
    reason: str
    #: what the person can ask instead ('' when allowed)
    narrowing: str

    @property
    def refused(self) -> bool:
        return self.verdict == "refuse"

    @property
    def code(self) -> GateKind | None:
        """The first refused kind in :data:`REFUSED_KINDS` order (the admission code)."""
        kinds = {e.kind for e in self.entities}
        return next((k for k in REFUSED_KINDS if k in kinds), None)


@dataclass(frozen=True)
class _Needle:
    """One name to look for: its pattern on the folded text."""

    pattern: re.Pattern[str]
    kind: GateKind | None  # None: the home entity (never refused)
    display: str
    order: int


@dataclass
class _Hit:
    start: int  # folded offsets
    end: int
    length: int  # of the match that gave the group its identity
    kind: GateKind | None
    display: str
    order: int


@final
class SecurityGate:
    """``SecurityGate(profile).check(question)``; the profile's names are compiled once."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        raise TypeError("the SecurityGate is never replaced or extended")

    def __init__(self, profile: DomainProfile) -> None:
        self._profile = profile
        needles: list[_Needle] = []
        home = profile.home_entity
        for name in home.names if home is not None else ():
            needles.extend(_name_needles(name, None, home.display if home else "", len(needles)))
        for entity in profile.external_entities:
            for name in entity.names:
                needles.extend(_name_needles(name, entity.kind, entity.display, len(needles)))
        for keyword in profile.restricted.keywords:
            needles.extend(_name_needles(keyword, "restricted", keyword, len(needles)))
        self._needles = tuple(needles)
        self._patterns = tuple(
            (re.compile(p, re.IGNORECASE), p) for p in profile.restricted.patterns
        )

    @property
    def profile(self) -> DomainProfile:
        return self._profile

    def check(self, question: str) -> GateVerdict:
        folded = fold(question)
        hits = self._hits(folded)
        groups = _resolve(hits)
        refused = _raw_groups(groups, folded)
        if not refused:
            return GateVerdict("allow", question, (), "the question names nothing refused", "")
        masked, entities = _mask(question, refused)
        kinds = {e.kind for e in entities}
        ordered = [k for k in REFUSED_KINDS if k in kinds]
        reason = "the question " + _listed([_REASONS[k] for k in ordered])
        narrowing = "; ".join(_narrowing(k, self._profile) for k in ordered)
        return GateVerdict("refuse", masked, entities, reason, narrowing)

    def _hits(self, folded: FoldedText) -> list[_Hit]:
        text = folded.text
        hits: list[_Hit] = []
        for needle in self._needles:
            for found in needle.pattern.finditer(text):
                start, end = found.span(1)
                if _bounded(text, start, end):
                    hits.append(
                        _Hit(start, end, end - start, needle.kind, needle.display, needle.order)
                    )
        order = len(self._needles)
        for index, (pattern, source) in enumerate(self._patterns):
            for found in pattern.finditer(text):
                start, end = found.span()
                if end > start:
                    hits.append(_Hit(start, end, end - start, "restricted", source, order + index))
        return hits


def _name_needles(name: str, kind: GateKind | None, display: str, order: int) -> list[_Needle]:
    """A name is matched as the letters of its skeleton with any separators between them; its
    lower- and upper-case forms too (Greek ``Η``/``η`` fold to different Latin letters)."""
    skeletons = dict.fromkeys(
        s for s in (skeleton(name), skeleton(name.lower()), skeleton(name.upper())) if s
    )
    return [
        _Needle(
            re.compile("(?=(" + _SEPARATORS.join(re.escape(c) for c in letters) + "))"),
            kind,
            display,
            order + i,
        )
        for i, letters in enumerate(skeletons)
    ]


def _bounded(text: str, start: int, end: int) -> bool:
    """A match covers whole words: no word continues it on either side."""
    before = start == 0 or not is_joining(text[start - 1], text[start])
    after = end == len(text) or not is_joining(text[end - 1], text[end])
    return before and after


def _resolve(hits: list[_Hit]) -> list[_Hit]:
    """Longest first (home before refusal on a tie, then leftmost, then profile order): a
    match inside a longer-or-equal home mention is dropped; a refused match merges with every
    refused group it overlaps (so each character any refused match covers is masked)."""
    groups: list[_Hit] = []
    for hit in sorted(hits, key=lambda h: (-h.length, h.kind is not None, h.start, h.order)):
        overlapping = [g for g in groups if g.start < hit.end and hit.start < g.end]
        if hit.kind is None:
            if not overlapping:
                groups.append(hit)
            continue
        if any(g.kind is None and g.start <= hit.start and hit.end <= g.end for g in overlapping):
            continue
        refused = [g for g in overlapping if g.kind is not None]
        if not refused:
            groups.append(hit)
            continue
        keep = refused[0]
        for other in refused[1:]:
            groups = [g for g in groups if g is not other]
            keep.start, keep.end = min(keep.start, other.start), max(keep.end, other.end)
        keep.start, keep.end = min(keep.start, hit.start), max(keep.end, hit.end)
    return [g for g in groups if g.kind is not None]


def _raw_groups(groups: list[_Hit], folded: FoldedText) -> list[tuple[int, int, _Hit]]:
    """Refused groups as raw spans, in order; raw spans that touch one raw character (``ß``
    folds to two) are merged, keeping the identity of the longer match."""
    spans = sorted(
        ((*folded.raw_span(g.start, g.end), g) for g in groups), key=lambda s: (s[0], s[1])
    )
    merged: list[tuple[int, int, _Hit]] = []
    for start, end, group in spans:
        if merged and start < merged[-1][1]:
            last_start, last_end, last = merged[-1]
            best = last if last.length >= group.length else group
            merged[-1] = (last_start, max(last_end, end), best)
        else:
            merged.append((start, end, group))
    return merged


def _mask(
    question: str, refused: list[tuple[int, int, _Hit]]
) -> tuple[str, tuple[GateEntity, ...]]:
    parts: list[str] = []
    entities: list[GateEntity] = []
    cursor = 0
    length = 0
    for start, end, group in refused:
        kind = group.kind
        assert kind is not None
        parts.append(question[cursor:start])
        length += start - cursor
        placeholder = f"[{kind}]"
        entities.append(
            GateEntity(kind, group.display, (start, end), (length, length + len(placeholder)))
        )
        parts.append(placeholder)
        length += len(placeholder)
        cursor = end
    parts.append(question[cursor:])
    return "".join(parts), tuple(entities)


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _narrowing(kind: GateKind, profile: DomainProfile) -> str:
    home = profile.home_entity
    own = f"{home.display}'s own data" if home is not None else "the workspace's own data"
    if kind == "competitor":
        return f"ask about {own}, without naming another organisation"
    if kind == "out_of_scope":
        return "leave out the entity outside the workspace scope and ask about what it covers"
    return "leave out the restricted subject and ask about the rest of the analysis"
