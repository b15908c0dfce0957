"""Fixtures of the end-to-end tests: a live gateway and tenants set up for it.

The machinery lives in tests/harness/live.py; tests take these by name and never import
this module. Set data up in sync fixtures (`make_setup`), or from an `async def` test body
with `amake_setup` and `TenantSetup.atoolbox`/`afixture_server`: the ORM refuses to run on
an event loop.
"""

import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import environ
import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.backends.base.creation import TEST_DATABASE_PREFIX
from django.test.utils import setup_databases, teardown_databases

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup, running_gateway
from tests.harness.services import end_other_database_sessions


@pytest.fixture
def live_gateway(transactional_db: None) -> Iterator[LiveGateway]:
    with running_gateway() as live:
        yield live


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The database for a module whose tests share one world: a tenant, toolboxes and
    servers made once by a module-scoped fixture, committed, seen by `module_gateway`, and
    emptied at the module's end as `transactional_db` empties it after each test.

    Such a module's tests take no `db`, `transactional_db` or `make_setup` (their flush or
    transaction would empty or hide the world) and each takes a key of its own
    (`TenantSetup.new_key`, committed at once like the world). Mark the module
    `xdist_group(<name>)`: one worker runs it, so there is one world, not one per worker.
    """
    with django_db_blocker.unblock():
        made = ensure_test_database()
        try:
            yield
        finally:
            # As transactional_db does: ids are never reused, so nothing a worker's store
            # holds under an earlier key's id (what it opened) meets a later key.
            call_command("flush", verbosity=0, interactive=False, reset_sequences=False)
            if made is not None:
                end_other_database_sessions()
                teardown_databases(made, verbosity=0)


def ensure_test_database() -> Any:
    """pytest-django makes the test database only when a collected test asks for it by a
    fixture or marker; a module sharing a world, run on its own, asks for none. Make it
    then (and return what `teardown_databases` needs); None when it is there already.
    (Its name derives from the configured database's, not from the current one's: that is
    the test database's already, and a second one made after it would make the process's
    gateways another installation, refused by their uid claims.)"""
    configured = environ.Env.db_url_config(os.environ["DATABASE_URL"])["NAME"]
    test_name = connection.settings_dict["TEST"].get("NAME") or (TEST_DATABASE_PREFIX + configured)
    if connection.settings_dict["NAME"] == test_name:
        return None
    return setup_databases(verbosity=0, interactive=False, aliases={DEFAULT_DB_ALIAS})


@pytest.fixture(scope="module")
def module_gateway(module_db: None) -> Iterator[LiveGateway]:
    """One live gateway for a module's tests that change nothing of it (no pool, limiter
    or open-state settings): its downstream processes start once, not once per test."""
    with running_gateway() as live:
        yield live


@pytest.fixture
def make_setup(transactional_db: None) -> Callable[..., TenantSetup]:
    """make_setup(slug="acme", **key_options) -> TenantSetup, from sync code."""
    return make_tenant_setup


@pytest.fixture
def amake_setup(transactional_db: None) -> Callable[..., Awaitable[TenantSetup]]:
    """await amake_setup(slug="acme", **key_options), from an async test body."""

    async def make(*args: Any, **key_options: Any) -> TenantSetup:
        return await sync_to_async(make_tenant_setup)(*args, **key_options)

    return make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
