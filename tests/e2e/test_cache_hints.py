"""The caching hints of the gateway's own lists (2026-07-28): `tools/list` of
`/mcp/t/<slug>` and every list of a toolbox endpoint carry `ttlMs` and `cacheScope`
`private` (what they hold depends on the credential) to a 2026-07-28 client; a 2025-11-25
client, whose schema has no such fields, gets none."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mcp_gateway.front.cache_hints import META_TOOLS_TTL_MS, TOOLBOX_LISTS_TTL_MS
from tests.harness.live import LiveGateway
from tests.harness.toolbox_world import endpoint, make_world, needs_node

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.once,
    pytest.mark.xdist_group("cache_hints"),
    needs_node,
]


@pytest.fixture(scope="module")
def world(module_db):
    return make_world()


@pytest.fixture
def acme(world):
    return world[0].new_key()


@pytest.fixture
def tenant(module_gateway) -> LiveGateway:
    return replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme")


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return endpoint(module_gateway, "acme", "dev")


def hints(result: Any) -> tuple[int, str] | None:
    """The hints as the wire carried them (None when it carried neither field)."""
    if not {"ttl_ms", "cache_scope"} & result.model_fields_set:
        return None
    return result.ttl_ms, result.cache_scope


async def test_the_meta_tools_list_is_private_for_an_hour(tenant, acme):
    async with tenant.client(acme.key) as client:  # 2026-07-28
        listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == ["open_toolbox", "use_tool", "search_tools"]
    assert hints(listed) == (META_TOOLS_TTL_MS, "private") == (3_600_000, "private")


async def test_every_list_of_a_toolbox_endpoint_is_private_for_a_minute(dev, acme):
    async with dev.client(acme.key) as client:
        answers = [
            await client.list_tools(),
            await client.list_resources(),
            await client.list_resource_templates(),
            await client.list_prompts(),
        ]
    assert answers[0].tools and answers[1].resources and answers[3].prompts
    expected = (TOOLBOX_LISTS_TTL_MS, "private")
    assert [hints(answer) for answer in answers] == [expected] * 4
    assert expected == (60_000, "private")


async def test_a_2025_client_gets_no_hints(tenant, dev, acme):
    async with tenant.session(acme.key) as session:
        meta_tools = await session.list_tools()
    async with dev.session(acme.key) as session:
        answers = [
            await session.list_tools(),
            await session.list_resources(),
            await session.list_resource_templates(),
            await session.list_prompts(),
        ]
    assert meta_tools.tools and answers[0].tools
    assert [hints(answer) for answer in (meta_tools, *answers)] == [None] * 5
