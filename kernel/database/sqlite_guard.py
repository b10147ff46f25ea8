"""The SQLite authorizer: an allowlist that lets one connection read and nothing else.

SQLite asks the authorizer about every action a statement would take while it is being
compiled, so a statement is refused before it runs. Allowed: ``SELECT``, reading columns,
``WITH RECURSIVE``, functions (except those that reach outside the database: extension loading,
the FTS3 tokenizer hook, file access from the shell's extensions) and the PRAGMAs that only read
(listed below). Everything else is denied: INSERT/UPDATE/DELETE, every CREATE/DROP/ALTER,
ATTACH/DETACH (which ``mode=ro`` alone would allow, creating files: ``VACUUM INTO`` is an
ATTACH), transactions and savepoints, REINDEX, ANALYZE, virtual tables, and PRAGMA writes.

It is one of the layers of :func:`kernel.database.readonly.connect_sqlite` (ARCHITECTURE §3.8):
the file is also opened ``mode=ro`` and ``query_only`` is on; no keyword is ever inspected.
"""

from __future__ import annotations

import sqlite3

__all__ = ["READ_PRAGMAS", "SqliteGuard"]

# action codes of sqlite3.h (the sqlite3 module exports them under the same names)
_ACTION_NAMES: dict[int, str] = {
    1: "CREATE INDEX",
    2: "CREATE TABLE",
    3: "CREATE TEMP INDEX",
    4: "CREATE TEMP TABLE",
    5: "CREATE TEMP TRIGGER",
    6: "CREATE TEMP VIEW",
    7: "CREATE TRIGGER",
    8: "CREATE VIEW",
    9: "DELETE",
    10: "DROP INDEX",
    11: "DROP TABLE",
    12: "DROP TEMP INDEX",
    13: "DROP TEMP TABLE",
    14: "DROP TEMP TRIGGER",
    15: "DROP TEMP VIEW",
    16: "DROP TRIGGER",
    17: "DROP VIEW",
    18: "INSERT",
    19: "PRAGMA",
    20: "READ",
    21: "SELECT",
    22: "TRANSACTION",
    23: "UPDATE",
    24: "ATTACH",
    25: "DETACH",
    26: "ALTER TABLE",
    27: "REINDEX",
    28: "ANALYZE",
    29: "CREATE VIRTUAL TABLE",
    30: "DROP VIRTUAL TABLE",
    31: "FUNCTION",
    32: "SAVEPOINT",
    33: "RECURSIVE",
}
_READ, _SELECT, _FUNCTION, _RECURSIVE, _PRAGMA = 20, 21, 31, 33, 19

#: PRAGMAs that only read, whatever their argument (it names a table, an index or nothing)
READ_PRAGMAS: frozenset[str] = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "collation_list",
        "database_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
    }
)
#: PRAGMAs that read a setting when given no argument (and would change it when given one)
_SETTING_PRAGMAS: frozenset[str] = frozenset(
    {
        "application_id",
        "data_version",
        "encoding",
        "foreign_keys",
        "freelist_count",
        "journal_mode",
        "page_count",
        "page_size",
        "query_only",
        "read_uncommitted",
        "schema_version",
        "user_version",
    }
)
#: functions that reach outside the database (the last three exist only in SQLite's shell)
_DENIED_FUNCTIONS: frozenset[str] = frozenset(
    {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"}
)


_SCHEMA_TABLES = frozenset(
    {"sqlite_master", "sqlite_temp_master", "sqlite_schema", "sqlite_temp_schema"}
)


class SqliteGuard:
    """The authorizer callback of one connection; remembers the first action it denied, so
    the refusal can say what was attempted."""

    __slots__ = ("denied",)

    def __init__(self) -> None:
        self.denied: str | None = None

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        if self._allowed(action, arg1, arg2):
            return sqlite3.SQLITE_OK
        if self.denied is None:
            self.denied = _describe(action, arg1, arg2)
        return sqlite3.SQLITE_DENY

    @staticmethod
    def _allowed(action: int, arg1: str | None, arg2: str | None) -> bool:
        if action in (_READ, _SELECT, _RECURSIVE):
            return True
        if action == _FUNCTION:
            return (arg2 or "").lower() not in _DENIED_FUNCTIONS
        if action == _PRAGMA:
            name = (arg1 or "").lower()
            return name in READ_PRAGMAS or (name in _SETTING_PRAGMAS and arg2 is None)
        return False


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    name = _ACTION_NAMES.get(action, f"action {action}")
    if action == _PRAGMA:
        return f"PRAGMA {arg1}" + (f"={arg2}" if arg2 is not None else "")
    if action == _FUNCTION:
        return f"function {arg2}()"
    if action in (24, 25, 32):  # ATTACH, DETACH (a file name), SAVEPOINT: the action says it
        return name
    if action == 22:  # BEGIN, COMMIT, ROLLBACK
        return f"{arg1} (a transaction)"
    if action in (9, 18, 23):  # DELETE, INSERT, UPDATE
        # DDL writes the schema table first, and SQLite stops at the first denial
        return "a schema change" if arg1 in _SCHEMA_TABLES else f"{name} on {arg1}"
    if action == 26:  # ALTER TABLE: arg1 is the schema, arg2 the table
        return f"{name} {arg2}"
    return f"{name} {arg1}" if arg1 else name
