"""Files holding secrets are readable by their owner alone from the moment they exist:
`export_catalog --output` (decrypted env and header values) and the SQLite database."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.harness.paths import ROOT
from toolboxes.models import CatalogEntry
from workbench_site.dbfile import make_private, sqlite_path

SECRET = "tok-catalog-export-secret"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 0: what a file is created with is all that protects it."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_export_catalog_output_is_owner_only_from_creation(db, tmp_path, open_umask):
    """The review's finding: the decrypted catalog was written 0644."""
    CatalogEntry.objects.create(name="io.example/secret", command="x", env={"TOKEN": SECRET})
    fresh = tmp_path / "catalog.json"
    call_command("export_catalog", "--output", str(fresh))
    assert mode(fresh) == 0o600
    assert json.loads(fresh.read_text())["catalog"]["io.example/secret"]["env"] == {"TOKEN": SECRET}
    existing = tmp_path / "old.json"
    existing.write_text("old")
    existing.chmod(0o644)
    call_command("export_catalog", "--output", str(existing))
    assert mode(existing) == 0o600 and SECRET in existing.read_text()


PROBE = """
import json, os, django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE IF NOT EXISTS t (x)")
    cursor.execute("INSERT INTO t VALUES (1)")
    name = connection.settings_dict["NAME"]
    # While the connection is open: the database, its WAL and its shared memory.
    print(json.dumps({s: oct(os.stat(name + s).st_mode & 0o777) for s in ("", "-wal", "-shm")}))
"""


def probe(database: Path, tmp_path: Path) -> dict[str, str]:
    """A process on these settings (umask 0) writes the database; the files' modes."""
    env_file = tmp_path / "settings.env"
    env_file.write_text("")
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "workbench_site.settings",
            "DEBUG": "true",
            "DATABASE_URL": f"sqlite:///{database}",
            "WORKBENCH_ENV_FILE": str(env_file),
            "WORKBENCH_STORE_DIR": str(tmp_path / "store"),
        },
        capture_output=True,
        text=True,
        check=True,
        umask=0,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_sqlite_database_is_owner_only_from_creation(tmp_path):
    """The review's finding: the database (every tenant's encrypted secrets, key hashes,
    the call log) was 0644."""
    database = tmp_path / "workbench.sqlite3"
    assert probe(database, tmp_path) == {"": "0o600", "-wal": "0o600", "-shm": "0o600"}


def test_an_existing_sqlite_database_is_made_owner_only(tmp_path):
    database = tmp_path / "workbench.sqlite3"
    database.touch()
    database.chmod(0o644)
    assert probe(database, tmp_path) == {"": "0o600", "-wal": "0o600", "-shm": "0o600"}


def test_make_private_leaves_what_it_cannot_make(tmp_path):
    make_private(tmp_path / "missing" / "db.sqlite3")  # SQLite will say what is wrong
    assert not (tmp_path / "missing").exists()
    assert [sqlite_path(name) for name in (":memory:", "", "file:x?mode=memory")] == [None] * 3
    assert sqlite_path("/srv/wb/db.sqlite3") == Path("/srv/wb/db.sqlite3")
