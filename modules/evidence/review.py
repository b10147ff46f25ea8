"""Review items the system computes: stable codes, human messages, the field they concern.

A review item kept in a unit blocks its publication (glossary, "Review item"). Some are written
into the unit by ``prepare`` (orphaned, retirement candidate, atomic element too large) so the
curator sees them in the file and in the Git diff; all of them are also recomputed by ``status``
and ``publish`` from the files as they are, so a hand edit can neither hide nor fake one.
"""

from __future__ import annotations

from modules.evidence.formula import check_formula
from modules.evidence.fragments import fragment_unit
from modules.evidence.text import excerpt_found
from modules.evidence.units import EvidenceUnit, ReviewItem

__all__ = [
    "FORMULA_INVALID",
    "FRAGMENT_TOO_LARGE",
    "KIND_FIELDS",
    "ORPHANED",
    "PROPOSAL_AWAITING_REVIEW",
    "RETIREMENT_CANDIDATE",
    "SOURCE_UNREADABLE",
    "computed_review_items",
    "merge_review",
]

ORPHANED = "orphaned"
RETIREMENT_CANDIDATE = "retirement_candidate"
FORMULA_INVALID = "formula_invalid"
KIND_FIELDS = "kind_fields"
FRAGMENT_TOO_LARGE = "fragment_too_large"
SOURCE_UNREADABLE = "source_unreadable"
PROPOSAL_AWAITING_REVIEW = "proposal_awaiting_review"


def orphaned_item(source: str) -> ReviewItem:
    return ReviewItem(
        code=ORPHANED,
        message=f"source evidence/sources/{source} no longer exists: delete this unit, relink it "
        "(tht evidence resolve ID --relink SOURCE) or restore the source",
        field="source",
    )


def retirement_item(index: int, source: str) -> ReviewItem:
    return ReviewItem(
        code=RETIREMENT_CANDIDATE,
        message=f"excerpt {index + 1} is no longer found in evidence/sources/{source}: make the "
        "unit consistent with its source again, or retire it (tht evidence resolve ID --retire)",
        field=f"excerpts[{index}]",
    )


def computed_review_items(
    unit: EvidenceUnit,
    collapsed_source: str | None,
    *,
    source_problem: str | None,
    max_chunk_chars: int,
) -> list[ReviewItem]:
    """What blocks ``unit`` given its source (collapsed text; None when missing or unreadable)."""
    items: list[ReviewItem] = []
    front = unit.front
    if source_problem is not None:
        items.append(ReviewItem(code=SOURCE_UNREADABLE, message=source_problem, field="source"))
    elif collapsed_source is None:
        items.append(orphaned_item(front.source))
    else:
        for i, excerpt in enumerate(front.excerpts):
            if not excerpt_found(excerpt, collapsed_source):
                items.append(retirement_item(i, front.source))
    if front.kind == "formula":
        if front.expression is None:
            items.append(
                ReviewItem(
                    code=FORMULA_INVALID,
                    message="a formula unit needs `expression` (one PostgreSQL expression) and "
                    "`inputs` (the columns it reads)",
                    field="expression",
                )
            )
        else:
            check = check_formula(front.expression, front.inputs)
            items.extend(
                ReviewItem(code=FORMULA_INVALID, message=problem, field="expression")
                for problem in check.problems
            )
    elif front.expression is not None or front.inputs:
        items.append(
            ReviewItem(
                code=KIND_FIELDS,
                message=f"`expression` and `inputs` belong to formula units, not {front.kind}",
                field="expression" if front.expression is not None else "inputs",
            )
        )
    plan = fragment_unit(unit, max_chunk_chars)
    items.extend(
        ReviewItem(code=FRAGMENT_TOO_LARGE, message=message, field="body")
        for message in plan.too_large
    )
    return items


def merge_review(
    written: list[ReviewItem] | tuple[ReviewItem, ...], computed: list[ReviewItem]
) -> tuple[ReviewItem, ...]:
    """Written items first, then computed ones not already written (same code and field)."""
    seen = {(item.code, item.field) for item in written}
    out = list(written)
    for item in computed:
        if (item.code, item.field) not in seen:
            seen.add((item.code, item.field))
            out.append(item)
    return tuple(out)
