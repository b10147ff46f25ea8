"""Evidence preparation: incremental, atomic, never overwriting or duplicating curated units."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from kernel.errors import ConflictError, UsageError
from modules.evidence import EvidencePaths, load_evidence, prepare
from modules.evidence import staging as staging_module
from modules.evidence.segmentation import Passage
from modules.evidence.sources import SourceDocument
from modules.evidence.units import parse_unit, render_unit
from tests.modules.evidence.conftest import snapshot

LIMIT = 4000


def _unit_text(paths: EvidencePaths, slug: str) -> str:
    return (paths.units_dir / f"{slug}.md").read_text(encoding="utf-8")


def test_prepare_creates_units_and_records_them_in_the_manifest(paths: EvidencePaths) -> None:
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert len(plan.created) == 19
    manifest = json.loads(paths.manifest_file.read_text(encoding="utf-8"))
    recorded = {u for entry in manifest["sources"].values() for u in entry["units"]}
    assert recorded == set(plan.created)
    unit = parse_unit(_unit_text(paths, "eligible-free-rate"), "eligible-free-rate.md")
    assert unit.front.kind == "formula"
    assert unit.front.metadata == {"db": "california_schools"}


def test_a_second_run_on_unchanged_sources_writes_nothing(paths: EvidencePaths) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    before = snapshot(paths.root)
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert plan.writes == {}
    assert {r.status for r in plan.reports} == {"unchanged"}
    assert snapshot(paths.root) == before


def test_a_hand_edited_unit_is_never_overwritten_or_duplicated(paths: EvidencePaths) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    path = paths.units_dir / "frpm.md"
    edited = path.read_text(encoding="utf-8").replace("title: FRPM", "title: Free meals (FRPM)")
    path.write_text(edited, encoding="utf-8")
    source = paths.sources_dir / "california-schools.md"
    source.write_text(source.read_text(encoding="utf-8") + "\nA new rule is here.\n", "utf-8")
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert plan.created == ["evidence:a-new-rule-is-here"]
    assert path.read_text(encoding="utf-8") == edited


def test_a_hand_written_unit_covering_a_passage_prevents_its_creation(
    paths: EvidencePaths,
) -> None:
    (paths.units_dir / "free-meals.md").write_text(
        "---\nid: evidence:free-meals\nkind: glossary\npurposes: [disambiguation]\n"
        "title: Free meals\nsource: california-schools.md\n"
        'excerpts: ["Free or Reduced Price Meal, il programma federale di pasti."]\n'
        "metadata: {}\nreview: []\n---\n\nHand written.\n",
        encoding="utf-8",
    )
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert "evidence:frpm" not in plan.created
    assert "evidence:free-meals" in plan.reports[0].kept


def test_an_unsupported_excerpt_makes_a_retirement_candidate_not_a_deletion(
    paths: EvidencePaths,
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    source = paths.sources_dir / "california-schools.md"
    text = source.read_text(encoding="utf-8").replace("Charter school: scuola", "Charter: scuola")
    source.write_text(text, encoding="utf-8")
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert plan.reports[0].retirement_candidates == ("evidence:charter-school",)
    unit = parse_unit(_unit_text(paths, "charter-school"), "charter-school.md")
    assert [(i.code, i.field) for i in unit.front.review] == [
        ("retirement_candidate", "excerpts[0]")
    ]


def test_a_removed_source_orphans_its_units_without_deleting_them(paths: EvidencePaths) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    (paths.sources_dir / "ospedale.md").unlink()
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert "evidence:drg" in plan.orphaned
    unit = parse_unit(_unit_text(paths, "drg"), "drg.md")
    assert unit.front.review[0].code == "orphaned"
    state = load_evidence(paths, max_chunk_chars=LIMIT).state
    assert not state.units["evidence:drg"].publishable


def test_slugs_are_never_reused_for_different_content(paths: EvidencePaths) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    (paths.units_dir / "frpm.md").unlink()
    source = paths.sources_dir / "california-schools.md"
    text = source.read_text(encoding="utf-8").replace("il programma federale", "the programme")
    source.write_text(text, encoding="utf-8")
    plan = prepare(paths, max_chunk_chars=LIMIT)
    assert "evidence:frpm-2" in plan.created
    manifest = json.loads(paths.manifest_file.read_text(encoding="utf-8"))
    assert "evidence:frpm" in manifest["retired"]


class _FailingRestructurer:
    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on
        self.calls = 0

    def restructure(self, source: SourceDocument, passages: Sequence[Passage]) -> list[Passage]:
        self.calls += 1
        if source.path == self.fail_on:
            raise RuntimeError("model call failed")
        return list(passages)


def test_a_preparation_failing_halfway_leaves_everything_byte_identical(
    paths: EvidencePaths,
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    for name in ("california-schools.md", "ospedale.md"):
        source = paths.sources_dir / name
        source.write_text(source.read_text(encoding="utf-8") + "\nOne more rule.\n", "utf-8")
    before = snapshot(paths.root)
    model = _FailingRestructurer(fail_on="ospedale.md")  # the second source, after the first
    with pytest.raises(RuntimeError):
        prepare(paths, max_chunk_chars=LIMIT, restructurer=model)
    assert model.calls == 2
    assert snapshot(paths.root) == before


def test_a_failure_while_moving_files_into_place_rolls_everything_back(
    paths: EvidencePaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    source = paths.sources_dir / "california-schools.md"
    source.write_text(source.read_text(encoding="utf-8") + "\nRule one.\n\nRule two.\n", "utf-8")
    (paths.sources_dir / "ospedale.md").unlink()  # orphans rewrite several existing units
    before = snapshot(paths.root)
    real = staging_module._replace
    moves: list[Path] = []

    def flaky(src: Path, dst: Path) -> None:
        moves.append(dst)
        if len(moves) == 4:
            raise OSError("disk full")
        real(src, dst)

    monkeypatch.setattr(staging_module, "_replace", flaky)
    with pytest.raises(OSError, match="disk full"):
        prepare(paths, max_chunk_chars=LIMIT)
    assert len(moves) == 4
    assert snapshot(paths.root) == before
    assert not any(paths.staging_dir.glob("*/journal.json"))


def test_a_crash_mid_apply_is_undone_by_the_next_command(
    paths: EvidencePaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    source = paths.sources_dir / "california-schools.md"
    source.write_text(source.read_text(encoding="utf-8") + "\nRule one.\n\nRule two.\n", "utf-8")
    before = snapshot(paths.root)
    real = staging_module._replace
    calls = {"n": 0}

    def crash(src: Path, dst: Path) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("killed")  # not caught by rollback's normal path? it is BaseException
        real(src, dst)

    monkeypatch.setattr(staging_module, "_replace", crash)
    monkeypatch.setattr(staging_module, "_roll_back", lambda root, stage: None)  # crash: no undo
    with pytest.raises(SystemExit):
        prepare(paths, max_chunk_chars=LIMIT)
    assert snapshot(paths.root) != before  # half applied, journal left behind
    monkeypatch.undo()
    load_evidence(paths, max_chunk_chars=LIMIT)  # any later command recovers first
    assert snapshot(paths.root) == before


def test_a_file_changed_meanwhile_is_a_conflict_and_nothing_is_written(
    paths: EvidencePaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    from modules.evidence import preparation

    real_plan = preparation.plan_preparation

    def plan_then_race(*args: object, **kwargs: object) -> preparation.PreparationPlan:
        plan = real_plan(*args, **kwargs)  # type: ignore[arg-type]
        paths.manifest_file.write_text('{"version": 1}\n', encoding="utf-8")
        return plan

    monkeypatch.setattr(preparation, "plan_preparation", plan_then_race)
    with pytest.raises(ConflictError):
        prepare(paths, max_chunk_chars=LIMIT)
    assert list(paths.units_dir.iterdir()) == []


def test_a_non_utf8_source_is_refused_naming_it(paths: EvidencePaths) -> None:
    (paths.sources_dir / "latin1.md").write_bytes("caff\xe8".encode("latin-1"))
    before = snapshot(paths.root)
    with pytest.raises(UsageError, match=r"latin1\.md.*UTF-8"):
        prepare(paths, max_chunk_chars=LIMIT)
    assert snapshot(paths.root) == before


def test_only_the_named_source_is_prepared(paths: EvidencePaths) -> None:
    plan = prepare(paths, max_chunk_chars=LIMIT, only="ospedale.md")
    assert [r.path for r in plan.reports] == ["ospedale.md"]
    assert all(
        parse_unit((paths.units_dir / f"{u.split(':')[1]}.md").read_text("utf-8"), "x").front.source
        == "ospedale.md"
        for u in plan.created
    )
    with pytest.raises(UsageError, match="no such source"):
        prepare(paths, max_chunk_chars=LIMIT, only="nope.md")


def test_a_too_large_atomic_element_gets_a_blocking_review_item(paths: EvidencePaths) -> None:
    (paths.sources_dir / "big.md").write_text("word " * 300 + "\n", encoding="utf-8")
    prepare(paths, max_chunk_chars=500, only="big.md")
    unit_file = next(paths.units_dir.glob("word-*.md"))
    unit = parse_unit(unit_file.read_text("utf-8"), unit_file.name)
    assert [i.code for i in unit.front.review] == ["fragment_too_large"]
    assert render_unit(unit) == unit_file.read_text("utf-8")
