"""What people see repeats from run to run: tie order by unit id, generation ids from content and
the clock, a progress total from the first report."""

from __future__ import annotations

import dataclasses

from kernel.vectors import ScoredPoint
from modules.evidence import EvidencePaths, prepare
from modules.evidence.generations import new_generation_id
from modules.evidence.publish import publish
from modules.evidence.retrieval import group_units
from tests.modules.evidence.conftest_index import Engines


def _hit(point: str, unit: str, score: float) -> ScoredPoint:
    payload = {"unit_id": unit, "fragment_id": f"{unit}#1", "unit_kind": "domain"}
    return ScoredPoint(id=point, score=score, payload=payload, dense_rank=1, bm25_rank=None)


def test_units_with_equal_scores_order_by_unit_id_whatever_the_point_ids() -> None:
    # the store orders ties by point id, a digest of the generation: any order can come back
    hits = [
        _hit("00000000-0000-0000-0000-000000000001", "evidence:zeta", 0.5),
        _hit("00000000-0000-0000-0000-000000000002", "evidence:alpha", 0.5),
        _hit("00000000-0000-0000-0000-000000000003", "evidence:beta", 0.25),
        _hit("00000000-0000-0000-0000-000000000004", "evidence:gamma", 0.5),
    ]
    ranked = [u.unit_id for u in group_units(hits, 10)]
    assert ranked == ["evidence:alpha", "evidence:gamma", "evidence:zeta", "evidence:beta"]
    assert [u.unit_id for u in group_units(list(reversed(hits)), 10)] == ranked
    assert [u.unit_id for u in group_units(hits, 2)] == ranked[:2]


def test_generation_id_is_a_digest_of_content_clock_and_nonce() -> None:
    base = {"fingerprint": "f" * 64, "created_at": "2026-11-30T09:00:00Z", "nonce": "seed:1"}
    first = new_generation_id(3, **base)
    assert first == new_generation_id(3, **base) and first.startswith("g3-") and len(first) == 11
    for key, other in (("fingerprint", "e" * 64), ("created_at", "2026-11-30T09:00:01Z")):
        assert new_generation_id(3, **{**base, key: other}) != first
    assert new_generation_id(3, **{**base, "nonce": "seed:2"}) != first


def test_publish_takes_its_time_from_the_clock_and_reports_a_total_first(
    paths: EvidencePaths, engines: Engines
) -> None:
    prepare(paths, max_chunk_chars=4000)
    reports: list[tuple[str, int, int]] = []
    caps = dataclasses.replace(
        engines.caps(), progress=lambda *r: reports.append(r), nonce=lambda: "seed:1"
    )
    report = publish(caps)
    assert report.generation.created_at == "2026-01-01T00:00:00Z"  # the capability's clock
    stage, done, total = reports[0]  # before the encoders load: a bar never shows "0/None"
    assert (stage, done) == ("loading the encoders", 0)
    assert total == report.generation.fragments > 0
    assert reports[1] == ("embedding", 0, total) and ("embedding", total, total) in reports
    # then the vocabulary table (modules/evidence/vocabulary.py), counted in words
    words = report.generation.vocabulary["words"] if report.generation.vocabulary else 0
    vocabulary = [r for r in reports if r[0] == "embedding the vocabulary"]
    assert words > 0 and vocabulary[0] == ("embedding the vocabulary", 0, words)
    assert reports[-1] == ("embedding the vocabulary", words, words)


_TIED = [
    "Ricoveri urgenti: triage con codice colore al pronto soccorso.",
    "Pronto soccorso: codice colore al triage dei ricoveri urgenti.",
    "Triage dei ricoveri urgenti al pronto soccorso con codice colore.",
    "Codice colore al pronto soccorso: triage dei ricoveri urgenti.",
    "Al pronto soccorso, triage con codice colore dei ricoveri urgenti.",
    "Urgenti i ricoveri: al pronto soccorso triage con codice colore.",
]


def _ranks(engines: Engines) -> list[tuple[str, int | None, int | None, float]]:
    from modules.evidence.query_text import evidence_query_text
    from modules.evidence.search import search_evidence

    outcome = search_evidence(
        engines.caps(),
        evidence_query_text("triage codice colore ricoveri urgenti pronto soccorso"),
        purpose="schema_linking",
        where={"db": "triage"},
        limit=20,
    )
    assert outcome.status == "available", outcome.warning
    return [(r.unit_id, r.dense_rank, r.bm25_rank, r.score) for r in outcome.results]


def test_republishing_keeps_the_order_of_equal_scores(
    paths: EvidencePaths, engines: Engines
) -> None:
    """Six units with the same words score alike in both rankings; their places there come from
    the point ids, which differ per generation. After another source is published (a new
    generation, new ids) every unit keeps its dense and BM25 rank and its fused score."""
    body = "\n\n".join(_TIED)
    (paths.sources_dir / "triage.md").write_text(
        f"---\nmetadata: {{db: triage}}\n---\n\n{body}\n", "utf-8"
    )
    prepare(paths, max_chunk_chars=4000)
    publish(engines.caps())
    before = _ranks(engines)
    assert len(before) == len(_TIED)
    assert len({(dense, bm25) for _, dense, bm25, _ in before}) == len(_TIED)  # ties, split by id
    (paths.sources_dir / "extra.md").write_text("Una nuova regola sulle dimissioni.\n", "utf-8")
    prepare(paths, max_chunk_chars=4000)
    assert publish(engines.caps()).generation.number == 2
    assert _ranks(engines) == before
