"""Fixtures shared by the whole suite: small factories for the configuration models."""

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.harness.services import end_other_database_sessions
from toolboxes.models import Server, Tenant, Toolbox


@pytest.fixture
def make_tenant(db: None) -> Callable[..., Tenant]:
    def make(slug: str = "acme", **fields: Any) -> Tenant:
        return Tenant.objects.create(slug=slug, **fields)

    return make


@pytest.fixture
def make_toolbox(db: None) -> Callable[..., Toolbox]:
    def make(tenant: Tenant, name: str = "dev", **fields: Any) -> Toolbox:
        fields.setdefault("description", f"{name} tools")
        return Toolbox.objects.create(tenant=tenant, name=name, **fields)

    return make


@pytest.fixture
def make_server(db: None) -> Callable[..., Server]:
    def make(toolbox: Toolbox, name: str = "time", **fields: Any) -> Server:
        fields.setdefault("command", "mcp-server-time")
        server = Server(toolbox=toolbox, name=name, **fields)
        server.full_clean()
        server.save()
        return server

    return make


@pytest.hookimpl(tryfirst=True)
@pytest.fixture
def key_limits_of_the_installation(settings: Any) -> None:
    """The installation's per-key limits at their defaults, whatever the environment says
    (the tests of a key's own limits compare with them)."""
    settings.WORKBENCH_KEY_RATE_LIMIT = 50.0
    settings.WORKBENCH_KEY_RATE_BURST = 100
    settings.WORKBENCH_OPEN_KEY_RATE_LIMIT = 5.0
    settings.WORKBENCH_OPEN_KEY_RATE_BURST = 20


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A server saved in the admin is checked on a thread of this process: that check ends
    (bounded) before the test's fixtures do (its live gateway, its database)."""
    checks = sys.modules.get("toolboxes.admin.background_checks")
    if checks is not None:
        assert checks.wait_idle(60), "a background server check did not end within 60 s"


@pytest.fixture(scope="session", autouse=True)
def _drop_leftover_sessions(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Before the test database is dropped, end the sessions gateways' threads left."""
    yield
    with django_db_blocker.unblock():
        end_other_database_sessions()


# Tests that take many seconds each (whole deployments, a browser, a benchmark), longest
# first: xdist hands out tests in collection order, and a long test dealt last keeps one
# worker busy while the others wait.
SLOWEST = (
    "tests/test_bench_smoke.py",
    "tests/site/test_make_run.py",
    "tests/browser/",
    "tests/e2e/test_freshness.py",
    "tests/e2e/test_multiprocess.py",
    "tests/e2e/test_shutdown.py",
    "tests/e2e/test_metrics_workers.py",
    "tests/e2e/test_relay_input_haproxy.py",
    "tests/e2e/test_sandbox.py",
    "tests/e2e/test_downstream_faults.py",
    "tests/toolboxes/config_file/test_roundtrip.py",
    "tests/e2e/test_oauth.py",
    "tests/e2e/test_telemetry.py",
    "tests/e2e/test_fairness.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first, so that the parallel workers end together: the SLOWEST modules, then
    every test with a live gateway (downstream processes), then the in-process rest, which
    fills the gaps at the end. The sort is stable: a module's tests keep their order."""

    def cost_rank(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        for rank, prefix in enumerate(SLOWEST):
            if path.startswith(prefix):
                return (0, rank)
        if {"live_gateway", "module_gateway"} & set(getattr(item, "fixturenames", ())):
            return (1, 0)
        return (2, 0)

    items.sort(key=cost_rank)
