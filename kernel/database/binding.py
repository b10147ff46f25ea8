"""The Database Binding (glossary): how this installation reaches its Workspace Database.

``workspace.yaml`` names it in one of two ways (ARCHITECTURE §3.8, docs/database.md)::

    database: {url: "sqlite:///data/shop.db"}                 # a SQLite file in the workspace
    database: {url_env: THT_DATABASE_URL, schema: public}      # a URL kept in the environment

Rules, each an error naming the file and the field (exit 2):

- exactly one of ``url`` / ``url_env``;
- ``url`` is for SQLite only: a PostgreSQL URL carries credentials, which belong in the
  environment (``url_env``), never in a file that is shared, copied and committed;
- a relative SQLite path is resolved against the workspace folder and must stay inside it (a
  ``..`` that leads out is refused); a file elsewhere is bound by writing its absolute path,
  ``sqlite:////abs/path.db``, an explicit choice. The check is on the path as written (a
  symbolic link inside the workspace is the owner's own arrangement);
- ``url_env`` must name a set, non-empty environment variable; the error names the variable,
  never its value.

The binding keeps the URL private: :attr:`DatabaseBinding.display` is what may be printed (the
password replaced by ``***``, the query string left out, and where the URL came from), and the
secret itself is held by an object whose ``repr``/``str`` are redacted and which refuses to be
pickled or encoded. Every database error message passes through :meth:`DatabaseBinding.scrub`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from kernel.errors import UsageError

if TYPE_CHECKING:
    from kernel.workspace_settings import DatabaseSettingsView

__all__ = [
    "DEFAULT_ROW_LIMIT",
    "DEFAULT_TIMEOUT_MS",
    "DatabaseBinding",
    "Dialect",
    "binding_from_settings",
    "binding_from_url",
]

Dialect = Literal["sqlite", "postgresql"]

DEFAULT_ROW_LIMIT = 1000
DEFAULT_TIMEOUT_MS = 30_000

_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_SECRET_PARAMS = ("password", "sslpassword")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXAMPLES = (
    "a SQLite file (url: sqlite:///data/shop.db) or the environment variable that holds a "
    "PostgreSQL URL (url_env: THT_DATABASE_URL)"
)


class _Secret:
    """The connection URL and the strings that must never be shown (password, secret params)."""

    __slots__ = ("_hidden", "_url")

    def __init__(self, url: str, hidden: tuple[str, ...]) -> None:
        self._url = url
        self._hidden = tuple(sorted({h for h in hidden if h}, key=len, reverse=True))

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__

    def __reduce__(self) -> str:
        raise TypeError("a database secret cannot be pickled or copied")


@dataclass(frozen=True, repr=False)
class DatabaseBinding:
    """A resolved Database Binding. ``display`` is safe to print; the URL is not reachable
    through any public attribute, ``repr`` or ``str``."""

    dialect: Dialect
    #: the redacted description: ``sqlite:///data/shop.db`` or
    #: ``postgresql://ann:***@db:5432/shop (schema public, from $THT_DATABASE_URL)``
    display: str
    #: the PostgreSQL schema every name is resolved in; None for SQLite (one schema, ``main``)
    schema: str | None = None
    row_limit: int = DEFAULT_ROW_LIMIT
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    #: the SQLite file (absolute); None for PostgreSQL
    sqlite_path: Path | None = None
    _secret: _Secret | None = field(default=None, compare=False)

    @property
    def sqlglot_dialect(self) -> Literal["sqlite", "postgres"]:
        return "sqlite" if self.dialect == "sqlite" else "postgres"

    def __repr__(self) -> str:
        return f"DatabaseBinding({self.display!r})"

    __str__ = __repr__

    def scrub(self, text: str) -> str:
        """``text`` with the URL and every secret in it replaced by ``***``, on one line."""
        if self._secret is not None:
            for hidden in (self._secret._url, *self._secret._hidden):
                text = text.replace(hidden, "***")
        return " ".join(text.split())

    def _conninfo(self) -> str:
        """The libpq URL (PostgreSQL only): for the connection code of this package, nothing
        else."""
        if self._secret is None:
            raise TypeError("a SQLite binding has no connection URL")
        return self._secret._url


def binding_from_settings(
    root: Path,
    settings_file: Path,
    database: DatabaseSettingsView | None,
    environ: Mapping[str, str],
) -> DatabaseBinding | None:
    """The binding ``workspace.yaml``'s ``database:`` describes, or None when it has none."""
    if database is None:
        return None
    if (database.url is None) == (database.url_env is None):
        raise _problem(
            settings_file, "database", f"give exactly one of url or url_env: {_EXAMPLES}"
        )
    if database.url is not None:
        field_name, url, origin = "database.url", database.url, ""
        if _scheme(url) in _POSTGRES_SCHEMES:
            raise _problem(
                settings_file,
                field_name,
                "a PostgreSQL URL carries credentials and does not belong in this file: put it "
                "in an environment variable and name that variable with url_env",
            )
    else:
        field_name = "database.url_env"
        name = str(database.url_env)
        if not _ENV_NAME.fullmatch(name):
            raise _problem(
                settings_file, field_name, f"{name!r} is not an environment variable name"
            )
        url = environ.get(name, "")
        if not url.strip():
            state = "is empty" if name in environ else "is not set"
            raise _problem(
                settings_file,
                field_name,
                f"the environment variable {name} {state}: export it with the database URL",
            )
        origin = f"${name}"
    try:
        return binding_from_url(
            root,
            url.strip(),
            origin=origin,
            schema=database.schema_name,
            row_limit=database.row_limit,
            timeout_ms=database.timeout_ms,
        )
    except ValueError as err:
        raise _problem(settings_file, _field_of(err, field_name), str(err)) from None


