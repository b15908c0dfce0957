"""Connected accounts through the toolbox endpoint, as through use_tool: a server each
member signs in to (tests/servers/oauth_server.py behind OAuth) answers a member not signed
in yet with AUTH_REQUIRED and its one-time link; once signed in, the member's call acts as
them, and the server's tools are listed by their prefixed names."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.e2e.test_connected_accounts import acme, link_of, sign_in, vendor  # noqa: F401
from tests.harness.results import error_of, text_of

pytestmark = pytest.mark.anyio


async def test_a_member_signs_in_then_acts_as_themself(live_gateway, acme):  # noqa: F811
    dev = replace(live_gateway, url=live_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")
    ada = acme.people["ada"]
    async with dev.session(ada) as session:
        before = [tool.name for tool in (await session.list_tools()).tools]
        code, text = error_of(await session.call_tool("github__whoami", {}))
    assert "github__whoami" not in before and "local__echo" in before
    assert code == "AUTH_REQUIRED"
    assert text.startswith(
        "Error executing tool 'whoami' in server 'github' (toolbox 'dev'): "
        "sign in to 'github' first: "
    )
    await sign_in("ada", link_of(text), "ada-at-vendor")
    async with dev.client(ada) as client:  # 2026-07-28
        after = [tool.name for tool in (await client.list_tools()).tools]
        answer = await client.call_tool("github__whoami", {})
    assert "github__whoami" in after
    assert text_of(answer) == "ada-at-vendor"
