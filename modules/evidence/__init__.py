"""The Evidence module (ARCHITECTURE §4.2; glossary "Evidence").

Source Evidence → preparation → Curated Evidence Units → manifest → Published Evidence →
fragments → Evidence Index generations → search. Imports only ``kernel``; the vector store,
embedder, clock and model transport arrive through :class:`EvidenceCapabilities`.

Entry points: :func:`prepare` (preparation.py), :func:`load_evidence` (catalog.py),
:func:`status_report` (status.py), :func:`resolve_id` / :func:`retire_unit` /
:func:`relink_unit` (resolution.py), :func:`evidence_query_text` (query_text.py),
:func:`load_eval_set` (eval_set.py).
"""

from modules.evidence.catalog import EvidencePaths, LoadedEvidence, load_evidence
from modules.evidence.eval_set import EvalCase, EvalSet, load_eval_set
from modules.evidence.fragments import EvidenceFragment, fragment_unit
from modules.evidence.manifest import Manifest, ManifestSource, load_manifest, render_manifest
from modules.evidence.preparation import PreparationPlan, Restructurer, plan_preparation, prepare
from modules.evidence.query_text import evidence_query_text
from modules.evidence.reconcile import EvidenceState, UnitState, reconcile
from modules.evidence.resolution import Resolution, relink_unit, resolve_id, retire_unit
from modules.evidence.status import status_report
from modules.evidence.units import (
    EVIDENCE_KINDS,
    EVIDENCE_PURPOSES,
    EvidenceUnit,
    ReviewItem,
    UnitFrontMatter,
    parse_unit,
    render_unit,
)

__all__ = [
    "EVIDENCE_KINDS",
    "EVIDENCE_PURPOSES",
    "EvalCase",
    "EvalSet",
    "EvidenceFragment",
    "EvidencePaths",
    "EvidenceState",
    "EvidenceUnit",
    "LoadedEvidence",
    "Manifest",
    "ManifestSource",
    "PreparationPlan",
    "Resolution",
    "Restructurer",
    "ReviewItem",
    "UnitFrontMatter",
    "UnitState",
    "evidence_query_text",
    "fragment_unit",
    "load_eval_set",
    "load_evidence",
    "load_manifest",
    "parse_unit",
    "plan_preparation",
    "prepare",
    "reconcile",
    "relink_unit",
    "render_manifest",
    "render_unit",
    "resolve_id",
    "retire_unit",
    "status_report",
]
