"""Settings come from the environment, and refuse to start without their secrets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.keys import TEST_FERNET_KEY

ROOT = Path(__file__).resolve().parents[2]
FERNET_KEY = TEST_FERNET_KEY


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    """Import the real settings in a fresh interpreter, with only this environment."""
    script = (
        "from workbench_site import settings as s; "
        "print(s.DEBUG, s.DATABASES['default']['ENGINE'], s.CACHES['default']['BACKEND'])"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "WORKBENCH_ENV_FILE": os.devnull, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"DEBUG": "false", "ENCRYPTION_KEYS": FERNET_KEY}, "SECRET_KEY must be set"),
        ({"DEBUG": "false", "SECRET_KEY": "s"}, "ENCRYPTION_KEYS must be set"),
    ],
)
def test_production_settings_refuse_to_load_without_their_secrets(env, missing):
    done = load_settings(**env)
    assert done.returncode != 0
    assert missing in done.stderr


def test_debug_runs_with_development_defaults():
    done = load_settings(DEBUG="true")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "True",
        "django.db.backends.sqlite3",
        "mcp_gateway.store.backends.EmbeddedCache",
    ]


def test_database_and_cache_come_from_their_urls():
    done = load_settings(
        DEBUG="false",
        SECRET_KEY="s",
        ENCRYPTION_KEYS=FERNET_KEY,
        DATABASE_URL="postgres://user:pw@db.invalid:5432/workbench",
        CACHE_URL="redis://cache.invalid:6379/2",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "False",
        "django.db.backends.postgresql",
        "mcp_gateway.store.backends.JsonRedisCache",  # Django's, keeping JSON: never its pickles
    ]


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        ("filecache:///tmp/wb-cache", "django.core.cache.backends.filebased.FileBasedCache"),
        ("dbcache://wb_cache", "django.core.cache.backends.db.DatabaseCache"),
        ("pymemcache://127.0.0.1:11211", "django.core.cache.backends.memcached.PyLibMCCache"),
    ],
)
def test_a_cache_that_would_unpickle_what_it_reads_is_refused(url, backend):
    done = load_settings(DEBUG="true", CACHE_URL=url)
    assert done.returncode != 0
    assert (
        f"django.core.exceptions.ImproperlyConfigured: CACHE_URL names a cache ({backend}) "
        "that would unpickle what it reads: use redis://:password@host:6379/0 (values kept "
        "as JSON), or leave CACHE_URL unset for the embedded store."
    ) in done.stderr


def test_local_memory_stays_allowed():
    done = load_settings(DEBUG="true", CACHE_URL="locmemcache://")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "django.core.cache.backends.locmem.LocMemCache"
