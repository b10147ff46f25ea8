"""The Evidence fusion: settings validation, language-aware weighting, the recorded weights."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernel.errors import UsageError
from kernel.vectors import ScoredPoint
from modules.evidence import EvidencePaths
from modules.evidence.capabilities import EvidenceSettings
from modules.evidence.fusion import DEFAULT_FUSION, FusionSettings, fuse_rankings, fusion_settings
from modules.evidence.generations import load_generation_state
from modules.evidence.publish import publish
from modules.evidence.query_text import evidence_query_text
from modules.evidence.retrieval import embed_query, evidence_filter, rank_units
from tests.modules.evidence.conftest_index import Engines

EN = "Female refers to gender = 'F' and the value of the patient"
IT = "Femmina si riferisce al genere e il valore del paziente"


def _point(pid: str, text: str) -> ScoredPoint:
    return ScoredPoint(id=pid, score=1.0, payload={"text": text, "unit_id": f"evidence:{pid}"})


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dense_weight": -0.5}, "dense_weight"),
        ({"bm25_weight": math.nan}, "bm25_weight"),
        ({"bm25_weight": math.inf}, "bm25_weight"),
        ({"cross_lingual_bm25": 1.5}, "cross_lingual_bm25"),
        ({"cross_lingual_bm25": -0.1}, "cross_lingual_bm25"),
        ({"dense_weight": 0.0, "bm25_weight": 0.0}, "cannot both be 0"),
        ({"rrf_k": 0}, "rrf_k"),
        ({"rrf_k": True}, "rrf_k"),
        ({"dense_weight": "0.5"}, "dense_weight"),
        ({"align_vocabulary": 1}, "align_vocabulary"),
        ({"align_min_cosine": 0}, "align_min_cosine"),
        ({"align_min_cosine": 1.5}, "align_min_cosine"),
        ({"align_min_cosine": float("nan")}, "align_min_cosine"),
        ({"align_min_cosine": True}, "align_min_cosine"),
    ],
)
def test_bad_fusion_settings_are_a_usage_error(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(UsageError, match=field) as err:
        FusionSettings(**kwargs)  # type: ignore[arg-type]
    assert err.value.exit_code == 2
    assert "\n" not in err.value.message


def test_an_unknown_method_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="rrf, weighted"):
        fusion_settings("convex", rrf_k=60, dense_weight=1, bm25_weight=1, cross_lingual_bm25=1)


def test_plain_rrf_records_only_its_k_and_both_weights_zero_is_fine_there() -> None:
    rrf = FusionSettings(
        method="rrf",
        rrf_k=60,
        dense_weight=0,
        bm25_weight=0,
        translate_bm25=False,
        align_vocabulary=False,
    )
    assert rrf.to_json() == {"method": "rrf", "rrf_k": 60}
    assert set(DEFAULT_FUSION.to_json()) == {
        "method",
        "rrf_k",
        "dense_weight",
        "bm25_weight",
        "cross_lingual_bm25",
        "translate_bm25",
        "translate_terms",
        "lexicon",
        "align_vocabulary",
        "align_min_cosine",
    }
    aligned = FusionSettings(method="rrf", translate_bm25=False, align_min_cosine=0.8)
    assert aligned.to_json() == {
        "method": "rrf",
        "rrf_k": 1,
        "align_vocabulary": True,
        "align_min_cosine": 0.8,
    }


def test_workspace_defaults_are_the_modules_defaults() -> None:
    """kernel/workspace.py cannot import the module: this test ties the two."""
    from kernel.workspace_settings import _models

    model = _models()().evidence  # type: ignore[attr-defined]
    assert model.bm25_stemming == "first"  # chosen by measurement (docs/evidence.md)
    fusion = model.fusion
    assert (
        fusion_settings(
            fusion.method,
            rrf_k=fusion.k,
            dense_weight=fusion.dense_weight,
            bm25_weight=fusion.bm25_weight,
            cross_lingual_bm25=fusion.cross_lingual_bm25,
            translate_bm25=fusion.translate_bm25,
            translate_terms=fusion.translate_terms,
            align_vocabulary=fusion.align_vocabulary,
            align_min_cosine=fusion.align_min_cosine,
        )
        == DEFAULT_FUSION
    )
    assert DEFAULT_FUSION.align_vocabulary  # chosen by measurement (docs/evidence.md)
    assert DEFAULT_FUSION.translate_bm25  # chosen by measurement (docs/evidence.md)
    assert EvidenceSettings().fusion == DEFAULT_FUSION


@pytest.mark.parametrize(
    "yaml",
    [
        "  fusion: {dense_weight: -1}\n",
        "  fusion: {method: convex}\n",
        "  fusion: {dense_weight: 0, bm25_weight: 0}\n",
        "  fusion: {cross_lingual_bm25: 2}\n",
        "  fusion: {align_min_cosine: 0}\n",
        "  fusion: {align_vocabulary: maybe}\n",
        "  fusion: {weights: [1, 0]}\n",
        "  bm25_stemming: all\n",
    ],
)
def test_bad_fusion_in_workspace_yaml_exits_2_with_the_field(tmp_path: Path, yaml: str) -> None:
    from kernel.workspace import init_workspace
    from tests.tht.conftest import run_tht

    ws, _ = init_workspace(tmp_path / "ws")
    text = ws.settings_file.read_text(encoding="utf-8")
    ws.settings_file.write_text(text.replace("evidence:\n", "evidence:\n" + yaml), "utf-8")
    done = run_tht("search", "find", "x", "--workspace", str(ws.root), "--json")
    assert done.code == 2
    field = "bm25_stemming" if "stemming" in yaml else "fusion"
    assert f"evidence.{field}" in done.stderr
    assert "Traceback" not in done.stderr


# --- language-aware weighting ---------------------------------------------------------------


def test_bm25_is_weighed_down_only_across_languages() -> None:
    fusion = FusionSettings(dense_weight=0.5, bm25_weight=0.5, cross_lingual_bm25=0.0, rrf_k=1)
    dense = [_point("en-dense", EN + " one")]
    bm25 = [_point("en-bm25", EN + " two"), _point("it-bm25", IT)]
    italian = fuse_rankings(
        dense, bm25, fusion, query_text="Qual è il genere del paziente?", limit=5
    )
    # the English BM25 hit lost its weight (0: dropped), the Italian one kept it
    assert [p.id for p in italian] == ["en-dense", "it-bm25"]
    english = fuse_rankings(
        dense, bm25, fusion, query_text="What is the patient's gender?", limit=5
    )
    assert [p.id for p in english] == ["en-bm25", "en-dense"]  # tie: id order; Italian dropped


def test_a_query_or_fragment_without_a_language_is_never_a_mismatch() -> None:
    fusion = FusionSettings(dense_weight=0.5, bm25_weight=0.5, cross_lingual_bm25=0.0, rrf_k=1)
    bm25 = [_point("formula", "`Free Meal Count (K-12)` / `Enrollment (K-12)`")]
    assert [p.id for p in fuse_rankings([], bm25, fusion, query_text="FRPM K-12", limit=5)] == [
        "formula"
    ]
    italian = fuse_rankings([], bm25, fusion, query_text="la percentuale dei pasti", limit=5)
    assert [p.id for p in italian] == ["formula"]


def test_rrf_method_ignores_languages_and_weights() -> None:
    fusion = FusionSettings(method="rrf", rrf_k=60, dense_weight=0, bm25_weight=1)
    dense = [_point("a", EN)]
    bm25 = [_point("b", EN), _point("a", EN)]
    fused = fuse_rankings(dense, bm25, fusion, query_text="il paziente", limit=5)
    assert [p.id for p in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(1 / 60 + 1 / 61)
    assert (fused[0].dense_rank, fused[0].bm25_rank) == (1, 2)


# --- through the index ----------------------------------------------------------------------


def test_the_generation_records_its_fusion_and_a_new_fusion_is_a_new_generation(
    published: Engines,
) -> None:
    paths = EvidencePaths.of(published.workspace)
    first = load_generation_state(paths.state_dir).active
    assert first is not None and first.fusion == DEFAULT_FUSION.to_json()
    assert publish(published.caps()).status == "unchanged"
    other = FusionSettings(
        dense_weight=0.9,
        bm25_weight=0.1,
        cross_lingual_bm25=0.2,
        rrf_k=5,
        translate_bm25=False,
        align_vocabulary=False,
    )
    report = publish(published.caps(fusion=other))
    assert report.status == "activated"
    second = load_generation_state(paths.state_dir).active
    assert second is not None and second.id != first.id
    assert second.fusion == {
        "method": "weighted",
        "rrf_k": 5,
        "dense_weight": 0.9,
        "bm25_weight": 0.1,
        "cross_lingual_bm25": 0.2,
    }
    rrf = FusionSettings(method="rrf", rrf_k=60, translate_bm25=False, align_vocabulary=False)
    baseline = publish(published.caps(fusion=rrf))
    assert baseline.generation.fusion == {"method": "rrf", "rrf_k": 60}


@pytest.mark.parametrize(
    "fusion",
    [
        FusionSettings(dense_weight=0.3, bm25_weight=0.7, cross_lingual_bm25=0.1, rrf_k=1),
        FusionSettings(dense_weight=1.0, bm25_weight=0.0, rrf_k=5),
        FusionSettings(method="rrf", rrf_k=60),
    ],
)
@pytest.mark.parametrize("question", ["tasso di occupazione dei letti", "free meal rate"])
def test_the_search_path_equals_the_fusion_of_the_two_rankings(
    published: Engines, fusion: FusionSettings, question: str
) -> None:
    from kernel.vectors import VectorFilter
    from modules.evidence.retrieval import fetch_size, group_units

    paths = EvidencePaths.of(published.workspace)
    active = load_generation_state(paths.state_dir).active
    assert active is not None
    store = published.open_store()
    vectors = embed_query(published.embedder, published.bm25, evidence_query_text(question))
    where = evidence_filter(active.id, "schema_linking")
    corpus = VectorFilter(kind="evidence", match={"generation": active.id})
    found = rank_units(
        store, vectors, where, generation=active.id, limit=10, fusion=fusion, prefetch_limit=50
    )
    dense = store.query_dense(dense=vectors.dense, where=where, limit=50)
    bm25 = store.query_sparse(sparse=vectors.sparse, where=where, limit=50, idf_corpus=corpus)
    offline = fuse_rankings(dense, bm25, fusion, query_text=vectors.text, limit=fetch_size(10))
    assert [u.unit_id for u in found] == [u.unit_id for u in group_units(offline, 10)]
    assert found
    if fusion.bm25_weight == 0 and fusion.method == "weighted":
        dense_only = rank_units(store, vectors, where, generation=active.id, limit=10, mode="dense")
        assert [u.unit_id for u in found] == [u.unit_id for u in dense_only]
