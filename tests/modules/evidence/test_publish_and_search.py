"""Generations (stage → evaluate → activate), hybrid filtered search, fail-closed outcomes.

Real engines: Qdrant Edge in the workspace folder, the real BM25 encoder, the deterministic
hashing embedder.
"""

from __future__ import annotations

import shutil

import pytest

from kernel.errors import PolicyError
from kernel.vectors import CollectionSpec, VectorFilter, VectorPoint, point_id
from modules.evidence import EvidencePaths, prepare
from modules.evidence.generations import GENERATIONS_FILE, load_generation_state
from modules.evidence.publish import publish
from modules.evidence.query_text import evidence_query_text
from modules.evidence.search import search_evidence
from tests.modules.evidence.conftest_index import CountingEmbedder, Engines
from tests.support.sparse_copy import copytree_sparse

LIMIT = 4000

EVAL = """cases:
  - question: "Tasso di occupazione dei posti letto"
    purpose: schema_linking
    expected: [evidence:tasso-di-occupazione]
    type: lexical
  - question: "average length of hospital stay"
    purpose: disambiguation
    expected: [evidence:degenza-media]
    type: semantic
  - question: "free meal programme FRPM"
    purpose: schema_linking
    where: {db: california_schools}
    expected: [evidence:frpm]
    type: mixed
"""


