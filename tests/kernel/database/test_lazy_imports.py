"""Importing kernel.database (and binding a database) pulls in neither SQLAlchemy nor psycopg:
a process that does not query the database pays nothing for them (ARCHITECTURE §3.6)."""

from __future__ import annotations

import subprocess
import sys


def test_the_package_imports_no_heavy_library() -> None:
    probe = (
        "import sys, pathlib\n"
        "import kernel.database as db\n"
        "db.binding_from_url(pathlib.Path('.'), 'postgresql://u:p@h/d')\n"
        "db.binding_from_url(pathlib.Path('.'), 'sqlite:///x.db')\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlalchemy', 'psycopg', 'sqlglot', 'pydantic'))\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_session_status_path_does_not_load_the_database_package() -> None:
    # kernel.report quotes F7's result sample (kernel.verification): a type import only
    probe = (
        "import sys\n"
        "import kernel.workflow_kernel, tht.commands.session\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('kernel.database'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
