"""Calls a policy asks a person's approval of (issue 36), end to end with the SDK's client
over HTTP against a real downstream: the call is held (`APPROVAL_REQUIRED` with the approval
page's link, or a URL elicitation where the client declared it), a person's approval lets
that exact call by that caller run once, a refusal or an expiry is told once
(`APPROVAL_DENIED`), and each decision is in the call log. A person decides here through
`calls.approvals.decide`, as the approval page does."""

from __future__ import annotations

import re
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import anyio
import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import Membership
from calls.approvals import decide
from calls.models import Approval, CallRecord
from kernel import approvals
from tests.harness.live import LiveGateway, TenantSetup
from tests.harness.results import (
    INITIALIZE_PARAMS,
    error_of,
    payload,
    raw_rpc,
    rpc_json,
    text_of,
    use,
)
from tests.harness.waits import eventually
from toolboxes.models import ApiKey, PolicyDefaults, Toolbox, ToolPolicy

pytestmark = pytest.mark.anyio

HELD = (
    "Error executing tool 'echo' in server 'filesystem' (toolbox 'dev'): approve this call first: "
)
DENIED = (
    "Error executing tool 'echo' in server 'filesystem' (toolbox 'dev'): the call was not approved"
)
ASKED_BY_RULE = "approval required by: toolbox 'dev', tool 'echo', everyone"
ECHO_DETAILS = {"toolbox": "dev", "server": "filesystem", "tool": "echo"}


@pytest.fixture
def acme(make_setup) -> tuple[TenantSetup, Toolbox]:
    setup = make_setup()
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "filesystem", "--destructive", "echo")
    return setup, toolbox


def person(setup: TenantSetup, name: str, role: str = "admin") -> Any:
    user = get_user_model().objects.create_user(name)
    Membership.objects.create(user=user, tenant=setup.tenant, role=role)
    return user


@pytest.fixture
def boss(acme) -> Any:
    """A tenant admin: decides others' held calls."""
    return person(acme[0], "boss")


async def ask_rule(toolbox: Toolbox, **terms: Any) -> ToolPolicy:
    return await ToolPolicy.objects.acreate(
        tenant=toolbox.tenant, toolbox=toolbox, tool="echo", effect="ask", **terms
    )


def base_of(live: LiveGateway) -> str:
    return live.url.removesuffix("/mcp")


def held_link(live: LiveGateway, result: Any) -> str:
    """The approval page's link of an APPROVAL_REQUIRED result, checked for its shape."""
    code, text = error_of(result)
    assert code == "APPROVAL_REQUIRED", text
    assert text.startswith(HELD)
    url = text.removeprefix(HELD)
    assert re.fullmatch(re.escape(base_of(live)) + r"/approvals/[\w-]+/", url), url
    assert result.structured_content["error"]["details"] == {**ECHO_DETAILS, "approval_url": url}
    return url


async def approval_of(live: LiveGateway, url: str) -> Approval:
    public_id = url.removeprefix(base_of(live) + "/approvals/").rstrip("/")
    return await Approval.objects.aget(public_id=public_id)


async def decided(approval: Approval, user: Any, approve: bool) -> None:
    done = await sync_to_async(decide)(approval.pk, user, approve, "127.0.0.1")
    assert done.refused_because is None


async def decisions(setup: TenantSetup, count: int) -> list[tuple[str, str]]:
    """The call log's (outcome, decision) of this key's `count` use_tool calls, in order."""
    rows = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, meta_tool="use_tool")

    async def all_written() -> bool:
        return await rows.acount() >= count

    await eventually(all_written, 15, f"{count} use_tool rows in the call log")
    return [(row.outcome, row.decision) async for row in rows.order_by("at", "pk")]


async def echo(client: Any, text: str = "hi") -> Any:
    return await client.call_tool("use_tool", use("dev", "filesystem", "echo", {"text": text}))


def connect(live: LiveGateway, key: str, generation: str) -> AbstractAsyncContextManager[Any]:
    return live.session(key) if generation == "2025-11-25" else live.client(key)


