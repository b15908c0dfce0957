"""Django's async-safety guard is on wherever the tests run the gateway: a synchronous ORM
call on an event loop (which would stall every client of that process) fails loudly."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.core.exceptions import SynchronousOnlyOperation

from tests.harness.deployment import ASYNC_UNSAFE, Deployment
from tests.harness.procs import environ_of
from toolboxes.models import Tenant


def test_the_suite_runs_without_the_opt_out():
    assert ASYNC_UNSAFE not in os.environ


def test_the_live_gateway_refuses_an_orm_call_on_its_event_loop(live_gateway):
    async def count_tenants() -> int:
        return Tenant.objects.count()

    with pytest.raises(SynchronousOnlyOperation):
        live_gateway.run_on_loop(count_tenants())


@pytest.fixture
def deployment(tmp_path, monkeypatch) -> Iterator[Deployment]:
    # Even with the opt-out in the tests' own environment, no gateway process gets it.
    monkeypatch.setenv(ASYNC_UNSAFE, "true")
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


@pytest.mark.once  # a process on its own SQLite file: the same on every pass
def test_gateway_processes_run_without_the_opt_out(deployment):
    process, _, _ = deployment.start_gateway("guarded", "--workers", "2")
    environ = environ_of(process.pid)
    assert environ["WORKBENCH_STORE_DIR"] == str(deployment.workdir / "store")
    assert ASYNC_UNSAFE not in environ
    assert ASYNC_UNSAFE not in deployment.env
