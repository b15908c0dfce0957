"""Issue 36's approvals end to end: the SDK's client (both protocol generations) calls a
tool an "ask" rule holds, over HTTP through a live gateway to a real downstream server,
and a person decides the call in a real Chromium, on the page whose link the client was
given: approved (the call then runs once), refused, expired, replayed, its arguments
changed, the caller's own call (a second pair of eyes, or self-approval where the rule
allows it), a client that declared URL elicitation, the tenant's signed webhook, the audit
trail, and a server that asks for input after the approval (2026-07-28).

The client runs on the test's event loop; the browser on its own thread (`Chromium.run`,
reached through `anyio.to_thread`), and the ORM through `sync_to_async`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone
from mcp import MCPError, UrlElicitationRequiredError

from accounts.models import Membership
from calls import webhooks
from calls.models import Approval, CallRecord
from kernel import approvals
from tests.calls.test_approval_webhook import SECRET, Receiver
from tests.harness.live import LiveGateway, TenantSetup, add_relay_probe, issue_key
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.waits import eventually
from toolboxes.models import ApiKey, PolicyDefaults, Tenant, Toolbox, ToolPolicy

pytestmark = [pytest.mark.once, pytest.mark.anyio]  # the admin's flows: the SQLite pass

T = TypeVar("T")
GENERATIONS = ["2025-11-25", "2026-07-28"]
BOSS_PASSWORD = "pw-approval-e2e-boss-1"
CAL_PASSWORD = "pw-approval-e2e-cal-1"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id
PLANTED = {"text": "drop prod-db-7", "aws_key": AWS_KEY_ID}
SHOWN = '{"aws_key": "[secret removed: AWS Access Key]", "text": "drop prod-db-7"}'
WHERE = "Error executing tool '{tool}' in server '{server}' (toolbox '{toolbox}'): "
HELD = WHERE.format(tool="echo", server="filesystem", toolbox="dev") + "approve this call first: "
DENIED = WHERE.format(tool="echo", server="filesystem", toolbox="dev") + "the call was not approved"
ECHO = {"toolbox": "dev", "server": "filesystem", "tool": "echo"}
ASKED = "approval required by: toolbox 'dev', tool 'echo', everyone"
WAIT_SECONDS = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def acme(transactional_db: None) -> TenantSetup:
    """A tenant with a tenant key, its toolbox `dev` with the fixture server (`echo`
    annotated destructive), and two of its admins, `boss` and `cal` (a personal key's
    owner must be an admin to use /mcp)."""
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    setup = issue_key(tenant)
    setup.fixture_server(setup.toolbox("dev"), "filesystem", "--destructive", "echo")
    boss = User.objects.create_user("boss", password=BOSS_PASSWORD, is_staff=True)
    Membership.objects.create(user=boss, tenant=tenant, role="admin")
    cal = User.objects.create_user("cal", password=CAL_PASSWORD, is_staff=True)
    Membership.objects.create(user=cal, tenant=tenant, role="admin")
    return setup


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def ask_rule(setup: TenantSetup, toolbox: str = "dev", tool: str = "echo", **terms: Any) -> None:
    """An admin's "ask" rule for one tool (the admin's form is clicked through by
    test_approval_flow; here it is set as that form saves it)."""
    found = Toolbox.objects.get(tenant=setup.tenant, name=toolbox)
    ToolPolicy.objects.create(tenant=setup.tenant, toolbox=found, tool=tool, effect="ask", **terms)


def connect(live: LiveGateway, key: str, generation: str, **callbacks: Any) -> Any:
    if generation == "2025-11-25":
        return live.session(key, **callbacks)
    return live.client(key, **callbacks)


@asynccontextmanager
async def opened(
    live: LiveGateway, key: str, generation: str, toolbox: str = "dev", **callbacks: Any
) -> AsyncIterator[Any]:
    """A client of `generation` with `toolbox` open."""
    async with connect(live, key, generation, **callbacks) as client:
        payload(await client.call_tool("open_toolbox", {"toolbox": toolbox}))
        yield client


async def echo(client: Any, arguments: dict[str, Any] | None = None) -> Any:
    return await client.call_tool(
        "use_tool", use("dev", "filesystem", "echo", arguments or dict(PLANTED))
    )


def base_of(live: LiveGateway) -> str:
    return live.url.removesuffix("/mcp")


def held_link(
    live: LiveGateway, result: Any, held: str = HELD, where: dict[str, str] = ECHO
) -> str:
    """The approval page's link of an APPROVAL_REQUIRED result, checked for its shape."""
    code, text = error_of(result)
    assert code == "APPROVAL_REQUIRED", text
    assert text.startswith(held), text
    url = text.removeprefix(held)
    assert url.startswith(base_of(live) + "/approvals/") and url.endswith("/"), url
    assert result.structured_content["error"]["details"] == {**where, "approval_url": url}
    return url


