"""A sensitive column's real values never leave the Workspace Database: not into any file under
the workspace, not into any command's output (ARCHITECTURE §3.8; issue 12, "Prove it").

Distinctive values are seeded into the flagged columns of a real SQLite database
(tests/support/sensitive_data.py); the tests run the commands that read it — ``catalog
sample``, ``sql check``, ``sql run``, a whole session through F7 to finalization — and grep
every file and every output for them. The masking decisions fold the verified catalog ledger:
a crafted fold cache that unflags a column changes nothing, a forged ledger line that unflags
one stops every command that would read it (exit 7). A Hypothesis property runs generated
queries on the database and checks that the masked result carries no character of a seeded
value.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.database.sensitive_lineage import masked_positions, sensitive_columns
from kernel.schema_view import SchemaColumn, SchemaTable, StaticSchemaView
from kernel.verification import mask_rows
from modules.catalog.cache import CatalogCache, decode_cache, encode_cache
from tests.support.sensitive_data import SENSITIVE, bind, leaks, workspace_files
from tests.tht.conftest import Result, run_tht
from tests.tht.test_sql_proposals import new_session, propose, sql_proposal, to_stage

Tht = Callable[..., Result]
H = "human:ann"
FLAGGED = [f"clienti.{c}" for c in SENSITIVE]
F6_SQL = (
    "SELECT c.nome, c.cognome, c.email, c.citta, COUNT(o.id) AS ordini, SUM(o.totale) AS totale\n"
    "FROM clienti AS c JOIN ordini AS o ON o.cliente_id = c.id\n"
    "GROUP BY c.id ORDER BY c.id;\n"
)
QUERIES = (
    "SELECT * FROM clienti",
    "SELECT upper(email), substr(codice_fiscale, 1, 6), telefono || '' FROM clienti",
    "WITH x AS (SELECT nome AS n, data_nascita AS d FROM clienti) SELECT * FROM x",
    "SELECT citta, group_concat(cognome) FROM clienti GROUP BY citta",
    "SELECT (SELECT email FROM clienti k WHERE k.id = o.cliente_id) AS m FROM ordini o",
    "SELECT nome FROM clienti UNION ALL SELECT stato FROM ordini",
    "SELECT c.*, o.totale FROM clienti c JOIN ordini o ON o.cliente_id = c.id",
)


class Outputs:
    """Every stdout and stderr of the commands a test ran."""

    def __init__(self, tht: Tht) -> None:
        self.tht = tht
        self.texts: list[str] = []

    def __call__(self, *args: str) -> Result:
        done = self.tht(*args)
        self.texts += [done.stdout, done.stderr]
        return done

    def ok(self, *args: str) -> Any:
        done = self(*args)
        assert done.code == 0, done.stdout + done.stderr
        return done.json() if "--json" in args else done.stdout


def everything(ws: Path, outputs: Outputs) -> list[str]:
    """The seeded values found anywhere: files under the workspace (its THT_HOME included) and
    every output."""
    database = ws / "data" / "clienti.db"
    files = [p.read_bytes() for p in workspace_files(ws, database=database)]
    return leaks([*files, *outputs.texts])


@pytest.fixture
def flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Outputs]]:
    """A workspace (deterministic clock and ids, its own THT_HOME inside it, so the grep covers
    it) bound to the seeded database, synced, its personal columns flagged by a human."""
    workspace = tmp_path / "ws"
    monkeypatch.setenv("THT_WORKSPACE", str(workspace))
    monkeypatch.setenv("THT_CLOCK", "fixed:2026-01-01T00:00:00Z")
    monkeypatch.setenv("THT_SEED", "7")
    monkeypatch.setenv("THT_HOME", str(workspace / ".home"))
    for var in ("THT_ACTOR", "THT_SESSION"):
        monkeypatch.delenv(var, raising=False)
    assert run_tht("workspace", "init", str(workspace)).code == 0
    bind(workspace)
    out = Outputs(run_tht)
    out.ok("catalog", "sync", "--json")
    canary = run_tht("catalog", "sample", "clienti", "--json")  # not flagged yet: real values
    assert len(leaks([canary.stdout])) >= 5, "the grep must see what a leak would show"
    out.ok("catalog", "sensitive", "suggest", "--offline", "--json")
    out.ok("catalog", "sensitive", "set", *FLAGGED, "--on", "--reason", "personal", "--as", H)
    yield workspace, out


def test_no_command_and_no_file_ever_shows_a_seeded_value(
    flagged: tuple[Path, Outputs], tmp_path: Path
) -> None:
    ws, out = flagged
    out.ok("catalog", "sample", "clienti", "--json")
    out.ok("catalog", "sample", "clienti")
    out.ok("catalog", "show", "--json")
    out.ok("catalog", "status", "--json")
    out.ok("catalog", "reindex", "--json")
    out.ok("schema", "link", "email del cliente", "--json")
    for i, query in enumerate(QUERIES):
        path = tmp_path / f"q{i}.sql"
        path.write_text(query, encoding="utf-8")
        out.ok("sql", "check", str(path), "--json")
        body = out.ok("sql", "run", str(path), "--json")
        assert body["masked"], query  # every one of them reads a sensitive value
        out.ok("sql", "run", str(path))
    assert everything(ws, out) == []


def test_a_whole_session_through_f7_to_finalization_keeps_them_out(
    flagged: tuple[Path, Outputs], tmp_path: Path
) -> None:
    ws, out = flagged
    tht = out
    session = new_session(tht, "Quanti ordini per cliente e per città?")
    to_stage(tht, tmp_path, session, "sql")
    path = tmp_path / "f6.sql"
    path.write_text(F6_SQL, encoding="utf-8")
    checked = out.ok("sql", "check", str(path), session, "--json")
    assert checked["sensitive"] == ["clienti.cognome", "clienti.email", "clienti.nome"]
    review = propose(tht, tmp_path, session, "sql", sql_proposal(F6_SQL))
    out.texts += [review.stdout, review.stderr]
    assert review.code == 0, review.stderr
    assert "reads sensitive column(s)" in review.stderr
    answered = out.ok(
        "review", "answer", str(review.json()["review"]), session, "--approve", "--as", H, "--json"
    )
    assert answered["ran"]["status"] == "completed", answered
    sample = msgspec.json.decode(
        out.ok("artifact", "show", "result_sample.json", session, "--json")["content"]
    )
    assert sample["masked"] == [0, 1, 2]
    assert sample["row_count"] == 7 and len(sample["result_sha256"]) == 64
    assert all(r[:3] == ["[sensitive]"] * 3 and r[3] == "Milano" for r in sample["rows"])
    assert [r[4] for r in sample["rows"]] == [2, 2, 2, 2, 2, 1, 1]  # the real counts
    # the row count and the result hash stay those of the real result
    db = sqlite3.connect(ws / "data" / "clienti.db")
    try:
        real = db.execute(F6_SQL).fetchall()
    finally:
        db.close()
    assert len(real) == sample["row_count"]
    out.ok("stage", "skip", "datamart", session, "--reason", "one-off", "--as", H, "--json")
    for command in (("session", "status"), ("session", "show"), ("session", "log")):
        out.ok(*command, session, "--json")
    finalize_to_the_end(out, session)
    out.ok("ledger", "verify", session, "--json")
    # what follows a session: its telemetry (analytics, under THT_HOME inside the workspace),
    # the workspace memory (the solved question), the value index, the evidence search
    out.ok("analytics", "scan", "--sessions", str(ws), "--json")
    out.ok("analytics", "sessions", "--json")
    out.ok("analytics", "report", "--html", str(ws / "report.html"))
    out.ok("memory", "list", "--json")
    assert out.ok("catalog", "values", "find", "Milano", "--json")["columns"] == ["clienti.citta"]
    probe = run_tht("catalog", "values", "find", "Zorbaqwex0", "--json")  # echoes the query
    assert probe.code == 0 and probe.json()["matches"] == []  # a flagged column: not indexed
    assert everything(ws, out) == []


def finalize_to_the_end(out: Outputs, session: str) -> None:
    """F8's promotion (nothing to promote: no clarification), then finalization."""
    status = out.ok("session", "status", session, "--json")
    if status["current_stage"] == "memory_promotion":
        done = out("stage", "run", "memory_promotion", session, "--json")
        assert done.code == 0, done.stdout + done.stderr
    out.ok("session", "finalize", session, "--as", H, "--json")
    out.ok("artifact", "show", "report.md", session, "--json")


