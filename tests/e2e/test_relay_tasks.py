"""Tasks (2025-11-25's task-augmented calls; an extension from 2026-07-28): the SDK 2.3
has them as types only (`tasks/*` are not dispatched), so the gateway relays no `tasks/*`
(README, "Tasks"); what it does is pass a tool's `execution` and a call's `task` on
unchanged, through `use_tool` and through a toolbox endpoint."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import mcp_types as types
import pytest

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.paths import ROOT, TASK_PROBE
from tests.harness.results import error_of, payload, use
from tests.harness.toolbox_world import EVERYTHING, add_everything, needs_node
from toolboxes.models import Server

pytestmark = [pytest.mark.anyio, pytest.mark.once, pytest.mark.xdist_group("relay_tasks")]

EXECUTION = {"taskSupport": "optional"}
# The task probe runs on the 1.x SDK, which speaks 2025-11-25 only (tasks' revision).
MCP1_PYTHON = str(ROOT / "tests" / ".mcp1-venv" / "bin" / "python")


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    acme = make_tenant_setup("acme")
    server = Server(
        toolbox=acme.toolbox("dev"), name="probe", command=MCP1_PYTHON, args=[TASK_PROBE]
    )
    server.full_clean()
    server.save()
    if EVERYTHING.exists():  # simulate-research-query: a tool whose taskSupport is required
        add_everything(acme.toolbox("research"))
    return acme


@pytest.fixture
def acme(world) -> TenantSetup:
    return world.new_key()


@pytest.fixture
def tenant(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme")


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")


def call(name: str, arguments: dict[str, Any], task: int | None) -> types.CallToolRequest:
    ttl = types.TaskMetadata(ttl=task) if task is not None else None
    return types.CallToolRequest(
        params=types.CallToolRequestParams(name=name, arguments=arguments, task=ttl)
    )


async def test_execution_reaches_open_toolbox_and_the_toolbox_endpoint(tenant, dev, acme):
    async with tenant.session(acme.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert [entry["execution"] for entry in opened["tools"]] == [EXECUTION]
    async with dev.session(acme.key) as session:
        [listed] = (await session.list_tools()).tools
    assert listed.name == "probe__echo_task"
    assert listed.execution is not None
    assert listed.execution.model_dump(by_alias=True, exclude_none=True) == EXECUTION


async def test_a_calls_task_reaches_the_server_through_use_tool(tenant, acme):
    async with tenant.session(acme.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        arguments = use("dev", "probe", "echo_task", {})
        with_task = await session.send_request(
            call("use_tool", arguments, 60_000), types.CallToolResult
        )
        without = await session.send_request(
            call("use_tool", arguments, None), types.CallToolResult
        )
    assert with_task.structured_content == {"task": {"ttl": 60_000}}
    assert without.structured_content == {"task": None}


async def test_a_calls_task_reaches_the_server_through_the_toolbox_endpoint(dev, acme):
    async with dev.session(acme.key) as session:
        with_task = await session.send_request(
            call("probe__echo_task", {}, 60_000), types.CallToolResult
        )
        without = await session.send_request(
            call("probe__echo_task", {}, None), types.CallToolResult
        )
    assert with_task.structured_content == {"task": {"ttl": 60_000}}
    assert without.structured_content == {"task": None}


async def test_the_gateway_declares_no_tasks(tenant, dev, acme):
    """What a client reads before it may ask for a task: neither endpoint offers tasks."""
    for gateway in (tenant, dev):
        async with gateway.session(acme.key) as session:
            capabilities = session.server_capabilities
        assert capabilities is not None
        assert "tasks" not in capabilities.model_dump(exclude_none=True)


async def test_a_2026_client_sees_the_definition_its_revision_defines(dev, acme):
    """2026-07-28 moved tasks out of the core schema (its `Tool` has no `execution`): the
    SDK's per-revision surface drops the field for such a client, as it would for a
    server of the SDK's own; the 2025-11-25 client above gets it."""
    async with dev.client(acme.key) as client:
        [listed] = (await client.list_tools()).tools
    assert listed.name == "probe__echo_task"
    assert listed.execution is None


@needs_node
async def test_a_servers_task_answer_is_refused_as_an_invalid_result(module_gateway, acme):
    """What the README says is missing: a server that answers a `task` call with a task
    (a `CreateTaskResult`, to be polled with `tasks/get`) gets the gateway's
    DOWNSTREAM_ERROR, as any answer that is not a tool result does."""
    research = replace(
        module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme/toolboxes/research"
    )
    async with research.session(acme.key) as session:
        answer = await session.send_request(
            call("everything__simulate-research-query", {"topic": "tasks"}, 60_000),
            types.CallToolResult,
        )
    code, message = error_of(answer)
    assert code == "DOWNSTREAM_ERROR"
    assert message.startswith(
        "Error executing tool 'simulate-research-query' in server 'everything' "
        "(toolbox 'research'): the server sent an invalid result"
    ), message