def path_of(live: LiveGateway, url: str) -> str:
    return url.removeprefix(base_of(live))


async def approval_at(live: LiveGateway, url: str) -> Approval:
    public_id = url.removeprefix(base_of(live) + "/approvals/").rstrip("/")
    return await Approval.objects.aget(public_id=public_id)


class Browser:
    """Chromium's steps from the test's event loop: each runs on the browser's thread."""

    def __init__(self, chromium: Any, base: str) -> None:
        self.chromium = chromium
        self.base = base

    async def run(self, step: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(self.chromium.run, step, *args)

    async def page(self) -> Any:
        return await anyio.to_thread.run_sync(self.chromium.new_page, self.base)

    async def shot(self, page: Any, name: str) -> None:
        await anyio.to_thread.run_sync(self.chromium.shot, page, name)

    async def follow(self, page: Any, path: str, username: str, password: str) -> dict[str, Any]:
        """Open an approval link signed out: the admin's login, then back to the page."""

        def step() -> dict[str, Any]:
            page.goto(path)
            page.wait_for_selector("#id_username")
            page.fill("#id_username", username)
            page.fill("#id_password", password)
            page.click("input[type=submit]")
            page.wait_for_selector("#approval-call")
            return {"url": page.url, **seen(page)}

        return await self.run(step)

    async def look(self, page: Any, path: str) -> dict[str, Any]:
        def step() -> dict[str, Any]:
            page.goto(path)
            page.wait_for_selector("#content-main")
            return seen(page)

        return await self.run(step)

    async def decide(self, page: Any, path: str, button: str) -> dict[str, Any]:
        """Approve (`#approve`) or refuse (`#refuse`) on the page: its message and state."""

        def step() -> dict[str, Any]:
            page.goto(path)
            page.click(button)
            page.wait_for_selector(".messagelist")
            return {"message": page.inner_text(".messagelist"), **seen(page)}

        return await self.run(step)


def seen(page: Any) -> dict[str, Any]:
    """What the approval page shows (on the browser's thread)."""
    refusal = page.query_selector("#refusal")
    shown = page.query_selector("#approval-call") is not None
    return {
        "text": page.inner_text("#content-main"),
        "html": page.content(),
        "arguments": page.inner_text("#approval-arguments") if shown else None,
        "status": page.inner_text("#approval-status") if shown else None,
        "refusal": refusal.inner_text() if refusal is not None else None,
        "buttons": page.query_selector("#approve") is not None,
    }


@pytest.fixture
def browser(chromium: Any, live_gateway: LiveGateway, plain_http_cookies: None) -> Browser:
    return Browser(chromium, base_of(live_gateway))


async def logged(setup: TenantSetup, count: int) -> list[tuple[str, str]]:
    """The call log's (outcome, decision) of the key's first `count` use_tool calls."""
    rows = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, meta_tool="use_tool")

    async def written() -> bool:
        return await rows.acount() >= count

    await eventually(written, WAIT_SECONDS, f"{count} use_tool rows in the call log")
    return [(row.outcome, row.decision) async for row in rows.order_by("at", "pk")]


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_approved_in_the_browser_the_call_runs_once(
    live_gateway: LiveGateway,
    browser: Browser,
    acme: TenantSetup,
    receiver: Receiver,
    settings: Any,
    generation: str,
) -> None:
    """Items 1, 4, 8 and 9: asked, the webhook told (signed, no argument values), approved
    in Chromium by an admin who signs in through the link, run once (the downstream's own
    result), asked anew when called again; the audit trail names who approved."""
    settings.WORKBENCH_PUBLIC_URL = live_gateway.url  # the webhook's links, as the client's
    await sync_to_async(ask_rule)(acme)
    await PolicyDefaults.objects.acreate(
        tenant=acme.tenant, approval_webhook_url=receiver.url, approval_webhook_secret=SECRET
    )
    boss = await browser.page()
    async with opened(live_gateway, acme.key, generation) as client:
        url = held_link(live_gateway, await echo(client))

        assert await anyio.to_thread.run_sync(receiver.arrived.wait, WAIT_SECONDS)
        [(headers, body)] = receiver.received
        assert webhooks.verify(SECRET, headers[webhooks.HEADER], body)
        asked = await approval_at(live_gateway, url)
        assert json.loads(body) == {
            "event": "approval.requested",
            "tenant": "acme",
            **ECHO,
            "caller": str(acme.api_key),
            "reason": ASKED,
            "approval_url": url,
            "expires_at": asked.expires_at.isoformat(),
        }
        assert b"prod-db-7" not in body and AWS_KEY_ID.encode() not in body

        page = await browser.follow(boss, path_of(live_gateway, url), "boss", BOSS_PASSWORD)
        await browser.shot(boss, f"approval-e2e-{generation}-01-asked")
        assert page["url"] == url
        assert page["arguments"] == SHOWN
        assert AWS_KEY_ID not in page["html"]
        assert page["status"].startswith("waiting: ") and page["buttons"]

        done = await browser.decide(boss, path_of(live_gateway, url), "#approve")
        await browser.shot(boss, f"approval-e2e-{generation}-02-approved")
        assert done["message"] == "You approved this call: the caller may now call it again, once."
        assert done["status"].startswith("approved by boss, ") and not done["buttons"]

        ran = await echo(client)  # the same call: the downstream's own result
        assert not ran.is_error and text_of(ran) == "drop prod-db-7"
        again = held_link(live_gateway, await echo(client))  # replayed: asked anew
        assert again != url

    approval = await approval_at(live_gateway, url)
    assert approval.status == approvals.USED and approval.used_at is not None
    assert (await approval_at(live_gateway, again)).status == approvals.PENDING
    used = await browser.look(boss, path_of(live_gateway, url))
    await browser.shot(boss, f"approval-e2e-{generation}-03-used")
    assert used["status"].startswith("approved and run by boss, ") and not used["buttons"]
    assert await logged(acme, 3) == [
        ("APPROVAL_REQUIRED", ASKED),
        ("ok", "approved by boss"),
        ("APPROVAL_REQUIRED", ASKED),
    ]

    ran_row = await CallRecord.objects.aget(
        key_prefix=acme.api_key.prefix, meta_tool="use_tool", outcome="ok"
    )

    def history() -> list[list[str]]:
        boss.goto(f"/admin/calls/approval/{approval.pk}/history/")
        rows = boss.query_selector_all("#change-history tbody tr")
        return [[cell.inner_text() for cell in row.query_selector_all("th, td")] for row in rows]

    def call_log_row() -> str:
        boss.goto(f"/admin/calls/callrecord/{ran_row.pk}/change/")
        return boss.inner_text(".field-decision")

    [(_, who, what)] = await browser.run(history)
    await browser.shot(boss, f"approval-e2e-{generation}-04-history")
    assert (who, what) == (
        "boss",
        f"Approved echo (server 'filesystem', toolbox 'dev') for {acme.api_key} from 127.0.0.1",
    )
    decision = await browser.run(call_log_row)
    await browser.shot(boss, f"approval-e2e-{generation}-05-call-log-row")
    assert decision.startswith("Tool policy:\napproved by boss\n"), decision


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_refused_expired_and_changed_arguments(
    live_gateway: LiveGateway, browser: Browser, acme: TenantSetup, generation: str
) -> None:
    """Items 2, 3 and 5: refused in the browser, then expired, are each told once as
    APPROVAL_DENIED; an expired page has no buttons; an approval is for its arguments only."""
    await sync_to_async(ask_rule)(acme)
    boss = await browser.page()
    async with opened(live_gateway, acme.key, generation) as client:
        refused = held_link(live_gateway, await echo(client))
        await browser.follow(boss, path_of(live_gateway, refused), "boss", BOSS_PASSWORD)
        done = await browser.decide(boss, path_of(live_gateway, refused), "#refuse")
        await browser.shot(boss, f"approval-e2e-{generation}-06-refused")
        assert done["message"] == "You refused this call: the caller is told it was not approved."
        assert done["status"].startswith("refused by boss, ") and not done["buttons"]
        denied = await echo(client)
        assert error_of(denied) == ("APPROVAL_DENIED", DENIED)
        assert "approval_url" not in denied.structured_content["error"]["details"]

        expiring = held_link(live_gateway, await echo(client))  # told once: asked anew
        assert expiring != refused
        await Approval.objects.filter(
            public_id=(await approval_at(live_gateway, expiring)).public_id
        ).aupdate(expires_at=timezone.now() - timedelta(seconds=1))
        assert error_of(await echo(client)) == ("APPROVAL_DENIED", DENIED)
        expired = await browser.look(boss, path_of(live_gateway, expiring))
        await browser.shot(boss, f"approval-e2e-{generation}-07-expired")
        assert expired["status"].startswith("expired at ")
        assert expired["status"].endswith(": the caller must call again")
        assert not expired["buttons"]

        first = held_link(live_gateway, await echo(client))
        await browser.decide(boss, path_of(live_gateway, first), "#approve")
        changed = held_link(live_gateway, await echo(client, {**PLANTED, "text": "drop all"}))
        assert changed != first
        assert (await approval_at(live_gateway, first)).status == approvals.APPROVED  # unused
        assert (await approval_at(live_gateway, changed)).status == approvals.PENDING
        assert text_of(await echo(client)) == "drop prod-db-7"  # the approved one, still
    assert await logged(acme, 7) == [
        ("APPROVAL_REQUIRED", ASKED),
        ("APPROVAL_DENIED", "not approved: refused by boss"),
        ("APPROVAL_REQUIRED", ASKED),
        ("APPROVAL_DENIED", "not approved: expired"),
        ("APPROVAL_REQUIRED", ASKED),
        ("APPROVAL_REQUIRED", ASKED),
        ("ok", "approved by boss"),
    ]