def _poison_flags(ws: Path) -> None:
    """The fold cache rewritten with every flag false, its (last_seq, head) kept valid."""
    (path,) = (ws / ".tht").rglob("catalog.msgpack")
    cache = decode_cache(path.read_bytes())
    assert cache is not None
    tables = {
        name: msgspec.structs.replace(
            t, columns=tuple(msgspec.structs.replace(c, sensitive=False) for c in t.columns)
        )
        for name, t in cache.state.tables.items()
    }
    forged = CatalogCache(
        hint=cache.hint,
        last_seq=cache.last_seq,
        head=cache.head,
        state=msgspec.structs.replace(cache.state, tables=tables),
    )
    data = encode_cache(forged)
    assert data is not None
    path.write_bytes(data)


def test_a_crafted_fold_cache_that_unflags_changes_no_masking(
    flagged: tuple[Path, Outputs], tmp_path: Path
) -> None:
    ws, out = flagged
    _poison_flags(ws)
    path = tmp_path / "q.sql"
    path.write_text("SELECT * FROM clienti", encoding="utf-8")
    run = run_tht("sql", "run", str(path), "--json")
    sample = run_tht("catalog", "sample", "clienti", "--json")
    out.texts += [run.stdout, run.stderr, sample.stdout, sample.stderr]
    assert run.code == 0 and sample.code == 0
    assert leaks([run.stdout, sample.stdout]) == []
    assert sample.json()["synthetic"] == list(SENSITIVE)