@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_a_held_call_runs_once_when_approved(
    live_gateway: LiveGateway, acme, boss, generation
):
    setup, toolbox = acme
    await ask_rule(toolbox)
    async with connect(live_gateway, setup.key, generation) as client:
        opened = payload(await client.call_tool("open_toolbox", {"toolbox": "dev"}))
        assert "echo" in {tool["name"] for tool in opened["tools"]}  # listed as usual
        url = held_link(live_gateway, await echo(client))
        approval = await approval_of(live_gateway, url)
        assert (approval.status, approval.caller, approval.caller_label) == (
            approvals.PENDING,
            f"key:{setup.api_key.pk}",
            str(setup.api_key),
        )
        assert approval.key_id == setup.api_key.pk and approval.caller_person_id is None
        assert (approval.toolbox, approval.server, approval.tool) == ("dev", "filesystem", "echo")
        assert approval.arguments_digest == approvals.arguments_digest({"text": "hi"})
        assert (approval.arguments_shown, approval.reason) == ('{"text": "hi"}', ASKED_BY_RULE)
        minutes = (approval.expires_at - approval.created_at).total_seconds() / 60
        assert minutes == pytest.approx(approvals.DEFAULT_MINUTES, abs=0.1)
        assert held_link(live_gateway, await echo(client)) == url  # still waiting: one link
        await decided(approval, boss, approve=True)
        assert text_of(await echo(client)) == "hi"
        used = await Approval.objects.aget(pk=approval.pk)
        assert used.status == approvals.USED and used.used_at is not None
        again = held_link(live_gateway, await echo(client))  # single use: asked anew
        assert again != url
    assert await decisions(setup, 4) == [
        ("APPROVAL_REQUIRED", ASKED_BY_RULE),
        ("APPROVAL_REQUIRED", ASKED_BY_RULE),
        ("ok", "approved by boss"),
        ("APPROVAL_REQUIRED", ASKED_BY_RULE),
    ]


