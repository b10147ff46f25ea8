"""Generic reviewer tools (spec 003 §4.1, §11): the proposal format of ARCHITECTURE §6.

The core owns the generic tools — ``select`` (one option), ``decide`` (any subset), ``confirm``
(approve/reject the stage's artifacts and close it) and ``auto`` (events applied without review,
only on ``automatic`` stages) — and turns a proposal file into a :class:`ModuleOutcome` for every
stage until its owner module adds its own policy. Two kinds are added beside the contract's four:
``revision`` (ask a human to reopen this or an earlier stage: the glossary's Revision request) and
``fail`` (report that the stage cannot complete, with a code).

A proposal file::

    {"kind": "select", "prompt": "What does 'ablazione' mean here?",
     "options": [{"id": "flag", "label": "the flag_ablazione column",
                  "events": [{"type": "concept_clarified", "subject": "ablazione",
                              "payload": {"meaning": "…"}}]}],
     "artifacts": [{"name": "question.md", "content": "…"}]}
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from kernel import events as ev
from kernel.errors import UsageError
from kernel.outcomes import ArtifactChange, Failure, ModuleOutcome, ReviewRequest, RevisionRequest

__all__ = [
    "MAX_PROPOSAL_BYTES",
    "MAX_PROPOSAL_DEPTH",
    "Proposal",
    "check_json_depth",
    "outcome_from_proposal",
    "parse_proposal",
]

MAX_PROPOSAL_BYTES = 4 * 1024 * 1024
# Arrays/objects nested deeper than this are refused before decoding (a proposal's own structure
# takes 5 levels to reach an event payload; a decoder, schema check or canonical encoder would
# otherwise hit the recursion limit on ``[[[[…`` and fail with exit 1).
MAX_PROPOSAL_DEPTH = 64

_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
_JSON_NESTING = re.compile(rb"[\[\]{}]")


def check_json_depth(data: bytes, source: str, limit: int = MAX_PROPOSAL_DEPTH) -> None:
    """Refuse (exit 2) JSON whose arrays/objects nest deeper than ``limit``, without recursing.

    Strings are blanked first (brackets inside them do not count); a linear scan then tracks the
    depth and stops at the first level past the limit.
    """
    depth = 0
    for match in _JSON_NESTING.finditer(_JSON_STRING.sub(b'""', data)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise UsageError(f"{source}: JSON nested deeper than {limit} levels")
        else:
            depth -= 1


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class ProposalEvent(_Strict, frozen=True, kw_only=True):
    type: str
    subject: str | None = None
    payload: dict[str, object] = msgspec.field(default_factory=dict)


class ProposalOption(_Strict, frozen=True, kw_only=True):
    id: str
    label: str
    events: tuple[ProposalEvent, ...] = ()


class ProposalArtifact(_Strict, frozen=True, kw_only=True):
    name: str
    content: str


class ProposalFailure(_Strict, frozen=True, kw_only=True):
    code: str
    message: str


class Proposal(_Strict, frozen=True, kw_only=True):
    kind: Literal["select", "decide", "confirm", "auto", "revision", "fail"]
    prompt: str = ""
    options: tuple[ProposalOption, ...] = ()
    events: tuple[ProposalEvent, ...] = ()
    artifacts: tuple[ProposalArtifact, ...] = ()
    target: str | None = None
    reason: str = ""
    failure: ProposalFailure | None = None
    invocation: str | None = None


_DECODER = msgspec.json.Decoder(Proposal)


def parse_proposal(data: bytes, source: str = "proposal") -> Proposal:
    """Decode and validate a proposal file; errors name the file and the JSON path (exit 2)."""
    if len(data) > MAX_PROPOSAL_BYTES:
        raise UsageError(f"{source}: larger than {MAX_PROPOSAL_BYTES} bytes")
    check_json_depth(data, source)
    try:
        return _DECODER.decode(data)
    except msgspec.ValidationError as err:
        raise UsageError(f"{source}: invalid proposal: {err}") from err
    except msgspec.DecodeError as err:
        raise UsageError(f"{source}: not valid JSON: {err}") from err
    except RecursionError as err:  # belt and braces: the depth check comes first
        raise UsageError(f"{source}: JSON nested too deeply") from err


def _event(proposed: ProposalEvent) -> ev.ProposedEvent:
    return ev.ProposedEvent(type=proposed.type, subject=proposed.subject, payload=proposed.payload)


def outcome_from_proposal(proposal: Proposal, stage: str) -> ModuleOutcome:
    """The generic policy: map each proposal kind to the outcome it stands for."""
    artifacts = tuple(
        ArtifactChange(name=a.name, content=a.content.encode("utf-8")) for a in proposal.artifacts
    )
    kind = proposal.kind
    if kind != "auto" and proposal.events:
        raise UsageError(
            f"a {kind} proposal carries no top-level events (put them in options, or use auto)"
        )
    if kind in ("select", "decide", "confirm"):
        if kind == "confirm" and proposal.options:
            raise UsageError("a confirm proposal has no options: the reviewer approves or rejects")
        prompt = proposal.prompt or (f"Approve stage {stage}?" if kind == "confirm" else "")
        review = ReviewRequest(
            kind=kind,
            prompt=prompt,
            options=tuple(
                ev.ReviewOptionPayload(
                    id=o.id, label=o.label, events=tuple(_event(e) for e in o.events)
                )
                for o in proposal.options
            ),
            artifacts=tuple(a.name for a in proposal.artifacts),
        )
        return ModuleOutcome(
            status="awaiting_review",
            invocation=proposal.invocation,
            artifacts=artifacts,
            review=review,
        )
    if proposal.options:
        raise UsageError(f"a {kind} proposal has no options")
    if kind == "auto":
        return ModuleOutcome(
            status="completed",
            invocation=proposal.invocation,
            events=tuple(_event(e) for e in proposal.events),
            artifacts=artifacts,
        )
    if kind == "revision":
        if not proposal.target:
            raise UsageError("a revision proposal needs a target stage")
        return ModuleOutcome(
            status="revision_requested",
            invocation=proposal.invocation,
            artifacts=artifacts,
            revision=RevisionRequest(target=proposal.target, reason=proposal.reason),
        )
    if proposal.failure is None:
        raise UsageError("a fail proposal needs a failure {code, message}")
    return ModuleOutcome(
        status="failed",
        invocation=proposal.invocation,
        artifacts=artifacts,
        failure=Failure(code=proposal.failure.code, message=proposal.failure.message),
    )
