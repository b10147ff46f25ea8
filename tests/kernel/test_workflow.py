"""workflow.yaml: the shipped file's shape, and errors that name the file and the field path."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.errors import NotFoundError, UsageError
from kernel.workflow import default_workflow_path, load_workflow, parse_workflow


def test_shipped_workflow_is_the_ordered_workflow_of_the_architecture() -> None:
    spec = load_workflow()
    assert spec.ids == (
        "admission",
        "disambiguation",
        "memory_recall",
        "rewriting",
        "schema_linking",
        "cte",
        "sql",
        "verification",
        "datamart",
        "memory_promotion",
        "finalize",
    )
    displays = [s.display for s in spec.steps if s.kind == "stage"]
    assert displays == [f"F{i}" for i in range(1, 9)]
    promotion = spec.step("memory_promotion")
    assert promotion.kind == "contribution"
    assert promotion.extension_point == "before_finalize"
    assert promotion.policy == "required"
    assert promotion.owner == "memory"
    assert spec.step("admission").kind == "preflight"
    assert spec.step("verification").completion == "automatic"
    assert spec.step("cte").allows_artifact("cte/1.sql")
    assert not spec.step("cte").allows_artifact("cte/a/b.sql")
    assert not spec.step("sql").allows_artifact("question.md")


def test_unknown_stage_is_not_found() -> None:
    with pytest.raises(NotFoundError, match="unknown stage 'nope'"):
        load_workflow().step("nope")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workflow.yaml"
    path.write_text(text)
    return path


BASE = """\
version: 1
name: t
stages:
  - id: one
    display: F1
    owner: core
    emits: [concept_clarified]
"""


def test_a_minimal_workflow_loads(tmp_path: Path) -> None:
    spec = parse_workflow(_write(tmp_path, BASE))
    assert spec.ids == ("one", "finalize")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (BASE.replace("emits: [concept_clarified]", "emits: [nope]"), "stages[0].emits[0]"),
        (
            BASE.replace("emits: [concept_clarified]", "emits: [stage_started]"),
            "stages[0].emits[0]",
        ),
        (BASE.replace("display: F1", "display: first"), "stages[0].display"),
        (
            BASE.replace("owner: core", "owner: core\n    completion: sometimes"),
            "stages[0].completion",
        ),
        (BASE.replace("version: 1", "version: 2"), "version"),
        (BASE + "    colour: red\n", "stages[0].colour"),
        (BASE.replace("id: one", "id: One"), "stages[0].id"),
        (
            BASE + "extension_points:\n  - id: x\n    after: nowhere\n    contributions:\n"
            "      - {id: c, owner: memory, policy: required}\n",
            "extension_points[0].after",
        ),
        (
            BASE.replace("emits: [concept_clarified]", "artifacts: [../up.txt]"),
            "stages[0].artifacts[0]",
        ),
    ],
)
def test_bad_workflow_names_file_and_field(tmp_path: Path, text: str, where: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UsageError) as err:
        parse_workflow(path)
    assert str(path) in err.value.message
    assert where in err.value.message
    assert err.value.exit_code == 2


def test_not_yaml_is_a_usage_error_with_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "version: 1\nstages: [\n")
    with pytest.raises(UsageError, match=r"not valid YAML \(line"):
        parse_workflow(path)


def test_duplicate_display_codes_are_rejected(tmp_path: Path) -> None:
    text = BASE + "  - id: two\n    display: F1\n    owner: core\n"
    with pytest.raises(UsageError, match=r"stages\[1\]\.display: display F1 is used twice"):
        parse_workflow(_write(tmp_path, text))


def test_compiled_workflow_is_cached_by_content_hash(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = load_workflow(default_workflow_path(), cache_dir=cache)
    cached = list(cache.glob("workflow-*.msgpack"))
    assert [p.name for p in cached] == [f"workflow-{first.sha256}.msgpack"]
    assert load_workflow(default_workflow_path(), cache_dir=cache) == first
