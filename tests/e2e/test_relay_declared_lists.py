"""A tool a server offers only to a client that declared a capability is listed to such a
client, as it would be directly, and to no other (the contract, "What passes through
besides the result"; issue 34: "see what it would see connected directly, and no more").

npm's server-everything (spoken to in 2025-11-25) offers `trigger-elicitation-request`
only to a client whose `initialize` declared elicitation. The lists a caller gets
(`open_toolbox`, a toolbox endpoint's `tools/list`) are those of the connection its calls
go on: the pool's base connection for a client that declared nothing, the connection for
its set for one that declared some. Under trust-first pinning such a tool, which the
server's first offer (the base's) did not hold, waits for an admin like any new tool, and
is recorded where the admin approves it (`test_relay_declared_pins.py`)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.harness.live import TenantSetup, make_tenant_setup
from tests.harness.results import payload, use
from tests.harness.toolbox_world import add_everything, endpoint, needs_node

pytestmark = [pytest.mark.anyio, needs_node, pytest.mark.xdist_group("relay_declared_lists")]

GATED = "trigger-elicitation-request"
ASKED = "Please provide inputs for the following fields:"
# What it offers a client that declared elicitation (form and URL, as the SDK declares it).
GATED_ALL = {GATED, "trigger-url-elicitation"}


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


@pytest.mark.parametrize(
    "connect", ["session", "client"], ids=["2025-11-25 client", "2026-07-28 client"]
)
async def test_a_client_that_declared_elicitation_is_listed_the_tool_and_calls_it(
    module_gateway, caller, connect
):
    """`session`: a 2025-11-25 client (initialize); `client`: a 2026-07-28 one."""
    opened = getattr(module_gateway, connect)
    declines = Declines()
    with anyio.fail_after(120):
        async with (
            opened(caller.key) as plain,
            opened(caller.key, elicitation_callback=declines.elicit) as asking,
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
