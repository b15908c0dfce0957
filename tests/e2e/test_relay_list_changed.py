"""A server's `notifications/tools/list_changed` through the gateway (issue 34): the
gateway lists the server's tools again (pinning applies: under trust-first a tool added at
run time waits for an admin), records the new offer (the server's `last_check_tools`), and
the next open_toolbox shows the change; the call during which the server announced it
answers after the new listing. Both protocol generations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async

from tests.harness.live import TenantSetup, add_relay_probe
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.servers import server_process
from tests.harness.waits import eventually
from toolboxes.models import PinState, Server, ToolPin

pytestmark = [pytest.mark.anyio]

HELD = "Tool 'added' in server 'probe' is waiting for an admin's approval"


def names(data: dict) -> list[str]:
    return [tool["name"] for tool in data["tools"]]


@pytest.fixture
def unpinned(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"), pinning="off")
    return setup


@pytest.fixture
def pinned(make_setup) -> TenantSetup:
    setup = make_setup()
    add_relay_probe(setup.toolbox("dev"))  # trust-first, the default
    return setup


def offered_names() -> list[str]:
    server = Server.objects.get(name="probe")
    return [tool["name"] for tool in server.last_check_tools or []]


async def test_a_tool_added_at_run_time_is_listed_and_callable(live_gateway, unpinned):
    async with live_gateway.session(unpinned.key) as session:
        before = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        missing = await session.call_tool("use_tool", use("dev", "probe", "added"))
        added = await session.call_tool("use_tool", use("dev", "probe", "add_tool"))
        after = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        called = await session.call_tool("use_tool", use("dev", "probe", "added"))
    assert "added" not in names(before)
    assert error_of(missing) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'added' not found in server 'probe'",
    )
    assert text_of(added) == "added"
    assert names(after) == [*names(before), "added"]
    assert after["tools"][-1] == {
        "name": "added",
        "description": "A tool added at run time",
        "inputSchema": {"type": "object"},
        "server": "probe",
        "toolbox": "dev",
    }
    assert text_of(called) == "added here"
    # The new offer is recorded, as a connection's listing is (the admin's status).
    await eventually(
        lambda: sync_to_async(lambda: "added" in offered_names())(), 10, "the offer recorded"
    )


async def test_a_2026_client_sees_the_change_too(live_gateway, unpinned):
    async with live_gateway.client(unpinned.key) as client:
        before = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        added = await client.call_tool("use_tool", use("dev", "probe", "add_tool"))
        after = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        called = await client.call_tool("use_tool", use("dev", "probe", "added"))
    assert text_of(added) == "added"
    assert names(after) == [*names(before), "added"]
    assert text_of(called) == "added here"


def trusted() -> bool:
    return PinState.objects.exclude(trusted_fingerprint="").exists()


def held_pins() -> list[str]:
    return [pin.name for pin in ToolPin.objects.all() if pin.is_held]


async def test_under_trust_first_a_tool_added_at_run_time_waits_for_an_admin(live_gateway, pinned):
    async with live_gateway.session(pinned.key) as session:
        before = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        await eventually(sync_to_async(trusted), 10, "the first offer to be recorded")
        assert text_of(await session.call_tool("use_tool", use("dev", "probe", "add_tool"))) == (
            "added"
        )

        async def held_now() -> bool:
            data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            return "_held" in data

        await eventually(held_now, 20, "the added tool to be held")
        after = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        refused = await session.call_tool("use_tool", use("dev", "probe", "added"))
    assert after["_held"] == [HELD]
    assert names(after) == names(before)
    assert error_of(refused) == ("TOOL_NOT_APPROVED", f"Error executing tool: {HELD}")
    await eventually(
        lambda: sync_to_async(lambda: held_pins() == ["added"])(), 10, "the held offer recorded"
    )


@pytest.fixture
def remote_unpinned(make_setup) -> Iterator[TenantSetup]:
    """The probe as a remote server (Streamable HTTP, stateful: its `list_changed` comes
    on the gateway's standalone stream), pinning off."""
    with server_process("relay_probe.py") as port:
        setup = make_setup()
        Server.objects.create(
            toolbox=setup.toolbox("dev"),
            name="probe",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp",
            pinning="off",
        )
        yield setup


async def test_a_remote_servers_change_is_listed(live_gateway, remote_unpinned):
    """The notification comes on another stream than the call's answer: no order between
    them, so the next open_toolbox shows the change within a bounded wait."""
    async with live_gateway.session(remote_unpinned.key) as session:
        before = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        added = await session.call_tool("use_tool", use("dev", "probe", "add_tool"))

        async def listed() -> bool:
            data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            return "added" in names(data)

        await eventually(listed, 20, "the added tool to be listed")
        called = await session.call_tool("use_tool", use("dev", "probe", "added"))
    assert "added" not in names(before)
    assert text_of(added) == "added"
    assert text_of(called) == "added here"
