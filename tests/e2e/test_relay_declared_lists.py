"""A tool a server offers only to a client that declared a capability is listed to such a
client, as it would be directly, and to no other (the contract, "What passes through
besides the result"; issue 34: "see what it would see connected directly, and no more").

npm's server-everything (spoken to in 2025-11-25) offers `trigger-elicitation-request`
only to a client whose `initialize` declared elicitation. The lists a caller gets
(`open_toolbox`, a toolbox endpoint's `tools/list`) are those of the connection its calls
go on: the pool's base connection for a client that declared nothing, the connection for
its set for one that declared some. Under trust-first pinning such a tool, which the
server's first offer (the base's) did not hold, waits for an admin like any new tool, and
is recorded where the admin approves it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from asgiref.sync import sync_to_async

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup, running_gateway
from tests.harness.results import payload, use
from tests.harness.toolbox_world import add_everything, endpoint, needs_node
from tests.harness.waits import eventually
from toolboxes import pins
from toolboxes.models import PinState, ToolPin

pytestmark = [pytest.mark.anyio, needs_node]

GATED = "trigger-elicitation-request"
ASKED = "Please provide inputs for the following fields:"
# What it offers a client that declared elicitation (form and URL, as the SDK declares it).
GATED_ALL = {GATED, "trigger-url-elicitation"}
HELD = f"Tool '{GATED}' in server 'everything' is waiting for an admin's approval"


class Declines:
    """A client that declared elicitation: it declines, and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="decline")


def names(opened: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in opened["tools"]]


@pytest.fixture(scope="module")
def world(module_db) -> TenantSetup:
    setup = make_tenant_setup("gated")
    server = add_everything(setup.toolbox("dev"))
    server.pinning = "off"
    server.save()
    return setup


@pytest.fixture
def caller(world) -> TenantSetup:
    return world.new_key()


async def open_dev(session: Any) -> dict[str, Any]:
    return payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))


async def test_a_2025_client_that_declared_elicitation_is_listed_the_tool_and_calls_it(
    module_gateway, caller
):
    declines = Declines()
    with anyio.fail_after(120):
        async with (
            module_gateway.session(caller.key) as plain,
            module_gateway.session(caller.key, elicitation_callback=declines.elicit) as asking,
        ):
            listed_plain, listed_asking = await open_dev(plain), await open_dev(asking)
            called = await asking.call_tool("use_tool", use("dev", "everything", GATED))
    assert GATED not in names(listed_plain)
    assert GATED in names(listed_asking)
    # Nothing else differs: every tool offered to both, and the elicitation ones besides.
    assert set(names(listed_plain)) < set(names(listed_asking))
    assert set(names(listed_asking)) - set(names(listed_plain)) == GATED_ALL
    assert not called.is_error, called
    assert declines.asked == [ASKED]


async def test_a_2026_client_that_declared_elicitation_is_listed_the_tool(module_gateway, caller):
    declines = Declines()
    with anyio.fail_after(120):
        async with (
            module_gateway.client(caller.key) as plain,
            module_gateway.client(caller.key, elicitation_callback=declines.elicit) as asking,
        ):
            listed_plain, listed_asking = await open_dev(plain), await open_dev(asking)
            called = await asking.call_tool("use_tool", use("dev", "everything", GATED))
    assert GATED not in names(listed_plain)
    assert GATED in names(listed_asking)
    assert not called.is_error, called
    assert declines.asked == [ASKED]


async def test_the_toolbox_endpoint_lists_it_to_such_a_client_only(module_gateway, caller):
    dev = endpoint(module_gateway, "gated", "dev")
    declines = Declines()
    name = f"everything__{GATED}"
    with anyio.fail_after(120):
        async with (
            dev.session(caller.key) as plain,
            dev.session(caller.key, elicitation_callback=declines.elicit) as asking,
        ):
            listed_plain = [tool.name for tool in (await plain.list_tools()).tools]
            listed_asking = [tool.name for tool in (await asking.list_tools()).tools]
            called = await asking.call_tool(name, {})
            refused = await plain.call_tool(name, {})
    assert name not in listed_plain and name in listed_asking
    assert not called.is_error, called
    assert declines.asked == [ASKED]
    # Not offered to a client that declared nothing: as the server itself answers it.
    assert refused.is_error


# Trust-first: the base's offer trusted first, then the set's tool waits for an admin.


def trusted() -> bool:
    return PinState.objects.exclude(trusted_fingerprint="").exists()


def held_pins() -> list[str]:
    return sorted(pin.name for pin in ToolPin.objects.all() if pin.is_held)


@pytest.fixture
def pinned(transactional_db) -> Iterator[tuple[LiveGateway, TenantSetup]]:
    setup = make_tenant_setup("gatedpins")
    add_everything(setup.toolbox("dev"))  # trust-first, the default
    with running_gateway() as live:
        yield live, setup


async def test_under_trust_first_the_tool_waits_for_an_admin_then_is_listed(pinned):
    live, setup = pinned
    declines = Declines()
    with anyio.fail_after(180):
        async with live.session(setup.key) as plain:
            await open_dev(plain)
            await eventually(sync_to_async(trusted), 30, "the base's offer to be trusted")
        async with live.session(setup.key, elicitation_callback=declines.elicit) as asking:

            async def held_now() -> bool:
                return HELD in (await open_dev(asking)).get("_held", [])

            await eventually(held_now, 30, "the set's tool to be held")
            await eventually(
                lambda: sync_to_async(lambda: GATED in held_pins())(),
                30,
                "the set's offer recorded for the admin",
            )
            gated = await sync_to_async(
                lambda: list(ToolPin.objects.filter(server__name="everything", name=GATED))
            )()
            await sync_to_async(pins.approve)(gated)

            async def listed_now() -> bool:
                return GATED in names(await open_dev(asking))

            await eventually(listed_now, 30, "the approved tool to be listed")
            called = await asking.call_tool("use_tool", use("dev", "everything", GATED))
    assert not called.is_error, called
    assert declines.asked == [ASKED]