def test_a_forged_unflagging_line_stops_every_command_that_would_read_the_values(
    flagged: tuple[Path, Outputs], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, out = flagged
    ledger = ws / "catalog" / "ledger.jsonl"
    before = ledger.read_bytes()
    # an agent cannot unflag through the CLI …
    monkeypatch.setenv("THT_ACTOR", "agent")
    refused = run_tht(
        "catalog", "sensitive", "set", "clienti.email", "--off", "--reason", "x", "--as", H
    )
    monkeypatch.delenv("THT_ACTOR")
    assert refused.code == 5 and ledger.read_bytes() == before
    # … nor by writing the line itself, with a valid hash chain and anchor
    forge_unflag(ws)
    path = tmp_path / "q.sql"
    path.write_text("SELECT email FROM clienti", encoding="utf-8")
    for args in (("catalog", "sample", "clienti", "--json"), ("sql", "run", str(path), "--json")):
        done = run_tht(*args)
        out.texts += [done.stdout, done.stderr]
        assert done.code == 7, (args, done.stdout, done.stderr)
    verify = run_tht("catalog", "verify", "--json")
    assert verify.code == 7 and "actor" in verify.stdout
    assert everything(ws, out) == []


def forge_unflag(ws: Path) -> None:
    """Append ``sensitive_flag_set`` (email → false) by ``agent`` through the store, as anyone
    who can write the workspace's files could: the chain and the anchor stay valid."""
    from kernel import catalog_events as cev
    from kernel import events as ev
    from kernel.clock import FixedClock
    from tht.composition import open_app

    ledger = open_app(ws).kernel.store.workspace_ledger("catalog")
    draft = ev.EventDraft(
        type="sensitive_flag_set",
        actor="agent",
        payload=cev.SensitiveFlagSetPayload(
            table="clienti", column="email", sensitive=False, reason="x"
        ),
    )
    ledger.append([draft], expected_last_seq=ledger.tail().last_seq, clock=FixedClock())


# ----------------------------------------------------------------------------- generated queries

#: the sensitive values use only these letters; nothing else in the database or the queries does
_SECRET = "qzjx"
_VIEW = StaticSchemaView(
    dialect="sqlite",
    schema_tables=(
        SchemaTable(
            name="people",
            columns=(
                SchemaColumn(name="id"),
                SchemaColumn(name="name"),
                SchemaColumn(name="email", sensitive=True),
                SchemaColumn(name="code", sensitive=True),
            ),
        ),
        SchemaTable(
            name="orders",
            columns=(
                SchemaColumn(name="id"),
                SchemaColumn(name="person_id"),
                SchemaColumn(name="note"),
            ),
        ),
    ),
)


@pytest.fixture(scope="module")
def people_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = tmp_path_factory.mktemp("lineage") / "p.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, email TEXT, code TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER, note TEXT);"
    )
    for i in range(1, 5):
        db.execute(
            "INSERT INTO people VALUES (?, ?, ?, ?)",
            (i, f"anna{i}", f"qz{i}j@xq.zj", f"QZX{i}J"),
        )
        db.execute("INSERT INTO orders VALUES (?, ?, ?)", (i, i, f"note {i}"))
    db.commit()
    yield db
    db.close()
    shutil.rmtree(path.parent, ignore_errors=True)


