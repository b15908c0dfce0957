"""Settings for the test suite: the real settings with test-only secrets.

`TEST_DATABASE_URL` picks the database (SQLite in memory by default), so one suite runs
on both SQLite and PostgreSQL.
"""

import os

os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "test-secret-key")
# A fixed, valid Fernet key: test-only.
os.environ.setdefault("ENCRYPTION_KEYS", "ZmDfcTF7_60GrrY167zsiPd67pEvs0aGOv2oasOM1Pg=")
os.environ["DATABASE_URL"] = os.environ.get("TEST_DATABASE_URL", "sqlite:///:memory:")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")

from workbench_site.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# End-to-end tests set up data from async test bodies that also drive the gateway.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