def _find(engines: Engines, text: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return search_evidence(engines.caps(), evidence_query_text(text), **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def published(paths: EvidencePaths, engines: Engines) -> Engines:
    prepare(paths, max_chunk_chars=LIMIT)
    publish(engines.caps())
    return engines


def test_publish_activates_a_generation_that_search_finds(published: Engines) -> None:
    outcome = _find(published, "Tasso di occupazione", purpose="schema_linking")
    assert outcome.status == "available"
    assert outcome.results[0].unit_id == "evidence:tasso-di-occupazione"
    assert outcome.results[0].fragments == ("evidence:tasso-di-occupazione#1",)
    assert outcome.generation is not None and outcome.generation.startswith("g1-")


def test_purpose_kind_and_metadata_filter_the_results(published: Engines) -> None:
    by_purpose = _find(published, "DRG manuale", purpose="rewriting", limit=50)
    assert by_purpose.results
    kinds = {r.kind for r in by_purpose.results}
    assert kinds <= {"glossary", "reference", "example"}  # the kinds serving rewriting
    only_formulas = _find(published, "tasso", purpose="schema_linking", kinds=["formula"])
    assert {r.kind for r in only_formulas.results} == {"formula"}
    california = _find(
        published, "tasso", purpose="schema_linking", where={"db": "california_schools"}, limit=50
    )
    assert california.results
    assert all(r.source == "evidence/sources/california-schools.md" for r in california.results)


def test_available_can_be_empty(published: Engines) -> None:
    outcome = _find(published, "anything", purpose="schema_linking", where={"db": "nowhere"})
    assert outcome.status == "available"
    assert outcome.results == ()


def test_republishing_unchanged_evidence_embeds_nothing(published: Engines) -> None:
    before = load_generation_state(published.caps().paths.state_dir).active
    published.embedder.passages = 0
    report = publish(published.caps())
    assert report.status == "unchanged"
    assert report.generation == before
    assert published.embedder.passages == 0


def test_a_new_generation_replaces_the_old_one_and_its_points(
    published: Engines, paths: EvidencePaths
) -> None:
    first = load_generation_state(paths.state_dir).active
    assert first is not None
    (paths.sources_dir / "extra.md").write_text("Una nuova regola sui ricoveri.\n", "utf-8")
    prepare(paths, max_chunk_chars=LIMIT)
    report = publish(published.caps())
    assert report.status == "activated"
    assert report.generation.number == 2
    store = published.open_store()
    assert store.count(VectorFilter(kind="evidence", match={"generation": first.id})) == 0
    assert (
        store.count(VectorFilter(kind="evidence", match={"generation": report.generation.id}))
        == report.generation.fragments + 1  # and the completion marker
    )


def test_a_passing_evaluation_keeps_dense_bm25_and_fused_ranks(
    paths: EvidencePaths, engines: Engines
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    paths.eval_file.write_text(EVAL, encoding="utf-8")
    report = publish(engines.caps())
    assert report.evaluation is not None and report.evaluation.passed
    ranks = report.evaluation.to_json()["results"][0]["ranks"]  # type: ignore[index]
    assert set(ranks) == {"fused", "dense", "bm25"}
    assert ranks["fused"] == 1


def test_a_failing_candidate_is_discarded_and_the_active_generation_stays(
    published: Engines, paths: EvidencePaths
) -> None:
    active = load_generation_state(paths.state_dir).active
    paths.eval_file.write_text(
        EVAL
        + """  - question: "CDE data"
    purpose: sql_generation
    expected: [evidence:cde-data]
    type: lexical
""",
        encoding="utf-8",
    )
    (paths.sources_dir / "extra.md").write_text("Un'altra regola.\n", "utf-8")
    prepare(paths, max_chunk_chars=LIMIT)
    with pytest.raises(PolicyError, match="failed the evaluation set") as err:
        publish(published.caps())
    failures = err.value.details["evaluation"]["failures"]  # type: ignore[index]
    assert [f["question"] for f in failures] == ["CDE data"]  # a reference serves no SQL
    state = load_generation_state(paths.state_dir)
    assert state.active == active
    store = published.open_store()
    assert store.count(VectorFilter(kind="evidence")) == active.fragments + 1  # type: ignore[union-attr]
    assert _find(published, "Tasso", purpose="schema_linking").generation == active.id  # type: ignore[union-attr]


def test_units_with_review_items_are_not_published(
    published: Engines, paths: EvidencePaths
) -> None:
    (paths.sources_dir / "ospedale.md").unlink()
    prepare(paths, max_chunk_chars=LIMIT)
    report = publish(published.caps())
    assert "evidence:drg" in report.blocked
    outcome = _find(published, "DRG Diagnosis Related Group", purpose="disambiguation", limit=50)
    assert "evidence:drg" not in [r.unit_id for r in outcome.results]


# --- fail-closed -------------------------------------------------------------------------------


def _unavailable(engines: Engines, reason: str) -> None:
    engines.close()
    outcome = _find(engines, "Tasso di occupazione", purpose="schema_linking")
    assert outcome.status == "unavailable"
    assert outcome.results == ()
    assert outcome.reason == reason, outcome.warning
    assert outcome.warning


def test_no_published_generation_is_unavailable(engines: Engines) -> None:
    _unavailable(engines, "missing")


def test_a_corrupt_generation_record_is_unavailable(
    published: Engines, paths: EvidencePaths
) -> None:
    (paths.state_dir / GENERATIONS_FILE).write_text("{broken", encoding="utf-8")
    _unavailable(published, "corrupt")


def test_a_missing_index_folder_is_unavailable(published: Engines, paths: EvidencePaths) -> None:
    published.close()
    shutil.rmtree(paths.root / ".tht" / "qdrant")
    _unavailable(published, "missing")


def test_a_corrupt_index_is_unavailable(published: Engines, paths: EvidencePaths) -> None:
    published.close()
    for file in (paths.root / ".tht" / "qdrant").rglob("*"):
        if file.is_file():
            file.write_bytes(b"\0garbage")
    engines_outcome = _find(published, "Tasso", purpose="schema_linking")
    assert engines_outcome.status == "unavailable"
    assert engines_outcome.results == ()


def test_an_incompatible_embedder_is_unavailable(published: Engines) -> None:
    published.embedder = CountingEmbedder(dimension=32)
    _unavailable(published, "incompatible")


def test_an_older_generation_restored_in_the_store_is_unavailable(
    published: Engines, paths: EvidencePaths
) -> None:
    published.close()
    qdrant = paths.root / ".tht" / "qdrant"
    backup = paths.root / "qdrant-g1"
    copytree_sparse(qdrant, backup)  # the shard's holes stay holes
    (paths.sources_dir / "extra.md").write_text("Ancora una regola.\n", "utf-8")
    prepare(paths, max_chunk_chars=LIMIT)
    publish(published.caps())
    published.close()
    shutil.rmtree(qdrant)
    copytree_sparse(backup, qdrant)  # the store now holds generation 1, the record says 2
    _unavailable(published, "stale")


def test_points_of_another_workspace_never_match(published: Engines, paths: EvidencePaths) -> None:
    store = published.open_store()
    foreign = VectorPoint(
        id=point_id("foreign"),
        kind="evidence",
        dense=published.embedder.embed_passages(["Tasso di occupazione"])[0],
        sparse=published.bm25.embed_document("Tasso di occupazione"),
        payload={
            "generation": "g1-other",
            "unit_id": "evidence:foreign",
            "purpose": ["schema_linking"],
        },
    )
    store.upsert([foreign])
    outcome = _find(published, "Tasso di occupazione", purpose="schema_linking", limit=50)
    assert outcome.status == "available"
    assert "evidence:foreign" not in [r.unit_id for r in outcome.results]


def test_publish_upgrades_a_dense_only_collection_without_losing_its_points(
    paths: EvidencePaths, engines: Engines
) -> None:
    store = engines.open_store()
    store.ensure_collection(CollectionSpec(dense_size=64, bm25=False))
    memory = VectorPoint(
        id=point_id("memory:1"),
        kind="memory",
        dense=engines.embedder.embed_passages(["ricordo"])[0],
        payload={"text": "ricordo"},
    )
    store.upsert([memory])
    prepare(paths, max_chunk_chars=LIMIT)
    publish(engines.caps())
    assert store.describe().bm25
    assert store.count(VectorFilter(kind="memory")) == 1
    hits = store.query_dense(dense=memory.dense, where=VectorFilter(kind="memory"), limit=1)
    assert hits[0].id == memory.id
    assert _find(engines, "Tasso", purpose="schema_linking").status == "available"
