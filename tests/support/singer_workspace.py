"""A workspace bound to a two-row SQLite database of singers (``singer``: id, name, country,
sales), for the CLI tests of F1 that need a real catalog and value index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["singer_workspace"]

SINGERS = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, sales REAL);
INSERT INTO singer VALUES (1, 'Ann', 'France', 10.0), (2, 'Bo', 'Italy', 20.5);
"""


def singer_workspace(folder: Path, *, settings: str = "", hashing: bool = False) -> Path:
    """``tht workspace init`` in ``folder``, bound to ``data/music.db``; ``settings`` is appended
    to workspace.yaml, ``hashing`` makes Evidence embed with the hashing embedder (fast). Not
    synced: the test runs ``tht catalog sync`` with its own environment."""
    from kernel.workspace import init_workspace

    ws, _ = init_workspace(folder)
    text = ws.settings_file.read_text(encoding="utf-8")
    if hashing:
        text = text.replace("evidence:\n", "evidence:\n  embedder: hashing\n")
    text += '\ndatabase: {url: "sqlite:///data/music.db"}\n' + settings
    ws.settings_file.write_text(text, encoding="utf-8")
    (ws.root / "data").mkdir()
    with sqlite3.connect(ws.root / "data" / "music.db") as db:
        db.executescript(SINGERS)
    return ws.root
