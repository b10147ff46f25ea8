"""The BIRD schema-linking evaluation's parts on a handful of questions (the full run is
``make eval-schema``, never part of pytest): DDL materialisation, gold parsing, the locked
split, and a short linking run with the hashing embedder."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchmarks import eval_schema_linking as ev


@pytest.fixture(scope="module")
def bird() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return ev.load_bird()


@pytest.fixture(scope="module")
def schools(bird: tuple[dict[str, Any], list[dict[str, Any]]]) -> Any:
    return ev._direct_view(bird[0]["california_schools"])


def test_a_schema_materialises_as_ddl_with_keys(
    bird: tuple[dict[str, Any], list[dict[str, Any]]], tmp_path: Path
) -> None:
    path = tmp_path / "cs.sqlite"
    ev.materialise(bird[0]["california_schools"], path)
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        fks = con.execute("PRAGMA foreign_key_list(satscores)").fetchall()
        pk = [r[1] for r in con.execute("PRAGMA table_info(schools)") if r[5]]
    assert tables == {"frpm", "satscores", "schools"}
    assert [(f[2], f[3], f[4]) for f in fks] == [("schools", "cds", "CDSCode")]
    assert pk == ["CDSCode"]


def test_gold_resolves_aliases_to_tables(schools: Any) -> None:
    tables, columns = ev.gold_of(
        "SELECT T2.School FROM satscores AS T1 INNER JOIN schools AS T2 "
        "ON T1.cds = T2.CDSCode WHERE T1.AvgScrMath > 400",
        schools,
    )
    assert tables == {"satscores", "schools"}
    assert columns == {
        ("schools", "School"),
        ("satscores", "cds"),
        ("schools", "CDSCode"),
        ("satscores", "AvgScrMath"),
    }


def test_gold_resolves_unqualified_backquoted_case_insensitive_names(schools: Any) -> None:
    tables, columns = ev.gold_of(
        "SELECT `free meal count (k-12)` / `Enrollment (K-12)` FROM FRPM "
        "WHERE `County Name` = 'Alameda' AND cdscode IN (SELECT CDSCode FROM schools)",
        schools,
    )
    assert tables == {"frpm", "schools"}
    assert columns == {
        ("frpm", "Free Meal Count (K-12)"),
        ("frpm", "Enrollment (K-12)"),
        ("frpm", "County Name"),
        ("frpm", "CDSCode"),
        ("schools", "CDSCode"),
    }


def test_a_double_quoted_value_is_not_a_gold_column(schools: Any) -> None:
    _, columns = ev.gold_of('SELECT School FROM schools WHERE County = "Alameda"', schools)
    assert columns == {("schools", "School"), ("schools", "County")}


def test_the_locked_split_is_fixed_by_question_id() -> None:
    ids = range(2000)
    held = [i for i in ids if ev.locked(i)]
    assert 0.25 < len(held) / len(ids) < 0.35
    assert held == [i for i in ids if ev.locked(i)]  # a rule of the id alone, nothing else
    assert ev.locked(5) is (int(__import__("hashlib").sha256(b"5").hexdigest()[:8], 16) % 100 < 30)


def test_a_short_run_scores_linking_and_the_baseline(
    bird: tuple[dict[str, Any], list[dict[str, Any]]], tmp_path: Path
) -> None:
    from kernel.vectors.bm25 import Bm25Encoder
    from kernel.vectors.hashing_embedder import HashingEmbedder
    from modules.catalog.linking import DEFAULT_WEIGHTS

    schemas, records = bird
    name = "debit_card_specializing"
    embedder, bm25 = HashingEmbedder(64), Bm25Encoder(("en",))
    dbs = ev.build_indexes(
        {name: schemas[name]}, tmp_path, described=True, embedder=embedder, bm25=bm25
    )
    cases, unparsed = ev.load_cases(
        [r for r in records if r["db_id"] == name][:6], {name: dbs[name].view}
    )
    assert len(cases) == 6 and unparsed == 0
    runner = ev.Runner(embedder, bm25)
    rows = ev.evaluate(runner, dbs, "described", cases, True, DEFAULT_WEIGHTS)
    summary = ev.summarise(rows)
    assert summary["questions"] == 6
    assert 0.0 <= summary["column_recall@10"] <= 1.0
    assert summary["table_recall@5"] == 1.0  # five tables: every gold table is in the top 5
    baseline = ev.summarise(ev.baseline(dbs, runner, cases, True))
    assert baseline["questions"] == 6
    report = ev.breakdown(rows)
    assert set(report) >= {"tuning", "locked", "all", "all_by_difficulty"}
