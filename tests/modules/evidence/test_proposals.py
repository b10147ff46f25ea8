"""Formula proposals: imported from a session as curated units awaiting review."""

from __future__ import annotations

import json

import pytest

from kernel.errors import ConflictError, UsageError
from modules.evidence import EvidencePaths, load_evidence
from modules.evidence.proposals import FormulaProposal, import_proposal, proposal_from_artifact
from tests.modules.evidence.conftest import snapshot

LIMIT = 4000
PROPOSAL = FormulaProposal(
    session="01ABC",
    ref="seq-12",
    title="Tasso di ricovero ripetuto",
    expression="COUNT(ricoveri_ripetuti) * 1.0 / NULLIF(COUNT(ricoveri), 0)",
    inputs=("ricoveri_ripetuti", "ricoveri"),
)


def test_an_imported_proposal_is_a_valid_formula_unit_blocked_until_reviewed(
    paths: EvidencePaths,
) -> None:
    body = import_proposal(paths, PROPOSAL, max_chunk_chars=LIMIT)
    assert body["id"] == "evidence:tasso-di-ricovero-ripetuto"
    assert body["source"] == "evidence/sources/proposals/01ABC-seq-12.md"
    state = load_evidence(paths, max_chunk_chars=LIMIT).state
    unit = state.units["evidence:tasso-di-ricovero-ripetuto"]
    assert unit.unit.front.kind == "formula"
    assert [i.code for i in unit.review] == [
        "proposal_awaiting_review"
    ]  # excerpt found, formula ok
    assert state.reconciled == state.manifest  # the manifest was updated with it


def test_importing_twice_is_a_conflict_and_changes_nothing(paths: EvidencePaths) -> None:
    import_proposal(paths, PROPOSAL, max_chunk_chars=LIMIT)
    before = snapshot(paths.root)
    with pytest.raises(ConflictError):
        import_proposal(paths, PROPOSAL, max_chunk_chars=LIMIT)
    assert snapshot(paths.root) == before


def test_a_full_query_is_not_importable(paths: EvidencePaths) -> None:
    bad = FormulaProposal(
        session="01ABC", ref="seq-1", title="q", expression="SELECT 1 FROM t", inputs=()
    )
    before = snapshot(paths.root)
    with pytest.raises(UsageError, match="full query"):
        import_proposal(paths, bad, max_chunk_chars=LIMIT)
    assert snapshot(paths.root) == before


def test_an_artifact_proposal_is_parsed_and_its_errors_name_the_field() -> None:
    good = json.dumps({"title": "Rate", "expression": "a / b", "inputs": ["a", "b"]}).encode()
    proposal = proposal_from_artifact("01ABC", "formula_proposals/rate.json", good)
    assert proposal.ref == "artifact-formula-proposals-rate-json"
    assert proposal.inputs == ("a", "b")
    with pytest.raises(UsageError, match="inputs"):
        proposal_from_artifact("01ABC", "p.json", b'{"title": "R", "expression": "a"}')
    with pytest.raises(UsageError, match="not a JSON"):
        proposal_from_artifact("01ABC", "p.json", b"nope")