_COLUMNS = st.sampled_from(["p.id", "p.name", "p.email", "p.code", "o.note", "o.id"])


@st.composite
def _expression(draw: st.DrawFn) -> str:
    column = draw(_COLUMNS)
    shape = draw(
        st.sampled_from(
            [
                "{c}",
                "upper({c})",
                "lower({c})",
                "substr({c}, 2, 2)",
                "{c} || '-'",
                "coalesce({c}, 'none')",
                "max({c})",
                "min({c})",
                "group_concat({c})",
                "CASE WHEN p.id > 1 THEN {c} ELSE 'none' END",
                "(SELECT {c2} FROM people k WHERE k.id = p.id)",
                "replace({c}, 'a', 'b')",
            ]
        )
    )
    other = draw(st.sampled_from(["k.email", "k.name", "k.code", "k.id"]))
    return shape.format(c=column, c2=other)


@st.composite
def _query(draw: st.DrawFn) -> str:
    expressions = draw(st.lists(_expression(), min_size=1, max_size=3))
    aggregate = any(e.startswith(("max(", "min(", "group_concat(")) for e in expressions)
    projections = ", ".join(f"{e} AS c{i}" for i, e in enumerate(expressions))
    body = f"SELECT {projections} FROM people p JOIN orders o ON o.person_id = p.id"
    if aggregate:
        body += " GROUP BY p.id"
    wrap = draw(st.sampled_from(["plain", "cte", "derived", "star_cte", "union"]))
    names = ", ".join(f"c{i}" for i in range(len(expressions)))
    if wrap == "cte":
        return f"WITH w AS ({body}) SELECT {names} FROM w"
    if wrap == "derived":
        return f"SELECT t.* FROM ({body}) AS t"
    if wrap == "star_cte":
        return f"WITH w AS ({body}) SELECT * FROM w"
    if wrap == "union":
        return f"{body} UNION ALL {body}"
    return body


@settings(max_examples=60, deadline=None)
@given(sql=_query())
def test_a_generated_query_never_carries_a_sensitive_character_past_the_mask(
    people_db: sqlite3.Connection, sql: str
) -> None:
    cursor = people_db.execute(sql)
    rows = cursor.fetchall()
    names = [d[0] for d in cursor.description]
    positions = masked_positions(sql, _VIEW, sensitive_columns(_VIEW), names)
    shown = mask_rows(rows, positions)
    leaked = [v for row in shown for v in row if any(ch in str(v).lower() for ch in _SECRET)]
    assert leaked == [], (sql, positions)
