"""A real PostgreSQL server for the tests, on 127.0.0.1 with a free port, in a temporary folder.

Shared by every suite that needs one (the Workspace Database contract and attack suites, later
the PostgreSQL session store): the session-scoped ``postgres_server`` fixture of
``tests/conftest.py`` starts it on first use only, and stops it and removes its folder at the end.

It never skips: when the server binaries are missing or the server does not start, the
fixture fails with the reason (``make test`` installs Debian's ``postgresql`` first).

Binaries: ``pg_config --bindir`` when that folder has ``initdb``, ``pg_ctl`` and ``postgres``,
else the newest ``/usr/lib/postgresql/*/bin``; ``THT_PG_BINDIR`` overrides both. PostgreSQL
refuses to run as root: as root, the cluster belongs to ``nobody`` (its folder is chowned) and
every server command runs with ``user=``/``group=`` set to it. The superuser ``postgres`` logs
in with a random password over TCP (scram-sha-256), so a wrong password is really refused.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["PostgresServer", "PostgresUnavailable", "find_bindir", "running_server"]

SUPERUSER = "postgres"
READER_PASSWORD = "reader-pw"  # a test server's throw-away role, on 127.0.0.1 only
_NEEDED = ("initdb", "pg_ctl", "postgres")


class PostgresUnavailable(RuntimeError):
    """The test server cannot be provided; the message says why and what to install."""


def _has_server(folder: Path) -> bool:
    return all((folder / name).is_file() for name in _NEEDED)


def find_bindir() -> Path:
    """The folder with ``initdb``, ``pg_ctl`` and ``postgres``; PostgresUnavailable if none."""
    override = os.environ.get("THT_PG_BINDIR")
    candidates: list[Path] = [Path(override)] if override else []
    pg_config = shutil.which("pg_config")
    if pg_config and not override:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip():
            candidates.append(Path(done.stdout.strip()))
    if not override:
        found = glob.glob("/usr/lib/postgresql/*/bin")
        found.sort(key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split("/")[4].split(".")])
        candidates += [Path(p) for p in reversed(found)]
    for folder in candidates:
        if _has_server(folder):
            return folder
    looked = ", ".join(str(c) for c in candidates) or "nowhere (no pg_config on PATH)"
    raise PostgresUnavailable(
        f"PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; looked in {looked}. "
        "Install them: `apt-get install -y postgresql` (Debian), or set THT_PG_BINDIR"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One throw-away cluster. ``dsn(db)`` gives a libpq URL; ``create_database``,
    ``create_role`` and ``execute`` work as the superuser."""

    def __init__(self, bindir: Path, *, os_user: str | None = None) -> None:
        self.bindir = bindir
        self.host = "127.0.0.1"
        self.port = 0
        self.password = secrets.token_hex(16)
        self.root = Path(tempfile.mkdtemp(prefix="tht-pg-"))
        self.datadir = self.root / "data"
        self.logfile = self.root / "server.log"
        self._as_root = os.geteuid() == 0
        self._os_user = os_user or ("nobody" if self._as_root else None)
        self._running = False

    # -- process control ---------------------------------------------------------------------

    def _run(
        self, argv: Sequence[str], *, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        if self._as_root and self._os_user:
            import grp
            import pwd

            entry = pwd.getpwnam(self._os_user)
            kwargs.update(
                user=entry.pw_uid, group=grp.getgrgid(entry.pw_gid).gr_gid, extra_groups=[]
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", HOME=str(self.root))
        return subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
            cwd=self.root,
            **kwargs,
        )

    def _chown(self) -> None:
        if not (self._as_root and self._os_user):
            return
        import pwd

        entry = pwd.getpwnam(self._os_user)
        for folder, dirs, files in os.walk(self.root):
            os.chown(folder, entry.pw_uid, entry.pw_gid)
            for name in dirs + files:
                os.chown(
                    os.path.join(folder, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False
                )

    def initdb(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n", encoding="utf-8")
        pwfile.chmod(0o600)
        self._chown()
        done = self._run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256",
                "--auth-local=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise PostgresUnavailable(f"initdb failed ({done.returncode}): {done.stderr.strip()}")

    def pg_ctl(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run ``pg_ctl -D <datadir> ARGS…`` as the cluster's owner."""
        return self._run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), *args], timeout=timeout
        )

    def start(self, attempts: int = 3) -> None:
        """Start the server (a free port each attempt) and wait until it accepts logins."""
        problems = []
        for _ in range(attempts):
            self.port = self.port or _free_port()
            options = (
                f"-c listen_addresses={self.host} -p {self.port} -c unix_socket_directories='' "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=60 -c shared_buffers=32MB"
            )
            done = self.pg_ctl("start", "-w", "-t", "60", "-l", str(self.logfile), "-o", options)
            if done.returncode == 0:
                self._running = True
                self._wait_ready()
                return
            problems.append(
                f"pg_ctl start ({done.returncode}): {done.stderr.strip()} {self._log_tail()}"
            )
            self.port = 0
        raise PostgresUnavailable(
            "the PostgreSQL test server did not start: " + " | ".join(problems)
        )

    def _wait_ready(self, timeout_s: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with psycopg.connect(self.dsn("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError as err:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable(
                        f"server not ready: {err} {self._log_tail()}"
                    ) from err
                time.sleep(0.1)

    def _log_tail(self) -> str:
        try:
            return "log: " + " / ".join(self.logfile.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (fast shutdown); the data stay for a later ``start()``."""
        if self._running:
            self.pg_ctl("stop", "-m", "fast", "-w", "-t", "60")
            self._running = False

    def destroy(self) -> None:
        """Stop the server and remove its folder."""
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self._running

    # -- SQL as the superuser ----------------------------------------------------------------

    def dsn(
        self, dbname: str = "postgres", *, user: str = SUPERUSER, password: str | None = None
    ) -> str:
        """A libpq URL to ``dbname`` on this server (the superuser's unless ``user`` is given)."""
        secret = self.password if password is None and user == SUPERUSER else (password or "")
        auth = quote(user, safe="") + (":" + quote(secret, safe="") if secret else "")
        return f"postgresql://{auth}@{self.host}:{self.port}/{quote(dbname, safe='')}"

    def execute(
        self, dbname: str, sql: str, params: Sequence[Any] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser (autocommit); the rows it returned."""
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return list(cursor.fetchall()) if cursor.description else []

    def create_database(self, name: str, *, owner: str | None = None) -> str:
        """Create (or re-create) database ``name``; returns the name."""
        from psycopg import sql

        with self._admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if owner:
                statement += sql.SQL(" OWNER {}").format(sql.Identifier(owner))
            conn.execute(statement)
        return name

    def create_role(self, name: str, password: str, *, superuser: bool = False) -> str:
        from psycopg import sql

        with self._admin() as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
            conn.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN PASSWORD {} "
                    + ("SUPERUSER" if superuser else "NOSUPERUSER")
                ).format(sql.Identifier(name), sql.Literal(password))
            )
        return name

    def reader_dsn(self, dbname: str) -> str:
        """A URL for the role ``tht_reader`` (created on first use, granted
        ``pg_read_all_data``): what a Database Binding should use. tht refuses to run queries
        as the superuser of :meth:`dsn` (it could write server files)."""
        if not self.execute("postgres", "SELECT 1 FROM pg_roles WHERE rolname = 'tht_reader'"):
            self.create_role("tht_reader", READER_PASSWORD)
            self.execute("postgres", "GRANT pg_read_all_data TO tht_reader")
        return self.dsn(dbname, user="tht_reader", password=READER_PASSWORD)

    @contextlib.contextmanager
    def _admin(self) -> Iterator[Any]:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            yield conn


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    """A started server, destroyed on exit (what the pytest fixture wraps)."""
    server = PostgresServer(find_bindir())
    try:
        server.initdb()
        server.start()
        yield server
    finally:
        server.destroy()
