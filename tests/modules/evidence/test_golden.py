"""Golden files: the units and fragments prepared from the fixture sources, and search results
on that corpus (hashing embedder, Qdrant Edge, BM25: all deterministic).

Regenerate with ``pytest --update-golden`` and explain the diff in the commit message.
"""

from __future__ import annotations

import json
from pathlib import Path

from modules.evidence import EvidencePaths, fragment_unit, load_evidence, prepare
from modules.evidence.publish import publish
from modules.evidence.query_text import evidence_query_text
from modules.evidence.search import search_evidence
from tests.modules.evidence.conftest_index import Engines

GOLDEN = Path(__file__).resolve().parents[3] / "golden" / "evidence"
LIMIT = 4000

QUERIES = [
    ("Tasso di occupazione dei posti letto", "schema_linking", {}),
    ("average length of stay in hospital", "disambiguation", {}),
    ("free meals eligibility rate", "schema_linking", {"db": "california_schools"}),
    ("formato delle date di dimissione", "sql_generation", {}),
    ("reparto di ricovero colonna", "sql_generation", {}),
]


def _compare(path: Path, text: str, update: bool) -> None:
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs from the golden file"


def test_prepared_units_manifest_and_fragments_match_the_golden_files(
    paths: EvidencePaths, update_golden: bool
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    golden = GOLDEN / "prepared"
    produced = {p.name: p.read_text(encoding="utf-8") for p in sorted(paths.units_dir.glob("*.md"))}
    if update_golden:
        for old in (golden / "units").glob("*.md"):
            old.unlink()
    for name, text in produced.items():
        _compare(golden / "units" / name, text, update_golden)
    assert sorted(p.name for p in (golden / "units").glob("*.md")) == sorted(produced)
    _compare(golden / "manifest.json", paths.manifest_file.read_text("utf-8"), update_golden)
    state = load_evidence(paths, max_chunk_chars=LIMIT).state
    fragments = [
        {"id": f.id, "headings": list(f.headings), "rendered": f.rendered}
        for unit in state.publishable
        for f in fragment_unit(unit, LIMIT).fragments
    ]
    _compare(
        golden / "fragments.json",
        json.dumps(fragments, indent=2, ensure_ascii=False) + "\n",
        update_golden,
    )


def test_search_results_on_the_fixture_corpus_match_the_golden_file(
    paths: EvidencePaths, engines: Engines, update_golden: bool
) -> None:
    prepare(paths, max_chunk_chars=LIMIT)
    publish(engines.caps())
    out = []
    for question, purpose, where in QUERIES:
        outcome = search_evidence(
            engines.caps(), evidence_query_text(question), purpose=purpose, where=where, limit=5
        )
        body = outcome.to_json()
        body["generation"] = "(generation)"  # ids carry a random suffix
        out.append({"query": question, "purpose": purpose, "where": where, **body})
    _compare(
        GOLDEN / "search.json", json.dumps(out, indent=2, ensure_ascii=False) + "\n", update_golden
    )