def personal_key(setup: TenantSetup, username: str) -> str:
    owner = User.objects.get(username=username)
    return ApiKey.issue(setup.tenant, label="cal's laptop", owner=owner)[1]


def allow_self_approval(setup: TenantSetup) -> None:
    """As the admin's form saves it (its signal tells the gateways)."""
    rule = ToolPolicy.objects.get(tenant=setup.tenant)
    rule.self_approval = True
    rule.save()


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_the_callers_own_call_needs_another_person_unless_the_rule_allows_it(
    live_gateway: LiveGateway, browser: Browser, acme: TenantSetup, generation: str
) -> None:
    """Item 6: a member (an admin, even) calling with their personal key opens their own
    link: a second pair of eyes, no buttons; once the rule allows self-approval, they
    approve their own (new) call and it runs."""
    key = await sync_to_async(personal_key)(acme, "cal")
    await sync_to_async(ask_rule)(acme)
    cal = await browser.page()
    async with opened(live_gateway, key, generation) as client:
        own = held_link(live_gateway, await echo(client))
        page = await browser.follow(cal, path_of(live_gateway, own), "cal", CAL_PASSWORD)
        await browser.shot(cal, f"approval-e2e-{generation}-08-own-call")
        assert page["refusal"] == approvals.OWN_CALL and not page["buttons"]
        assert page["arguments"] == SHOWN  # the caller sees their own call

        await sync_to_async(allow_self_approval)(acme)
        arguments = {**PLANTED, "text": "drop my-db"}
        mine = held_link(live_gateway, await echo(client, arguments))
        approval = await approval_at(live_gateway, mine)
        assert approval.self_approval and approval.caller_label.endswith(", cal's")
        done = await browser.decide(cal, path_of(live_gateway, mine), "#approve")
        await browser.shot(cal, f"approval-e2e-{generation}-09-self-approved")
        assert done["status"].startswith("approved by cal, ")
        assert text_of(await echo(client, arguments)) == "drop my-db"
    assert (await approval_at(live_gateway, own)).status == approvals.PENDING


