"""Tool policies end to end, with the SDK's client over HTTP: a denied tool is left out of
`open_toolbox` for that caller and refused by `use_tool` with the contract's code and
text (and recorded in the call log), another key of the tenant is not affected, a rule's
change applies at the next call, and the tenant's default from annotations denies
destructive tools to tenant keys unless an admin's rule for the tool allows them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from accounts.models import Membership
from calls.models import CallRecord
from tests.harness.live import LiveGateway, TenantSetup
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.waits import eventually
from toolboxes.models import ApiKey, PolicyDefaults, Toolbox, ToolPolicy

pytestmark = pytest.mark.anyio

FORBIDDEN_ECHO = (
    "Error executing tool: Tool 'echo' in server 'filesystem' is not allowed for this caller"
)


@pytest.fixture
def acme(make_setup) -> tuple[TenantSetup, Toolbox]:
    setup = make_setup()
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "filesystem", "--destructive", "echo")
    return setup, toolbox


async def listed(session: Any) -> set[str]:
    opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    return {tool["name"] for tool in opened["tools"]}


async def echo(session: Any) -> Any:
    return await session.call_tool("use_tool", use("dev", "filesystem", "echo", {"text": "hi"}))


async def test_a_denied_tool_is_hidden_and_refused_for_that_key_only(
    live_gateway: LiveGateway, acme
):
    setup, toolbox = acme
    other = await sync_to_async(setup.new_key)()
    await ToolPolicy.objects.acreate(
        tenant=setup.tenant, toolbox=toolbox, tool="echo", subject="key", api_key=setup.api_key
    )
    # The other key first: its open is what the gateway keeps; the denied key's view is
    # cut from it, never the other way round.
    async with live_gateway.session(other.key) as session:
        assert "echo" in await listed(session)
        assert text_of(await echo(session)) == "hi"
    async with live_gateway.session(setup.key) as session:
        names = await listed(session)
        assert "echo" not in names and "add" in names
        result = await echo(session)
        assert error_of(result) == ("FORBIDDEN", FORBIDDEN_ECHO)
        assert result.structured_content["error"]["details"] == {
            "toolbox": "dev",
            "server": "filesystem",
            "tool": "echo",
        }
    async with live_gateway.session(other.key) as session:
        assert "echo" in await listed(session)
    rows = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, meta_tool="use_tool")
    await eventually(rows.aexists, 15, "the refused call's row in the call log")
    row = await rows.aget()
    assert (row.toolbox, row.server, row.tool, row.outcome, row.error_code) == (
        "dev",
        "filesystem",
        "echo",
        "denied",
        "FORBIDDEN",
    )
    assert row.decision == f"denied by: toolbox 'dev', tool 'echo', key {setup.api_key}"
    opens = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, meta_tool="open_toolbox")
    await eventually(opens.aexists, 15, "the open's row in the call log")
    assert (await opens.aget()).decision == "left out by tool policies: filesystem/echo"
    allowed = CallRecord.objects.filter(key_prefix=other.api_key.prefix, meta_tool="use_tool")
    await eventually(allowed.aexists, 15, "the other key's call in the call log")
    assert (await allowed.aget()).decision == ""  # no rule decided it


async def test_a_rule_change_applies_at_the_next_call(live_gateway: LiveGateway, acme):
    setup, toolbox = acme
    async with live_gateway.session(setup.key) as session:
        assert "echo" in await listed(session)
        assert text_of(await echo(session)) == "hi"
        rule = await ToolPolicy.objects.acreate(tenant=setup.tenant, toolbox=toolbox)
        assert error_of(await echo(session)) == ("FORBIDDEN", FORBIDDEN_ECHO)
        assert await listed(session) == set()
        # A more specific allow for this key brings the one tool back.
        await ToolPolicy.objects.acreate(
            tenant=setup.tenant,
            toolbox=toolbox,
            server="filesystem",
            tool="echo",
            subject="key",
            api_key=setup.api_key,
            effect="allow",
        )
        assert await listed(session) == {"echo"}
        assert text_of(await echo(session)) == "hi"
        rows = CallRecord.objects.filter(
            key_prefix=setup.api_key.prefix, meta_tool="use_tool", outcome="ok"
        ).exclude(decision="")
        await eventually(rows.aexists, 15, "the allowed call's decision in the call log")
        assert (await rows.aget()).decision == (
            f"allowed by: toolbox 'dev', server 'filesystem', tool 'echo', key {setup.api_key}"
        )
        await rule.adelete()
        assert "add" in await listed(session)


def member_key(setup: TenantSetup, role: str) -> str:
    user = get_user_model().objects.create_user(f"{role}-person")
    Membership.objects.create(user=user, tenant=setup.tenant, role=role)
    return ApiKey.issue(setup.tenant, label=role, owner=user)[1]


async def test_destructive_tools_denied_to_tenant_keys_by_the_default(
    live_gateway: LiveGateway, acme
):
    setup, _ = acme
    personal = await sync_to_async(member_key)(setup, "admin")
    await PolicyDefaults.objects.acreate(tenant=setup.tenant, deny_destructive_to_keys=True)
    async with live_gateway.session(setup.key) as session:
        names = await listed(session)
        assert "echo" not in names and "add" in names
        assert error_of(await echo(session)) == ("FORBIDDEN", FORBIDDEN_ECHO)
    rows = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, meta_tool="use_tool")
    await eventually(rows.aexists, 15, "the refused call's row in the call log")
    assert (await rows.aget()).decision == (
        "denied by: the tenant's default: destructive tools denied to tenant keys"
    )
    async with live_gateway.session(personal) as session:  # a person's key: not a tenant key
        assert "echo" in await listed(session)
        assert text_of(await echo(session)) == "hi"
    # An admin's rule for the tool overrides what the server claims.
    await ToolPolicy.objects.acreate(
        tenant=setup.tenant, tool="echo", subject="key", api_key=setup.api_key, effect="allow"
    )
    async with live_gateway.session(setup.key) as session:
        assert "echo" in await listed(session)
        assert text_of(await echo(session)) == "hi"


async def test_a_role_rule_applies_to_a_members_personal_key(live_gateway: LiveGateway, acme):
    setup, toolbox = acme
    personal = await sync_to_async(member_key)(setup, "admin")
    await ToolPolicy.objects.acreate(
        tenant=setup.tenant, toolbox=toolbox, server="filesystem", subject="role", role="admin"
    )
    async with live_gateway.session(personal) as session:
        assert await listed(session) == set()
        assert error_of(await echo(session)) == ("FORBIDDEN", FORBIDDEN_ECHO)
    async with live_gateway.session(setup.key) as session:  # the tenant's key has no role
        assert "echo" in await listed(session)
        assert text_of(await echo(session)) == "hi"


async def test_the_2026_protocol_client_is_refused_alike(live_gateway: LiveGateway, acme):
    setup, toolbox = acme
    await ToolPolicy.objects.acreate(
        tenant=setup.tenant, toolbox=toolbox, tool="echo", subject="key", api_key=setup.api_key
    )
    async with live_gateway.client(setup.key) as client:
        assert client.protocol_version == "2026-07-28"
        opened = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert "echo" not in {tool["name"] for tool in opened["tools"]}
        result = await client.call_tool("use_tool", use("dev", "filesystem", "echo", {}))
        assert error_of(result) == ("FORBIDDEN", FORBIDDEN_ECHO)


async def test_search_tools_and_the_toolbox_endpoint_leave_a_denied_tool_out(
    live_gateway: LiveGateway, acme
):
    setup, toolbox = acme
    other = await sync_to_async(setup.new_key)()
    await ToolPolicy.objects.acreate(
        tenant=setup.tenant, toolbox=toolbox, tool="echo", subject="key", api_key=setup.api_key
    )
    query = {"query": "echo the text back", "limit": 1}
    async with live_gateway.session(other.key) as session:
        found = payload(await session.call_tool("search_tools", query))
        assert [tool["name"] for tool in found["tools"]] == ["echo"]
    async with live_gateway.session(setup.key) as session:
        found = payload(await session.call_tool("search_tools", query))
        # The limit is filled with the next best tool this key may call.
        assert len(found["tools"]) == 1 and found["tools"][0]["name"] != "echo"
        refused = await echo(session)  # the search opened the toolbox: the policy refuses
        assert error_of(refused) == ("FORBIDDEN", FORBIDDEN_ECHO)
    endpoint = replace(live_gateway, url=live_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")
    async with endpoint.session(setup.key) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "filesystem__echo" not in names and "filesystem__add" in names
        refused = await session.call_tool("filesystem__echo", {"text": "x"})
        assert error_of(refused) == ("FORBIDDEN", FORBIDDEN_ECHO)
    async with endpoint.session(other.key) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "filesystem__echo" in names
