"""Catalog build: golden byte-stability, validation errors naming file and field, fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel.errors import UsageError
from modules.routing.catalog_build import build_catalog
from modules.routing.pack import CatalogError, open_pack, verify_pack
from modules.routing.sources import OverridesFile, load_overrides, read_skills
from tests.modules.routing.conftest import (
    CATALOGS,
    REPO,
    build_anthropic,
    build_tesisquare,
    write_skill,
)

GOLDEN = REPO / "golden" / "routing" / "compiled"


@pytest.mark.parametrize(
    ("name", "build"), [("tesisquare", build_tesisquare), ("anthropic", build_anthropic)]
)
def test_real_catalog_builds_are_byte_stable(name: str, build: object, update_golden: bool) -> None:
    data = build()  # type: ignore[operator]
    assert data == build()  # type: ignore[operator]
    golden = GOLDEN / f"{name}.pack"
    if update_golden:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_bytes(data)
    assert golden.read_bytes() == data, "catalog bytes changed; explain it and --update-golden"


def test_fingerprint_covers_the_content(tmp_path: Path) -> None:
    path = tmp_path / "c.pack"
    path.write_bytes(build_anthropic())
    pack = open_pack(path)
    assert pack.fingerprint.startswith("sha256:") and verify_pack(pack)
    raw = bytearray(path.read_bytes())
    raw[-5] = ord("x") if raw[-5] != ord("x") else ord("y")
    path.write_bytes(bytes(raw))
    assert not verify_pack(open_pack(path))


def test_targets_are_ordered_by_id_skills_first(tesisquare: object) -> None:
    records = tesisquare.targets()  # type: ignore[attr-defined]
    skills = [r["id"] for r in records if r["kind"] == "skill"]
    mcps = [r["id"] for r in records if r["kind"] == "mcp"]
    assert skills == sorted(skills) and mcps == sorted(mcps)
    assert [r["kind"] for r in records] == ["skill"] * len(skills) + ["mcp"] * len(mcps)


def test_override_for_an_unknown_id_is_a_build_error(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "only-skill", "Does things.")
    overrides = OverridesFile.model_validate({"overrides": {"ghost-skill": {"category": "x"}}})
    with pytest.raises(UsageError, match=r"ov.json: overrides.ghost-skill: no skill"):
        build_catalog(
            read_skills(tmp_path / "skills"), overrides=overrides, overrides_name="ov.json"
        )


def test_invalid_override_field_names_file_and_path(tmp_path: Path) -> None:
    bad = tmp_path / "ov.json"
    bad.write_text(json.dumps({"overrides": {"a": {"routingRole": "boss"}}}), encoding="utf-8")
    with pytest.raises(UsageError, match=r"ov.json: overrides.a.routingRole"):
        load_overrides(bad)


def test_skill_without_name_names_the_file_and_field(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "nameless"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: x\n---\nbody", encoding="utf-8")
    with pytest.raises(UsageError, match=r"skills/nameless/SKILL.md: frontmatter.name"):
        read_skills(tmp_path / "skills")


def test_skills_without_summary_are_reported(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "plain-skill", "Does things with widgets.")
    _, report = build_catalog(read_skills(tmp_path / "skills"))
    assert report.missing_summary == ["plain-skill"]


def test_corrupt_or_foreign_files_are_catalog_errors(tmp_path: Path) -> None:
    for content in (b"", b"not json\n", b'{"kind": "other"}\n', b'{"kind": "tht-routing-catalog"'):
        path = tmp_path / "bad.pack"
        path.write_bytes(content)
        with pytest.raises(CatalogError, match=r"bad\.pack"):
            open_pack(path)


def test_catalog_derived_signals_route_an_uncurated_catalog(anthropic: object) -> None:
    from modules.routing.pipeline import run_routing

    outcome = run_routing("Merge these three PDFs into one and add a watermark", anthropic)  # type: ignore[arg-type]
    assert outcome.hints()[0]["id"] == "pdf"
    # "Do NOT use for PDFs" in the docx description is a negative signal for docx
    docx = next(c for c in outcome.routing.candidates if c.id == "docx")
    assert docx.anti and docx.score < 0


def test_copied_catalog_sources_keep_their_provenance() -> None:
    assert (CATALOGS / "PROVENANCE.md").is_file()


def test_a_catalog_built_by_another_signals_version_is_refused(tmp_path: Path) -> None:
    data = build_anthropic()
    header, rest = data.split(b"\n", 1)
    old = json.loads(header)
    old["signalsVersion"] = old["signalsVersion"] - 1
    path = tmp_path / "old.pack"
    path.write_bytes(json.dumps(old).encode() + b"\n" + rest)
    with pytest.raises(
        CatalogError, match=r"old\.pack: built with routing signals version .*rebuild"
    ):
        open_pack(path)


def _postings(tmp_path: Path, description: str) -> dict[str, list[str]]:
    skills = tmp_path / "skills"
    write_skill(skills, "web-kit", description)
    write_skill(skills, "other-kit", "Plans holidays.")
    data, _ = build_catalog(read_skills(skills))
    path = tmp_path / "c.pack"
    path.write_bytes(data)
    pack = open_pack(path)
    every_key = pack.keys()
    return {key: [p[2] for p in pack.lookup(key) if p[0] == 1] for key in every_key}


def test_a_usage_negation_inside_a_sentence_negates_only_what_follows(tmp_path: Path) -> None:
    kinds = _postings(
        tmp_path,
        "Use for complex artifacts requiring state management or routing - not for simple "
        "single-file snippets.",
    )
    assert "catalog" in kinds["state manag"] and "anti" not in kinds["state manag"]
    assert kinds["snippet"] == ["anti"]


def test_a_descriptive_dont_is_not_a_usage_negation(tmp_path: Path) -> None:
    kinds = _postings(tmp_path, "Helps with choices that don't read as templated defaults.")
    assert "anti" not in kinds.get("TEMPLATE", [])


def test_routing_meta_words_are_not_index_terms(tmp_path: Path) -> None:
    kinds = _postings(tmp_path, "Use when the user needs or wants a hedge maze.")
    assert "hedg" in kinds
    assert not {"user", "need", "want", "USER"} & {k for k, v in kinds.items() if v}
