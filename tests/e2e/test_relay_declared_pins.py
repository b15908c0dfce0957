"""Under trust-first pinning, a tool a server offers only to a client that declared a
capability (npm's server-everything's `trigger-elicitation-request`, for elicitation)
waits for an admin like any tool the server's first offer did not have: the base
connection's offer is trusted first, the offer of the connection for the client's set is
recorded for pinning (`records.write_set_offer`), held, and listed once approved."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from asgiref.sync import sync_to_async

from tests.e2e.test_relay_declared_lists import ASKED, GATED, Declines, names, open_dev
from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup, running_gateway
from tests.harness.results import use
from tests.harness.toolbox_world import add_everything, needs_node
from tests.harness.waits import eventually
from toolboxes import pins
from toolboxes.models import PinState, ToolPin

pytestmark = [pytest.mark.anyio, needs_node]

HELD = f"Tool '{GATED}' in server 'everything' is waiting for an admin's approval"


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
