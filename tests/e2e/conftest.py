"""Fixtures of the end-to-end tests: a live gateway and tenants set up for it.

The machinery lives in tests/harness/live.py; tests take these by name and never import
this module. Set data up in sync fixtures (`make_setup`), or from an `async def` test body
with `amake_setup` and `TenantSetup.atoolbox`/`afixture_server`: the ORM refuses to run on
an event loop.
"""

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup, start_gateway


@pytest.fixture
def live_gateway(transactional_db: None) -> Iterator[LiveGateway]:
    running = start_gateway()
    try:
        yield running.live
    finally:
        running.stop()


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