async def test_a_client_that_declared_url_elicitation_gets_the_link_as_one(
    live_gateway: LiveGateway, browser: Browser, acme: TenantSetup
) -> None:
    """Item 7: a 2025-11-25 client that declared URL elicitation at its `initialize` (the
    SDK's client does with an elicitation callback) gets -32042 naming the approval page
    instead of a result; approved there, the same call runs. A 2026-07-28 client that
    declared it gets the link as a URL elicitation in an input-required result, and its
    retry runs the call once approved (or gets the contract's result, asked once)."""
    await sync_to_async(ask_rule)(acme)

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("the gateway asks nothing during the call")

    boss = await browser.page()
    async with opened(live_gateway, acme.key, "2025-11-25", elicitation_callback=elicit) as client:
        with pytest.raises(MCPError) as raised:
            await echo(client)
        error = raised.value.error
        assert error.code == types.URL_ELICITATION_REQUIRED == -32042
        assert error.message.startswith(HELD)
        url = error.message.removeprefix(HELD)
        [elicitation] = UrlElicitationRequiredError.from_error(error).elicitations
        assert (elicitation.url, elicitation.message) == (url, error.message)
        assert (error.data["code"], error.data["approval_url"]) == ("APPROVAL_REQUIRED", url)
        assert (await approval_at(live_gateway, url)).status == approvals.PENDING
        await browser.follow(boss, path_of(live_gateway, url), "boss", BOSS_PASSWORD)
        await browser.decide(boss, path_of(live_gateway, url), "#approve")
        assert text_of(await echo(client)) == "drop prod-db-7"
    # 2026-07-28 has no -32042: the link comes as a URL elicitation in an input-required
    # result (`url_questions`); the client's retry runs the call once it is approved.
    asked: list[str] = []

    async def approve_then_accept(ctx: Any, params: Any) -> types.ElicitResult:
        assert params.mode == "url" and params.message == HELD + params.url
        asked.append(params.url)
        await browser.decide(boss, path_of(live_gateway, params.url), "#approve")
        return types.ElicitResult(action="accept")

    async with opened(
        live_gateway, acme.key, "2026-07-28", elicitation_callback=approve_then_accept
    ) as client:
        assert text_of(await echo(client)) == "drop prod-db-7"
    assert len(asked) == 1
    assert (await approval_at(live_gateway, asked[0])).status == approvals.USED

    async def accept_only(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.url)
        return types.ElicitResult(action="accept")

    # Not approved when the client comes back: the contract's result, not another question.
    async with opened(
        live_gateway, acme.key, "2026-07-28", elicitation_callback=accept_only
    ) as client:
        assert held_link(live_gateway, await echo(client)) == asked[-1]
    assert len(asked) == 2


