"""Formula proposals: formulas found during a session, imported as curated units awaiting review.

Glossary ("Formula proposal"): a formula found during a session is kept in the session; it does
not become Published Evidence until it is imported, reviewed and approved in the workspace
repository. ``tht evidence import-proposal [SESSION] --seq SEQ`` takes an effective
``concept_formula_approved`` decision (formula, inputs, concept), ``--artifact NAME`` a session
artifact holding ``{"title", "expression", "inputs", "notes"}`` (verified against the hash the
ledger recorded). The import writes, atomically:

- a new Source Evidence ``evidence/sources/proposals/<session>-<ref>.md`` quoting the proposal
  and its provenance (existing sources are never modified);
- a formula unit citing it, with a blocking ``proposal_awaiting_review`` review item: the curator
  reviews it, removes the item, and publishes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kernel.errors import ConflictError, UsageError
from modules.evidence.catalog import EvidencePaths, load_evidence
from modules.evidence.formula import check_formula
from modules.evidence.manifest import render_manifest
from modules.evidence.reconcile import reconcile_manifest
from modules.evidence.review import PROPOSAL_AWAITING_REVIEW
from modules.evidence.slugs import assign_slug
from modules.evidence.staging import apply_atomically
from modules.evidence.text import collapse_ws, excerpt_found
from modules.evidence.units import (
    EvidenceUnit,
    ReviewItem,
    UnitFrontMatter,
    evidence_id,
    render_unit,
)

__all__ = [
    "FormulaProposal",
    "import_proposal",
    "proposal_from_artifact",
    "proposal_from_decision",
]


@dataclass(frozen=True)
class FormulaProposal:
    session: str
    ref: str  # "seq-12" or "artifact-<name>"
    title: str
    expression: str
    inputs: tuple[str, ...]
    notes: str = ""


def proposal_from_artifact(session: str, name: str, content: bytes) -> FormulaProposal:
    """A proposal from a session artifact's JSON; malformed → exit 2 naming the artifact."""
    shown = f"session {session} artifact {name}"
    try:
        data = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{shown}: not a JSON formula proposal: {err}") from err
    if not isinstance(data, dict):
        raise UsageError(f"{shown}: a formula proposal is a JSON object")
    title, expression, inputs = data.get("title"), data.get("expression"), data.get("inputs")
    if not isinstance(title, str) or not title.strip():
        raise UsageError(f"{shown}: title: a non-empty string is required")
    if not isinstance(expression, str) or not expression.strip():
        raise UsageError(f"{shown}: expression: a non-empty string is required")
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise UsageError(f"{shown}: inputs: a list of column names is required")
    notes = data.get("notes", "")
    safe = "".join(c if c.isalnum() else "-" for c in name).strip("-").lower()
    return FormulaProposal(
        session=session,
        ref=f"artifact-{safe}",
        title=title.strip(),
        expression=expression.strip(),
        inputs=tuple(inputs),
        notes=notes if isinstance(notes, str) else "",
    )


def _source_text(p: FormulaProposal) -> str:
    lines = [
        f"# Formula proposal: {p.title}",
        "",
        f"Found in session {p.session} ({p.ref}).",
        "",
        f"{p.title} = {p.expression}",
        "",
        "Inputs: " + ", ".join(p.inputs),
    ]
    if p.notes:
        lines += ["", p.notes]
    return "\n".join(lines) + "\n"


def import_proposal(
    paths: EvidencePaths, proposal: FormulaProposal, *, max_chunk_chars: int
) -> dict[str, object]:
    """Write the proposal's source and its formula unit awaiting review, atomically."""
    check = check_formula(proposal.expression, proposal.inputs)
    if not check.ok:
        raise UsageError(
            f"the proposal's formula is not importable: {'; '.join(check.problems)}",
            details={"problems": list(check.problems)},
        )
    loaded = load_evidence(paths, max_chunk_chars=max_chunk_chars)
    state = loaded.state
    source_rel = f"proposals/{proposal.session}-{proposal.ref}.md"
    source_path = f"{paths.rel(paths.sources_dir)}/{source_rel}"
    if (paths.sources_dir / source_rel).exists():
        raise ConflictError(
            f"{source_path} already exists: this proposal was imported before",
            details={"source": source_path},
        )
    taken = {s.unit.slug for s in state.units.values()}
    taken |= {
        uid.split(":", 1)[1] for uid in state.manifest.unit_ids() | set(state.manifest.retired)
    }
    slug = assign_slug(proposal.title, taken)
    excerpt = f"{proposal.title} = {proposal.expression}"
    front = UnitFrontMatter(
        id=evidence_id(slug),
        kind="formula",
        purposes=["schema_linking", "sql_generation"],
        title=proposal.title,
        source=source_rel,
        excerpts=[excerpt],
        metadata={"proposal": f"{proposal.session}/{proposal.ref}"},
        expression=proposal.expression,
        inputs=list(proposal.inputs),
        review=[
            ReviewItem(
                code=PROPOSAL_AWAITING_REVIEW,
                message=f"imported from session {proposal.session} ({proposal.ref}): check the "
                "formula, its inputs and purposes, then remove this item to allow publication",
                field="expression",
            )
        ],
    )
    unit = EvidenceUnit(front=front, body=excerpt)
    source_text = _source_text(proposal)
    units = {uid: s.unit for uid, s in state.units.items()}
    units[unit.id] = unit
    manifest = reconcile_manifest(
        state.manifest, units, set(state.sources) | set(state.unreadable) | {source_rel}
    )
    unit_rel = f"{paths.rel(paths.units_dir)}/{unit.file_name}"
    manifest_rel = paths.rel(paths.manifest_file)
    writes = {
        source_path: source_text.encode("utf-8"),
        unit_rel: render_unit(unit).encode("utf-8"),
        manifest_rel: render_manifest(manifest),
    }
    if not excerpt_found(excerpt, collapse_ws(source_text)):  # final validation
        raise UsageError(f"the proposal's excerpt is not found in {source_path}")
    apply_atomically(
        paths.root,
        writes,
        staging_root=paths.staging_dir,
        expect={
            source_path: None,
            unit_rel: None,
            manifest_rel: loaded.raw.get(manifest_rel),
        },
    )
    return {
        "id": unit.id,
        "file": unit_rel,
        "source": source_path,
        "review": PROPOSAL_AWAITING_REVIEW,
    }


def proposal_from_decision(session: str, record: object, seq: int) -> FormulaProposal:
    """A proposal from an effective ``concept_formula_approved`` decision at ``seq``."""
    from kernel.errors import NotFoundError
    from kernel.fold import DecisionRecord

    if record is None:
        raise NotFoundError(f"session {session} has no decision at seq {seq}")
    assert isinstance(record, DecisionRecord)
    if record.type != "concept_formula_approved":
        raise UsageError(f"seq {seq} is a {record.type}, not a concept_formula_approved decision")
    if record.status != "effective":
        raise UsageError(f"seq {seq} is {record.status}, not an effective decision")
    payload = record.event.payload
    formula = str(getattr(payload, "formula", ""))
    inputs = tuple(str(i) for i in getattr(payload, "inputs", ()))
    title = record.subject or f"Formula from session {session}"
    return FormulaProposal(
        session=session,
        ref=f"seq-{seq}",
        title=title,
        expression=formula,
        inputs=inputs,
        notes=str(getattr(payload, "reason", "")),
    )