def binding_from_url(
    root: Path,
    url: str,
    *,
    origin: str = "",
    schema: str | None = None,
    row_limit: int = DEFAULT_ROW_LIMIT,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> DatabaseBinding:
    """A binding from a URL (``origin``: where it came from, e.g. ``$THT_DATABASE_URL``).
    ``ValueError`` when the URL is unusable; its message never contains the URL's secrets."""
    scheme = _scheme(url)
    if scheme == "sqlite":
        return _sqlite_binding(root, url, origin, schema, row_limit, timeout_ms)
    if scheme in _POSTGRES_SCHEMES:
        return _postgres_binding(url, origin, schema, row_limit, timeout_ms)
    where = f"{origin} does not hold" if origin else "not"
    raise ValueError(
        f"{where} a database URL tht can use: expected sqlite:///PATH or "
        "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
    )


def _scheme(url: str) -> str:
    head, sep, _ = url.strip().partition("://")
    return head.lower() if sep else ""


def _sqlite_binding(
    root: Path, url: str, origin: str, schema: str | None, row_limit: int, timeout_ms: int
) -> DatabaseBinding:
    if schema not in (None, "main"):
        raise _FieldError("database.schema", "a SQLite database has one schema: remove schema")
    rest = url.strip()[len("sqlite://") :]
    if not rest.startswith("/"):
        raise ValueError("a SQLite URL has three slashes before a relative path: sqlite:///PATH")
    written = rest[1:]
    if "?" in written or "#" in written:
        raise ValueError(
            "query parameters are not accepted in a SQLite URL (tht opens the file read-only "
            "itself)"
        )
    if written in ("", ":memory:") or written.endswith("/"):
        raise ValueError("names no file: give a SQLite file, e.g. sqlite:///data/shop.db")
    root_text = os.path.normpath(os.path.abspath(root))
    if written.startswith("/"):
        path = Path(os.path.normpath(written))
    else:
        joined = os.path.normpath(os.path.join(root_text, written))
        if os.path.commonpath([root_text, joined]) != root_text:
            raise ValueError(
                f"{written} leads outside the workspace; write an absolute path "
                "(sqlite:////path/to/file.db) to bind a file elsewhere"
            )
        path = Path(joined)
    display = f"sqlite:///{written}" + (f" (from {origin})" if origin else "")
    return DatabaseBinding(
        dialect="sqlite",
        display=display,
        schema=None,
        row_limit=row_limit,
        timeout_ms=timeout_ms,
        sqlite_path=path,
    )


def _postgres_binding(
    url: str, origin: str, schema: str | None, row_limit: int, timeout_ms: int
) -> DatabaseBinding:
    url = url.strip()
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":") if at else ("", "", "")
    hidden = [password, unquote(password)] if colon else []
    params = parse_qsl(parts.query, keep_blank_values=True)
    hidden += [value for key, value in params if key.lower() in _SECRET_PARAMS]
    schema = "public" if schema is None else schema
    if not schema.strip():
        raise _FieldError("database.schema", "is empty: name the schema (e.g. public)")
    database = unquote(parts.path.lstrip("/"))
    shown_user = (unquote(user) + (":***" if colon else "") + "@") if at else ""
    display = f"postgresql://{shown_user}{hostport}/{database}"
    extras = [f"schema {schema}"] + ([f"from {origin}"] if origin else [])
    display += f" ({', '.join(extras)})"
    conninfo = "postgresql://" + url.split("://", 1)[1]
    secret = _Secret(conninfo, (url, *hidden))
    return DatabaseBinding(
        dialect="postgresql",
        display=_secret_free(display, secret),
        schema=schema,
        row_limit=row_limit,
        timeout_ms=timeout_ms,
        _secret=secret,
    )


def _secret_free(text: str, secret: _Secret) -> str:
    """``text`` with the secret's hidden strings replaced (a user or host name that happens
    to contain the password must not reveal it)."""
    for hidden in secret._hidden:
        text = text.replace(hidden, "***")
    return text


class _FieldError(ValueError):
    """A URL problem that belongs to another field than the URL's own."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name


def _field_of(err: ValueError, default: str) -> str:
    return err.field_name if isinstance(err, _FieldError) else default


def _problem(settings_file: Path, field_name: str, message: str) -> UsageError:
    return UsageError(
        f"{settings_file}: {field_name}: {message}",
        details={"file": str(settings_file), "problems": [f"{field_name}: {message}"]},
    )
