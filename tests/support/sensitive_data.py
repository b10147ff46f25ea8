"""A Workspace Database with distinctive personal data in it, for the Sensitive Data tests.

``clienti`` holds seeded values no other part of tht could produce by chance (``SEEDED``): names,
e-mail addresses, fiscal codes, phone numbers, birth dates. A test flags those columns, runs
commands, and greps every file under the workspace and every output for them
(:func:`leaks`). ``citta`` and ``punti`` are not sensitive (their values may be shown).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "CLIENTI",
    "SEEDED",
    "SENSITIVE",
    "bind",
    "leaks",
    "make_database",
    "workspace_files",
]

#: the sensitive columns of ``clienti``
SENSITIVE = ("nome", "cognome", "email", "codice_fiscale", "telefono", "data_nascita")
CLIENTI = 7


def _row(i: int) -> tuple[object, ...]:
    return (
        i + 1,
        f"Zorbaqwex{i}",
        f"Quixplodine{i}",
        f"zq{i}.vantrobel@leakcheck.example",
        f"ZRBQWX80A0{i}H501Z",
        f"+39 347 99{i}8 7761",
        f"1931-0{i + 1}-1{i}",
        "Milano",
        1000 + i,
    )


#: the distinctive values: none may ever leave the database (except as the database file)
SEEDED: tuple[str, ...] = (
    *(str(v) for i in range(CLIENTI) for v in _row(i)[1:7]),
    *("Zorbaqwex", "Quixplodine", "vantrobel", "leakcheck", "ZRBQWX80"),
)

SCHEMA = """
CREATE TABLE clienti (
  id INTEGER PRIMARY KEY, nome TEXT, cognome TEXT, email TEXT, codice_fiscale TEXT,
  telefono TEXT, data_nascita TEXT, citta TEXT, punti INTEGER
);
CREATE TABLE ordini (
  id INTEGER PRIMARY KEY, cliente_id INTEGER REFERENCES clienti (id), totale REAL, stato TEXT
);
"""


def make_database(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SCHEMA)
        conn.executemany(
            "INSERT INTO clienti VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", map(_row, range(CLIENTI))
        )
        conn.executemany(
            "INSERT INTO ordini VALUES (?, ?, ?, ?)",
            [(i + 1, i % CLIENTI + 1, 10.0 * (i + 1), "chiuso") for i in range(12)],
        )
        conn.commit()
    finally:
        conn.close()
    return path


def bind(workspace: Path) -> Path:
    """The database in ``data/clienti.db``, bound in workspace.yaml (hashing embedder: cheap)."""
    db = make_database(workspace / "data" / "clienti.db")
    with (workspace / "workspace.yaml").open("a", encoding="utf-8") as fh:
        fh.write('\ndatabase: {url: "sqlite:///data/clienti.db"}\n')
        fh.write("evidence: {embedder: hashing}\n")
    return db


def workspace_files(root: Path, *, database: Path | None = None) -> list[Path]:
    """Every file under ``root`` but the Workspace Database itself."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p != database)


def leaks(texts: Iterable[str | bytes], values: Iterable[str] = SEEDED) -> list[str]:
    """The seeded values found in any of ``texts`` (ASCII case-insensitive, on the bytes: the
    seeded values are ASCII, and a file is searched as it lies on disk)."""
    wanted = {v: v.lower().encode() for v in values}
    found: set[str] = set()
    for text in texts:
        data = (text.encode("utf-8") if isinstance(text, str) else text).lower()
        found.update(v for v, needle in wanted.items() if needle in data)
    return sorted(found)
