"""Settings for the test suite: the real settings with test-only secrets.

`TEST_DATABASE_URL` picks the database (SQLite in memory by default), so one suite runs
on both SQLite and PostgreSQL. Django's async-safety guard stays on: no test may call the
ORM on an event loop (see tests/harness/live.py).
"""

import atexit
import os
import shutil
import tempfile

from tests.harness.keys import TEST_FERNET_KEY

os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "test-secret-key")
os.environ.setdefault("ENCRYPTION_KEYS", TEST_FERNET_KEY)
os.environ["DATABASE_URL"] = os.environ.get("TEST_DATABASE_URL", "sqlite:///:memory:")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")
# Remote fixture servers listen on loopback, which the egress policy refuses by default;
# ${VAR} references in tests use WORKBENCH_TEST_* names. Tests of the refusals override
# these per test (tests/e2e/test_egress.py, test_secrets.py).
os.environ.setdefault("WORKBENCH_EGRESS_ALLOW", "127.0.0.0/8,::1/128")
os.environ.setdefault("WORKBENCH_ENV_REFERENCES", "WORKBENCH_TEST_*")
# The shared store's directory: one per test process, so that xdist workers never see
# each other's open state. Workers inherit the controller's environment (which imported
# these settings first): a directory made by another process is not this one's.
if os.environ.get("WORKBENCH_STORE_DIR_PID") != str(os.getpid()):
    os.environ["WORKBENCH_STORE_DIR"] = tempfile.mkdtemp(prefix="wb-store-")
    os.environ["WORKBENCH_STORE_DIR_PID"] = str(os.getpid())
    atexit.register(shutil.rmtree, os.environ["WORKBENCH_STORE_DIR"], ignore_errors=True)
    # Sandbox uid claims (downstream/sandbox/uid_claims.py): this process's test database is its
    # one installation, whatever the host's real claims directory holds.
    os.environ["WORKBENCH_SANDBOX_UID_CLAIMS_DIR"] = os.path.join(
        os.environ["WORKBENCH_STORE_DIR"], "uid-claims"
    )
# The sandboxes' package caches (mcp_gateway/downstream/sandbox/cache.py): one directory per test
# process as well, never the host's, its tenant volumes unmounted at exit.
if os.environ.get("WORKBENCH_SANDBOX_CACHE_DIR_PID") != str(os.getpid()):
    from mcp_gateway.downstream.sandbox.cache import release

    os.environ["WORKBENCH_SANDBOX_CACHE_DIR"] = tempfile.mkdtemp(prefix="wb-cache-")
    os.environ["WORKBENCH_SANDBOX_CACHE_DIR_PID"] = str(os.getpid())
    os.environ.setdefault("WORKBENCH_SANDBOX_CACHE_MB", "256")
    atexit.register(release, os.environ["WORKBENCH_SANDBOX_CACHE_DIR"])
# What a tenant's servers may be shown (WORKBENCH_SANDBOX_TENANT_ROOT): `<dir>/<slug>`, in a
# directory the tenants' uids can enter (pytest's tmp_path lies below a 0700 one, which the
# sandbox refuses to show); made once, shared by xdist workers and gateway subprocesses.
if "WB_TEST_TENANTS_DIR" not in os.environ:
    os.environ["WB_TEST_TENANTS_DIR"] = tempfile.mkdtemp(prefix="wb-tenants-")
    os.chmod(os.environ["WB_TEST_TENANTS_DIR"], 0o755)
    atexit.register(shutil.rmtree, os.environ["WB_TEST_TENANTS_DIR"], ignore_errors=True)
os.environ["WORKBENCH_SANDBOX_TENANT_ROOT"] = os.path.join(
    os.environ["WB_TEST_TENANTS_DIR"], "{tenant}"
)

from workbench_site.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if "TEST_DATABASE_URL" not in os.environ:
    # A test database in a file of this process's own (xdist adds the worker to its name),
    # not Django's in-memory one: its shared cache refuses a read at once ("database table
    # is locked") while the live gateway's threads write, where a file in WAL mode reads on.
    _test_db_dir = tempfile.mkdtemp(prefix="wb-testdb-")
    atexit.register(shutil.rmtree, _test_db_dir, ignore_errors=True)
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(_test_db_dir, "test.sqlite3")}  # noqa: F405