async def test_a_refusal_and_an_expiry_are_told_once(live_gateway: LiveGateway, acme, boss):
    setup, toolbox = acme
    await ask_rule(toolbox)
    async with live_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        first = await approval_of(live_gateway, held_link(live_gateway, await echo(session)))
        await decided(first, boss, approve=False)
        refused = await echo(session)
        assert error_of(refused) == ("APPROVAL_DENIED", DENIED)
        assert refused.structured_content["error"]["details"] == ECHO_DETAILS
        second = await approval_of(live_gateway, held_link(live_gateway, await echo(session)))
        assert second.pk != first.pk
        await Approval.objects.filter(pk=second.pk).aupdate(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        assert error_of(await echo(session)) == ("APPROVAL_DENIED", DENIED)
        expired = await Approval.objects.aget(pk=second.pk)
        assert (expired.status, expired.told) == (approvals.EXPIRED, True)
        third = await approval_of(live_gateway, held_link(live_gateway, await echo(session)))
        assert third.pk not in (first.pk, second.pk)
    assert await decisions(setup, 5) == [
        ("APPROVAL_REQUIRED", ASKED_BY_RULE),
        ("APPROVAL_DENIED", "not approved: refused by boss"),
        ("APPROVAL_REQUIRED", ASKED_BY_RULE),
        ("APPROVAL_DENIED", "not approved: expired"),
        ("APPROVAL_REQUIRED", ASKED_BY_RULE),
    ]


async def test_an_approval_is_for_its_arguments_and_its_caller_only(
    live_gateway: LiveGateway, acme, boss
):
    setup, toolbox = acme
    other = await sync_to_async(setup.new_key)()
    await ask_rule(toolbox)
    async with live_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        approval = await approval_of(live_gateway, held_link(live_gateway, await echo(session)))
        await decided(approval, boss, approve=True)
        changed = await approval_of(
            live_gateway, held_link(live_gateway, await echo(session, "bye"))
        )
        assert changed.pk != approval.pk and changed.status == approvals.PENDING
        assert (await Approval.objects.aget(pk=approval.pk)).status == approvals.APPROVED
        async with live_gateway.session(other.key) as theirs:  # another key of the tenant
            await theirs.call_tool("open_toolbox", {"toolbox": "dev"})
            own = await approval_of(live_gateway, held_link(live_gateway, await echo(theirs)))
            assert own.pk != approval.pk and own.caller == f"key:{other.api_key.pk}"
        assert (await Approval.objects.aget(pk=approval.pk)).status == approvals.APPROVED
        assert text_of(await echo(session)) == "hi"


async def test_two_calls_racing_for_one_approval_run_once(live_gateway: LiveGateway, acme, boss):
    setup, toolbox = acme
    await ask_rule(toolbox)
    results: list[Any] = []
    async with live_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        approval = await approval_of(live_gateway, held_link(live_gateway, await echo(session)))
        await decided(approval, boss, approve=True)

        async def call() -> None:
            async with live_gateway.session(setup.key) as racer:
                results.append(await echo(racer))

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(call)
    ran = [result for result in results if not result.is_error]
    assert [text_of(result) for result in ran] == ["hi"]
    [held] = [result for result in results if result.is_error]
    assert held_link(live_gateway, held) != ""
    assert await Approval.objects.filter(status=approvals.USED).acount() == 1


@pytest.mark.parametrize("declared", [{"url": {}}, {}])
async def test_a_client_declaring_url_elicitation_gets_the_link_as_one(
    live_gateway: LiveGateway, acme, declared
):
    """2025-11-25: a client that declared URL elicitation gets APPROVAL_REQUIRED as a
    -32042 error naming the approval page; one that did not, the contract's result."""
    setup, toolbox = acme
    await ask_rule(toolbox)
    params = {**INITIALIZE_PARAMS, "capabilities": {"elicitation": declared}}
    key, url = setup.key, live_gateway.url
    async with httpx2.AsyncClient(timeout=60) as http:
        init = await raw_rpc(http, url, "initialize", params, key=key)
        sid = init.headers["mcp-session-id"]
        opened = {"name": "open_toolbox", "arguments": {"toolbox": "dev"}}
        assert (await raw_rpc(http, url, "tools/call", opened, key=key, session_id=sid)).is_success
        called = {"name": "use_tool", "arguments": use("dev", "filesystem", "echo", {"text": "hi"})}
        body = rpc_json(await raw_rpc(http, url, "tools/call", called, key=key, session_id=sid))
    if not declared:
        assert body["result"]["isError"] is True
        error = body["result"]["structuredContent"]["error"]
        assert error["code"] == "APPROVAL_REQUIRED" and error["message"].startswith(HELD)
        return
    error = body["error"]
    assert error["code"] == -32042
    assert error["message"].startswith(HELD)
    link = error["message"].removeprefix(HELD)
    [elicitation] = error["data"]["elicitations"]
    assert (elicitation["mode"], elicitation["url"]) == ("url", link)
    assert elicitation["message"] == error["message"] and elicitation["elicitationId"]
    assert (error["data"]["code"], error["data"]["approval_url"]) == ("APPROVAL_REQUIRED", link)
    assert (await approval_of(live_gateway, link)).status == approvals.PENDING


async def test_the_toolbox_endpoint_holds_a_call_alike(live_gateway: LiveGateway, acme, boss):
    setup, toolbox = acme
    await ask_rule(toolbox)
    endpoint = replace(live_gateway, url=live_gateway.url.rstrip("/") + "/t/acme/toolboxes/dev")
    async with endpoint.session(setup.key) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "filesystem__echo" in names  # listed as usual
        held = await session.call_tool("filesystem__echo", {"text": "hi"})
        approval = await approval_of(live_gateway, held_link(live_gateway, held))
        assert approval.arguments_digest == approvals.arguments_digest({"text": "hi"})
        await decided(approval, boss, approve=True)
        assert text_of(await session.call_tool("filesystem__echo", {"text": "hi"})) == "hi"
        held_link(live_gateway, await session.call_tool("filesystem__echo", {"text": "hi"}))


def personal_key(setup: TenantSetup, user: Any) -> str:
    return ApiKey.issue(setup.tenant, label="own", owner=user)[1]


async def test_asking_before_every_destructive_tool_holds_a_persons_call(
    live_gateway: LiveGateway, acme, boss
):
    """The tenant's default asks for a destructive tool (for a person's key too), not for
    the others; the caller in person (a tenant admin, here) may not approve their own
    call; a rule for the tool that allows self-approval lets them, and its named approvers
    are the approval's."""
    setup, toolbox = acme
    ada = await sync_to_async(person)(setup, "ada")
    key = await sync_to_async(personal_key)(setup, ada)
    await PolicyDefaults.objects.acreate(tenant=setup.tenant, ask_destructive=True)
    async with live_gateway.session(key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        added = await session.call_tool(
            "use_tool", use("dev", "filesystem", "add", {"a": 1, "b": 2})
        )
        assert not added.is_error
        approval = await approval_of(live_gateway, held_link(live_gateway, await echo(session)))
        assert approval.reason == (
            "approval required by: the tenant's default: "
            "a person approves each call of a destructive tool"
        )
        assert approval.caller_person_id == ada.pk and not approval.self_approval
        assert approval.caller_label.endswith(", ada's")
        own = await sync_to_async(decide)(approval.pk, ada, True, "127.0.0.1")
        assert own.refused_because == approvals.OWN_CALL
        rule = await ask_rule(toolbox, self_approval=True, approval_minutes=3)
        await sync_to_async(rule.approvers.set)([boss])
        changed = await approval_of(
            live_gateway, held_link(live_gateway, await echo(session, "by the rule"))
        )
        assert changed.self_approval and changed.reason == ASKED_BY_RULE
        assert [user.pk async for user in changed.approvers.all()] == [boss.pk]
        minutes = (changed.expires_at - changed.created_at).total_seconds() / 60
        assert minutes == pytest.approx(3, abs=0.1)
        await decided(changed, ada, approve=True)
        assert text_of(await echo(session, "by the rule")) == "by the rule"
