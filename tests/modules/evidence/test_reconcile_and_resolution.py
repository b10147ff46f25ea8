"""Status reconciliation (hand-written units first-class) and evidence resolution."""

from __future__ import annotations

import json

import pytest

from kernel.errors import NotFoundError, UsageError
from modules.evidence import (
    EvidencePaths,
    load_evidence,
    prepare,
    relink_unit,
    resolve_id,
    retire_unit,
    status_report,
)
from modules.evidence.manifest import load_manifest, render_manifest
from modules.evidence.units import parse_unit
from tests.modules.evidence.conftest import snapshot

LIMIT = 4000

HAND = """---
id: evidence:day-hospital
kind: domain
purposes: [sql_generation]
title: Day hospital excluded
source: ospedale.md
excerpts: ["I ricoveri in day hospital non vanno conteggiati nella degenza media."]
metadata: {}
review: []
---

Exclude day-hospital stays from average length of stay.
"""


def test_a_hand_written_unit_is_valid_without_any_preparation(paths: EvidencePaths) -> None:
    (paths.units_dir / "day-hospital.md").write_text(HAND, encoding="utf-8")
    state = load_evidence(paths, max_chunk_chars=LIMIT).state
    assert state.units["evidence:day-hospital"].publishable
    report = status_report(state)
    assert report["manifest"] == {
        "unrecorded": ["evidence:day-hospital"],
        "removed": [],
        "up_to_date": False,
    }
    assert state.reconciled.sources["ospedale.md"].units == ("evidence:day-hospital",)
    assert state.reconciled.sources["ospedale.md"].sha256 is None  # never prepared


def test_status_never_writes(paths: EvidencePaths) -> None:
    (paths.units_dir / "day-hospital.md").write_text(HAND, encoding="utf-8")
    before = snapshot(paths.root)
    status_report(load_evidence(paths, max_chunk_chars=LIMIT).state)
    assert snapshot(paths.root) == before


def test_status_computes_review_items_a_hand_edit_cannot_hide(paths: EvidencePaths) -> None:
    bad = HAND.replace("non vanno conteggiati", "vanno sempre conteggiati").replace(
        "kind: domain", "kind: formula"
    )
    (paths.units_dir / "day-hospital.md").write_text(bad, encoding="utf-8")
    report = status_report(load_evidence(paths, max_chunk_chars=LIMIT).state)
    codes = [(i["code"], i.get("field")) for i in report["review_items"]]  # type: ignore[union-attr]
    assert ("retirement_candidate", "excerpts[0]") in codes
    assert ("formula_invalid", "expression") in codes
    assert report["retirement_candidates"] == ["evidence:day-hospital"]
    assert report["blocked"] == ["evidence:day-hospital"]


def test_a_malformed_unit_is_reported_with_file_and_field(paths: EvidencePaths) -> None:
    (paths.units_dir / "day-hospital.md").write_text(
        HAND.replace("kind: domain", "kind: rule"), encoding="utf-8"
    )
    with pytest.raises(UsageError, match=r"evidence/units/day-hospital\.md.*kind"):
        load_evidence(paths, max_chunk_chars=LIMIT)


def test_resolve_gives_file_source_and_fragment(paths: EvidencePaths) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    found = resolve_id(paths, "evidence:drg#1", max_chunk_chars=LIMIT).to_json()
    assert found["file"] == "evidence/units/drg.md"
    assert found["source"] == "evidence/sources/ospedale.md"
    assert "Diagnosis Related Group" in found["fragment"]["text"]  # type: ignore[index]
    with pytest.raises(NotFoundError):
        resolve_id(paths, "evidence:drg#7", max_chunk_chars=LIMIT)
    with pytest.raises(NotFoundError):
        resolve_id(paths, "evidence:nothing", max_chunk_chars=LIMIT)


def test_retire_deletes_the_unit_reserves_the_id_and_is_not_recreated(
    paths: EvidencePaths,
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    retire_unit(paths, "evidence:drg", max_chunk_chars=LIMIT)
    assert not (paths.units_dir / "drg.md").exists()
    manifest = load_manifest(paths.manifest_file)
    assert "evidence:drg" in manifest.retired
    assert "evidence:drg" not in manifest.sources["ospedale.md"].units
    source = paths.sources_dir / "ospedale.md"
    source.write_text(source.read_text(encoding="utf-8") + "\nNuova regola.\n", "utf-8")
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert plan.created == ["evidence:nuova-regola"]  # the DRG passage stays declined
    with pytest.raises(NotFoundError, match="retired"):
        resolve_id(paths, "evidence:drg", max_chunk_chars=LIMIT)


def test_relink_moves_an_orphan_to_a_source_that_supports_it(paths: EvidencePaths) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    old = paths.sources_dir / "ospedale.md"
    new = paths.sources_dir / "ricoveri.md"
    new.write_bytes(old.read_bytes())
    old.unlink()
    relink_unit(paths, "evidence:drg", "ricoveri.md", max_chunk_chars=LIMIT)
    unit = parse_unit((paths.units_dir / "drg.md").read_text("utf-8"), "drg.md")
    assert unit.front.source == "ricoveri.md"
    assert unit.front.review == []
    manifest = json.loads(paths.manifest_file.read_text("utf-8"))
    assert "evidence:drg" in manifest["sources"]["ricoveri.md"]["units"]


def test_relink_refuses_a_source_that_does_not_support_the_excerpts(
    paths: EvidencePaths,
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    before = snapshot(paths.root)
    with pytest.raises(UsageError, match="not found in evidence/sources/california"):
        relink_unit(paths, "evidence:drg", "california-schools.md", max_chunk_chars=LIMIT)
    with pytest.raises(UsageError, match="not an existing source"):
        relink_unit(paths, "evidence:drg", "missing.md", max_chunk_chars=LIMIT)
    assert snapshot(paths.root) == before


def test_the_manifest_renders_canonically_and_a_corrupt_one_is_a_usage_error(
    paths: EvidencePaths,
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    manifest = load_manifest(paths.manifest_file)
    assert render_manifest(manifest) == paths.manifest_file.read_bytes()
    paths.manifest_file.write_text("{not json", encoding="utf-8")
    with pytest.raises(UsageError, match=r"manifest\.json.*restore it from Git"):
        load_evidence(paths, max_chunk_chars=LIMIT)