def add_probe(setup: TenantSetup) -> None:
    add_relay_probe(setup.toolbox("relay"))


async def test_an_approved_call_whose_server_asks_for_input_is_retried_without_asking_again(
    live_gateway: LiveGateway, browser: Browser, acme: TenantSetup
) -> None:
    """Item 10 (2026-07-28): approved, the call's server asks the client for input; the
    retry with the answer and the gateway's sealed state is the same approved call (the
    approved run travels in the state), once: the state replayed is asked anew, and so is
    a retry with changed arguments."""
    await sync_to_async(add_probe)(acme)
    await sync_to_async(ask_rule)(acme, toolbox="relay", tool="ask_form")
    held = WHERE.format(tool="ask_form", server="probe", toolbox="relay")
    held += "approve this call first: "
    answer = {"ask": types.ElicitResult(action="accept", content={"name": "Ada"})}

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        return answer["ask"]

    boss = await browser.page()
    async with opened(
        live_gateway, acme.key, "2026-07-28", toolbox="relay", elicitation_callback=elicit
    ) as client:

        async def ask_form(ticket: str, **retry: Any) -> Any:
            call = use("relay", "probe", "ask_form", {"ticket": ticket})
            return await client.session.call_tool(
                "use_tool", call, allow_input_required=True, **retry
            )

        def asked_link(result: Any) -> str:
            """A client that declared URL elicitation gets the link as one (`url_questions`)."""
            assert isinstance(result, types.InputRequiredResult), result
            [link] = (result.input_requests or {}).values()
            assert isinstance(link, types.ElicitRequest) and link.params.mode == "url"
            assert link.params.message == held + link.params.url
            return link.params.url

        url = asked_link(await ask_form("OPS-1"))
        await browser.follow(boss, path_of(live_gateway, url), "boss", BOSS_PASSWORD)
        await browser.decide(boss, path_of(live_gateway, url), "#approve")
        asked = await ask_form("OPS-1")
        assert isinstance(asked, types.InputRequiredResult), asked
        assert list(asked.input_requests or {}) == ["ask"]
        state = asked.request_state
        done = await ask_form("OPS-1", input_responses=answer, request_state=state)
        assert not done.is_error, text_of(done)
        assert json.loads(text_of(done).removeprefix("answered ")) == {
            "action": "accept",
            "content": {"name": "Ada"},
        }
        # The state replayed: the approved call ran once, this one is asked anew.
        replayed = await ask_form("OPS-1", input_responses=answer, request_state=state)
        again = asked_link(replayed)
        assert again != url

        # Approved again, then retried with other arguments: asked anew.
        await browser.decide(boss, path_of(live_gateway, again), "#approve")
        asked = await ask_form("OPS-1")
        assert isinstance(asked, types.InputRequiredResult), asked
        changed = await ask_form("OPS-2", input_responses=answer, request_state=asked.request_state)
        other = asked_link(changed)
        assert other not in (url, again)
    assert (await approval_at(live_gateway, url)).status == approvals.USED
    assert (await approval_at(live_gateway, again)).status == approvals.USED
    assert await Approval.objects.acount() == 3
    asked_by = "approval required by: toolbox 'relay', tool 'ask_form', everyone"
    assert await logged(acme, 6) == [
        ("APPROVAL_REQUIRED", asked_by),
        ("input_required", "approved by boss"),
        ("ok", "approved: the retry of an approved call"),
        ("APPROVAL_REQUIRED", asked_by),
        ("input_required", "approved by boss"),
        ("APPROVAL_REQUIRED", asked_by),
    ]
