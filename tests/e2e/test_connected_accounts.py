"""Connected accounts, end to end: a remote MCP server protected by OAuth
(tests/servers/oauth_server.py, on the SDK's server-side auth) behind a real gateway, used by
two members with personal keys through the real MCP client. Not connected: AUTH_REQUIRED
with a one-time link; the link drives the SDK-based sign-in (an HTTP client with cookies
plays the person's browser); then each member's calls carry their own token (`whoami`).
Links and states are bound to the person; refreshes happen near expiry, and a refused
refresh asks for a sign-in again. No token ever reaches a log, an error or the call log."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from accounts.models import Membership
from calls.models import CallRecord
from connections import texts
from connections.models import SignIn
from mcp_gateway.observe import metrics
from tests.harness.deployment import Deployment
from tests.harness.live import LiveGateway, TenantSetup
from tests.harness.net import free_port
from tests.harness.paths import FIXTURE_SERVER
from tests.harness.results import (
    INITIALIZE_PARAMS,
    error_of,
    payload,
    raw_rpc,
    refusal_json,
    rpc_json,
    text_of,
    use,
)
from tests.harness.servers import server_process
from tests.harness.waits import eventually
from toolboxes import versions
from toolboxes.models import ApiKey, CatalogEntry, Server

pytestmark = pytest.mark.anyio

PASSWORD = "pw-connected-e2e-1234"
WHOAMI = use("dev", "github", "whoami")
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')
LINK = re.compile(r"sign in to 'github' first: (http://\S+/connections/connect/[\w-]+/)$")


@pytest.fixture(scope="module")
def vendor() -> Iterator[str]:
    """The OAuth-protected server, one for the module (its state: per subject)."""
    with server_process("oauth_server.py") as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def acme(make_setup, settings, vendor) -> TenantSetup:
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    setup = make_setup("acme")
    dev = setup.toolbox("dev")
    setup.fixture_server(dev, "local")
    server = Server(
        toolbox=dev,
        position=1,
        name="github",
        transport="streamable-http",
        url=f"{vendor}/mcp",
        auth="oauth_person",
    )
    server.full_clean()
    server.save()
    setup.people = {}
    for name in ("ada", "bob"):
        user = User.objects.create_user(name, password=PASSWORD, is_staff=True)
        Membership.objects.create(user=user, tenant=setup.tenant, role="admin")
        setup.people[name] = ApiKey.issue(setup.tenant, label=name, owner=user)[1]
    return setup


@asynccontextmanager
async def browser(username: str, start: str):
    """A person's browser, signed in to Workbench (the admin's login) on the way to `start`."""
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(start)
        assert response.status_code == 302, response.text
        login_url = urljoin(start, response.headers["location"])
        page = await http.get(login_url)
        csrf = dict(HIDDEN.findall(page.text))["csrfmiddlewaretoken"]
        response = await http.post(
            login_url,
            data={
                "username": username,
                "password": PASSWORD,
                "csrfmiddlewaretoken": csrf,
                "next": urlsplit(start).path
                + (f"?{urlsplit(start).query}" if urlsplit(start).query else ""),
            },
        )
        assert response.status_code == 302, response.text
        yield http


async def to_vendor(http: httpx2.AsyncClient, link: str, subject: str) -> str:
    """Open the link and approve the vendor's login as `subject`: the callback URL."""
    response = await http.get(link)
    assert response.status_code == 302, response.text
    authorize = response.headers["location"]
    response = await http.get(authorize)
    assert response.status_code == 302, response.text
    response = await http.get(response.headers["location"] + f"&subject={subject}")
    assert response.status_code == 302, response.text
    return response.headers["location"]


async def sign_in(username: str, link: str, subject: str, server: str = "github") -> None:
    async with browser(username, link) as http:
        callback = await to_vendor(http, link, subject)
        page = await http.get(callback)
    assert page.status_code == 200, page.text
    assert html(texts.CONNECTED.format(server=server)) in page.text


async def call(live_gateway, key: str, arguments: dict[str, Any] = WHOAMI) -> Any:
    async with live_gateway.session(key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        return await session.call_tool("use_tool", arguments)


async def len_is(rows: Any, size: int) -> bool:
    return len(await rows()) == size


def link_of(text: str) -> str:
    found = LINK.search(text)
    assert found, text
    return found.group(1)


async def test_each_member_signs_in_and_acts_as_themself(live_gateway, acme, vendor, caplog):
    ada, bob = acme.people["ada"], acme.people["bob"]
    async with live_gateway.session(ada) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        url = opened["_incidents"]["github"]
        assert opened["_errors"] == [
            "Failed to connect to server 'github' in toolbox 'dev': "
            f"sign in to 'github' first: {url}"
        ]
        assert opened["servers_connected"] == 1
        assert {tool["server"] for tool in opened["tools"]} == {"local"}
        result = await session.call_tool("use_tool", WHOAMI)
    code, text = error_of(result)
    link = link_of(text)
    assert code == "AUTH_REQUIRED"
    assert text == (
        "Error executing tool 'whoami' in server 'github' (toolbox 'dev'): "
        f"sign in to 'github' first: {link}"
    )
    assert result.structured_content["error"]["details"] == {
        "toolbox": "dev",
        "server": "github",
        "tool": "whoami",
        "connect_url": link,
    }
    assert link != url  # one link per answer, each one-time

    await sign_in("ada", link, "ada-at-vendor")
    assert text_of(await call(live_gateway, ada)) == "ada-at-vendor"

    # Bob has not signed in: the tools are listed as Ada's connection offers them, and
    # his call asks him to sign in.
    async with live_gateway.session(bob) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        code, text = error_of(await session.call_tool("use_tool", WHOAMI))
    assert "_errors" not in opened and opened["servers_connected"] == 2
    assert [tool["name"] for tool in opened["tools"] if tool["server"] == "github"] == ["whoami"]
    assert code == "AUTH_REQUIRED"
    await sign_in("bob", link_of(text), "bob-at-vendor")
    assert text_of(await call(live_gateway, bob)) == "bob-at-vendor"
    assert text_of(await call(live_gateway, ada)) == "ada-at-vendor"
    # Whom each is connected as, when the vendor says (its token response's id_token).
    accounts = await sync_to_async(
        lambda: dict(SignIn.objects.values_list("user__username", "account"))
    )()
    assert accounts == {"ada": "ada-at-vendor", "bob": "bob-at-vendor"}

    # The tenant's own key is nobody: a per-person server is not for it.
    code, text = error_of(await call(live_gateway, acme.key))
    assert (code, text) == (
        "CONNECTION_FAILED",
        "Error executing tool 'whoami' in server 'github' (toolbox 'dev'): this server needs "
        "each person's own sign-in: call it with a personal API key or an OAuth sign-in",
    )

    # The call log says whose account each call used (never the token).
    people = {user.pk: user.username async for user in User.objects.all()}

    async def logged_as() -> set[tuple[str, str]]:
        rows = CallRecord.objects.filter(server="github", outcome="ok").values_list(
            "key_prefix", "signed_in_as"
        )
        return {item async for item in rows}

    ada_id = next(pk for pk, name in people.items() if name == "ada")
    bob_id = next(pk for pk, name in people.items() if name == "bob")
    await eventually(lambda: len_is(logged_as, 2), 10, "the call log's rows")
    assert {whose for _, whose in await logged_as()} == {f"person:{ada_id}", f"person:{bob_id}"}

    # No token in the log, the call log or the stored rows.
    rows = await sync_to_async(lambda: list(SignIn.objects.all()))()
    tokens = [row.tokens[kind] for row in rows for kind in ("access_token", "refresh_token")]
    logged = caplog.text + " ".join(
        await sync_to_async(lambda: [str(vars(r)) for r in CallRecord.objects.all()])()
    )
    assert len(tokens) == 4 and all(token not in logged for token in tokens)


async def first_link(live_gateway, key: str) -> str:
    code, text = error_of(await call(live_gateway, key))
    assert code == "AUTH_REQUIRED", text
    return link_of(text)


async def test_links_and_sign_ins_are_bound_to_their_person(live_gateway, acme):
    link = await first_link(live_gateway, acme.people["ada"])
    async with browser("bob", link) as bob:
        page = await bob.get(link)
        assert page.status_code == 403
        assert html(texts.LINK_OTHER_PERSON) in page.text
        async with browser("ada", link) as ada:
            callback = await to_vendor(ada, link, "ada-at-vendor")
            replayed = await ada.get(link)  # one-time
            assert replayed.status_code == 400
            assert html(texts.LINK_INVALID) in replayed.text
            # Ada's callback, reached by Bob (a link sent to someone else): nobody's account.
            page = await bob.get(callback)
            assert page.status_code == 403
            assert html(texts.STATE_OTHER_PERSON) in page.text
            assert (await ada.get(callback)).status_code == 200
            page = await ada.get(callback)  # the state, replayed
            assert page.status_code == 400
            assert html(texts.STATE_INVALID) in page.text
    assert text_of(await call(live_gateway, acme.people["ada"])) == "ada-at-vendor"
    code, _ = error_of(await call(live_gateway, acme.people["bob"]))
    assert code == "AUTH_REQUIRED"


@pytest.mark.parametrize("declared", [{"url": {}}, {}])
async def test_a_client_declaring_url_elicitation_gets_the_sign_in_as_one(
    live_gateway, acme, declared
):
    """2025-11-25: a client whose `initialize` declared URL elicitation gets AUTH_REQUIRED as
    a -32042 error naming the link (it may open it for the person); a client that declared
    form elicitation only gets the contract's error result."""
    key = acme.people["ada"]
    params = {**INITIALIZE_PARAMS, "capabilities": {"elicitation": declared}}
    async with httpx2.AsyncClient(timeout=60) as http:
        init = await raw_rpc(http, live_gateway.url, "initialize", params, key=key)
        sid = init.headers["mcp-session-id"]
        opened = await raw_rpc(
            http,
            live_gateway.url,
            "tools/call",
            {"name": "open_toolbox", "arguments": {"toolbox": "dev"}},
            key=key,
            session_id=sid,
        )
        assert opened.status_code == 200, opened.text
        answer = await raw_rpc(
            http,
            live_gateway.url,
            "tools/call",
            {"name": "use_tool", "arguments": WHOAMI},
            key=key,
            session_id=sid,
        )
    body = rpc_json(answer)
    text = (
        "Error executing tool 'whoami' in server 'github' (toolbox 'dev'): "
        "sign in to 'github' first: "
    )
    if not declared:
        assert body["result"]["isError"] is True
        assert body["result"]["structuredContent"]["error"]["code"] == "AUTH_REQUIRED"
        return
    error = body["error"]
    assert error["code"] == -32042
    assert error["message"].startswith(text)
    [elicitation] = error["data"]["elicitations"]
    link = link_of(error["message"])
    assert (elicitation["mode"], elicitation["url"]) == ("url", link)
    assert elicitation["message"] == error["message"] and elicitation["elicitationId"]
    assert (error["data"]["code"], error["data"]["connect_url"]) == ("AUTH_REQUIRED", link)


def html(text: str) -> str:
    return text.replace("'", "&#x27;")


async def vendor_says(vendor: str, method: str, path: str) -> dict[str, Any]:
    async with httpx2.AsyncClient() as http:
        return (await http.request(method, f"{vendor}{path}")).json()


async def revoked(vendor: str, subject: str) -> None:
    """The subject's tokens are revoked at the vendor (on the revoking thread: bounded)."""

    async def gone() -> bool:
        return (await vendor_says(vendor, "GET", f"/_tokens?subject={subject}"))["live"] == 0

    await eventually(gone, 10, f"{subject}'s tokens revoked")
    assert await gone()


@sync_to_async
def expire_access(username: str) -> None:
    """The stored access token's expiry moved to now (the vendor's still works): the next
    call must refresh first."""
    row = SignIn.objects.select_related("server__toolbox").get(user__username=username)
    row.tokens = {**row.tokens, "expires_at": time.time() - 1}
    row.save()
    versions.bump(row.server.toolbox.tenant_id)


async def test_refresh_near_expiry_and_a_refused_refresh(live_gateway, acme, vendor):
    ada = acme.people["ada"]
    await sign_in("ada", await first_link(live_gateway, ada), "ada-at-vendor")
    before = await vendor_says(vendor, "GET", "/_stats")
    await expire_access("ada")
    assert text_of(await call(live_gateway, ada)) == "ada-at-vendor"
    assert text_of(await call(live_gateway, ada)) == "ada-at-vendor"
    after = await vendor_says(vendor, "GET", "/_stats")
    assert after["refreshed"] - before["refreshed"] == 1
    assert after["refresh_refused"] == before["refresh_refused"]
    server_id = str((await SignIn.objects.aget(user__username="ada")).server_id)
    refreshes = metrics.metrics().sign_in_refreshes
    assert refreshes.labels(server_id, "ok")._value.get() == 1

    # The vendor no longer takes the refresh token: sign in again, then it works.
    await vendor_says(vendor, "POST", "/_expire_refresh?on=1")
    try:
        await expire_access("ada")
        link = await first_link(live_gateway, ada)
        row = await SignIn.objects.aget(user__username="ada")
        assert row.status == "needs_reconnect"
    finally:
        await vendor_says(vendor, "POST", "/_expire_refresh?on=0")
    await sign_in("ada", link, "ada-again")
    assert text_of(await call(live_gateway, ada)) == "ada-again"
    assert refreshes.labels(server_id, "failed")._value.get() == 1


@sync_to_async
def token_endpoint_at(username: str, url: str) -> str:
    """Move the stored sign-in's token endpoint (the vendor's, as discovered); the old one."""
    row = SignIn.objects.get(user__username=username)
    metadata = row.tokens["metadata"]
    old, metadata["token_endpoint"] = metadata["token_endpoint"], url
    row.tokens = {**row.tokens, "metadata": metadata}
    row.save()
    return old


async def test_a_refresh_while_the_vendor_is_down(live_gateway, acme, vendor):
    ada = acme.people["ada"]
    await sign_in("ada", await first_link(live_gateway, ada), "ada-down")
    endpoint = await token_endpoint_at("ada", f"http://127.0.0.1:{free_port()}/token")
    await expire_access("ada")
    code, text = error_of(await call(live_gateway, ada))
    assert (code, text) == (
        "CONNECTION_FAILED",
        "Error executing tool 'whoami' in server 'github' (toolbox 'dev'): "
        "the server's sign-in could not be reached",
    )
    row = await SignIn.objects.aget(user__username="ada")
    assert (row.status, row.refreshing_until) == ("connected", None)  # kept, claim released
    await token_endpoint_at("ada", endpoint)
    await expire_access("ada")
    assert text_of(await call(live_gateway, ada)) == "ada-down"


async def test_revoked_at_the_vendor_asks_for_a_sign_in(live_gateway, acme, vendor):
    ada = acme.people["ada"]
    await sign_in("ada", await first_link(live_gateway, ada), "ada-revoked")
    assert text_of(await call(live_gateway, ada)) == "ada-revoked"
    await vendor_says(vendor, "POST", "/_forget?subject=ada-revoked")
    code, text = error_of(await call(live_gateway, ada))  # a 401 downstream: no retry
    assert code == "AUTH_REQUIRED", text
    await sign_in("ada", link_of(text), "ada-back")
    assert text_of(await call(live_gateway, ada)) == "ada-back"


async def test_a_deactivated_user_or_tenant_loses_its_sign_ins(live_gateway, acme, vendor):
    for name in ("ada", "bob"):
        link = await first_link(live_gateway, acme.people[name])
        await sign_in(name, link, f"{name}-deactivated")
    await User.objects.filter(username="ada").aupdate(is_active=False)  # no signal: save()
    ada = await User.objects.aget(username="ada")
    await sync_to_async(ada.save)()
    await revoked(vendor, "ada-deactivated")
    assert (await vendor_says(vendor, "GET", "/_tokens?subject=bob-deactivated"))["live"] == 2
    acme.tenant.is_active = False
    await sync_to_async(acme.tenant.save)()
    await revoked(vendor, "bob-deactivated")
    assert not await SignIn.objects.aexists()


async def test_insufficient_scope_asks_for_a_sign_in(live_gateway, acme, vendor):
    ada = acme.people["ada"]
    await sign_in("ada", await first_link(live_gateway, ada), "ada-scoped")
    assert text_of(await call(live_gateway, ada)) == "ada-scoped"
    await vendor_says(vendor, "POST", "/_step_up?on=1")
    try:
        code, text = error_of(await call(live_gateway, ada))  # 403 insufficient_scope
    finally:
        await vendor_says(vendor, "POST", "/_step_up?on=0")
    assert code == "AUTH_REQUIRED", text
    row = await SignIn.objects.aget(user__username="ada")
    assert row.status == "needs_reconnect"
    await sign_in("ada", link_of(text), "ada-rescoped")
    assert text_of(await call(live_gateway, ada)) == "ada-rescoped"


async def test_a_member_gone_loses_keys_and_sign_ins(live_gateway, acme, vendor):
    ada = acme.people["ada"]
    await sign_in("ada", await first_link(live_gateway, ada), "ada-leaving")
    assert (await vendor_says(vendor, "GET", "/_tokens?subject=ada-leaving"))["live"] == 2
    await Membership.objects.filter(user__username="ada").adelete()
    assert not await SignIn.objects.filter(user__username="ada").aexists()
    # Revoked at the vendor (RFC 7009), both tokens.
    await revoked(vendor, "ada-leaving")
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            live_gateway.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Authorization": f"Bearer {ada}", "Accept": "application/json"},
        )
    assert response.status_code == 401
    assert response.json() == refusal_json(
        401, "owner_not_a_member", "The API key's owner is no longer a member of its tenant."
    )


TWO_PROCESSES = """
import sys
from django.contrib.auth.models import User
from accounts.models import Membership
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
tenant = Tenant.objects.create(slug="acme")
dev = Toolbox.objects.create(tenant=tenant, name="dev", description="dev tools")
Server.objects.create(toolbox=dev, name="local", command=sys.executable, args=[{fixture!r}])
Server.objects.create(toolbox=dev, name="github", position=1, transport="streamable-http",
                      url={url!r}, auth="oauth_person")
user = User.objects.create_user("ada", password={password!r}, is_staff=True)
Membership.objects.create(user=user, tenant=tenant, role="admin")
print(ApiKey.issue(tenant, owner=user)[1])
"""

EXPIRE = """
import time
from connections.models import SignIn
from toolboxes import versions
row = SignIn.objects.select_related("server__toolbox").get()
row.tokens = {**row.tokens, "expires_at": time.time() - 1}
row.save()
versions.bump(row.server.toolbox.tenant_id)
"""


TOKENS = """
from connections.models import SignIn
row = SignIn.objects.get()
print(row.tokens["access_token"], row.tokens["refresh_token"])
"""


@pytest.fixture
def deployment(tmp_path) -> Iterator[Deployment]:
    deployment = Deployment(tmp_path)
    deployment.migrate()
    yield deployment
    deployment.stop_all()


@pytest.mark.once
async def test_one_refresh_across_two_gateway_processes(deployment, vendor):
    """Two processes find the token due at once: one spends the one-time refresh token,
    the other waits for it; no call fails."""
    script = TWO_PROCESSES.format(fixture=FIXTURE_SERVER, url=f"{vendor}/mcp", password=PASSWORD)
    key = deployment.shell(script).strip().splitlines()[-1]
    first = LiveGateway(deployment.start_gateway("a")[1])
    second = LiveGateway(deployment.start_gateway("b")[1])
    await sign_in("ada", await first_link(first, key), "ada-two")
    assert [text_of(await call(gateway, key)) for gateway in (first, second)] == ["ada-two"] * 2
    before = await vendor_says(vendor, "GET", "/_stats")
    deployment.shell(EXPIRE)
    answers: list[str] = []

    async def one(gateway: LiveGateway) -> None:
        answers.append(text_of(await call(gateway, key)))

    async with anyio.create_task_group() as group:
        for gateway in (first, second, first, second):
            group.start_soon(one, gateway)
    after = await vendor_says(vendor, "GET", "/_stats")
    assert answers == ["ada-two"] * 4
    assert after["refreshed"] - before["refreshed"] == 1
    assert after["refresh_refused"] == before["refresh_refused"]
    tokens = deployment.shell(TOKENS).strip().splitlines()[-1].split()
    logs = "".join((deployment.workdir / f"{name}.log").read_text() for name in "ab")
    assert len(tokens) == 2 and not [token for token in tokens if token in logs]


BROKEN = {
    "lying": "the server's OAuth metadata names another resource",
    "refused": "the server's sign-in could not be reached",
    "noreg": "the server's authorization server refused to register Workbench",
    "nometa": "the server does not say how to sign in (no OAuth metadata)",
    "down": "the server's sign-in could not be reached",
}


async def test_sign_ins_that_cannot_start(live_gateway, acme, vendor, caplog):
    @sync_to_async
    def broken() -> None:
        toolbox = acme.toolbox("broken")
        for position, name in enumerate(BROKEN):
            url = (
                f"{vendor}/{name}/mcp" if name != "down" else f"http://127.0.0.1:{free_port()}/mcp"
            )
            Server.objects.create(
                toolbox=toolbox,
                name=name,
                position=position,
                transport="streamable-http",
                url=url,
                auth="oauth_person",
            )

    await broken()
    async with live_gateway.session(acme.people["ada"]) as session:
        code, _ = error_of(await session.call_tool("open_toolbox", {"toolbox": "broken"}))
        links = (await session.call_tool("open_toolbox", {"toolbox": "broken"})).structured_content
    assert code == "CONNECTION_FAILED"
    links = links["error"]["details"]["incidents"]
    assert list(links) == list(BROKEN)
    first = next(iter(links.values()))
    async with browser("ada", first) as http:
        for name, phrase in BROKEN.items():
            page = await http.get(links[name])
            assert page.status_code == 502, page.text
            assert html(texts.FAILED.format(server=name, phrase=phrase)) in page.text
    assert "egress refused" in caplog.text  # the operator's log says which address, and why


async def test_a_shared_account_serves_the_whole_tenant(live_gateway, acme, vendor):
    @sync_to_async
    def shared() -> None:
        Server.objects.create(
            toolbox=acme.tenant.toolboxes.get(name="dev"),
            name="team",
            position=2,
            transport="streamable-http",
            url=f"{vendor}/mcp",
            auth="oauth_shared",
        )

    await shared()
    team = use("dev", "team", "whoami")
    code, text = error_of(await call(live_gateway, acme.key, team))
    assert (code, text) == (
        "CONNECTION_FAILED",
        "Error executing tool 'whoami' in server 'team' (toolbox 'dev'): a tenant admin must "
        "connect this server's shared account first",
    )
    # A tenant admin connects it from "Connected accounts" (the page's one-time link).
    page_url = live_gateway.url.removesuffix("/mcp") + "/admin/connections/signin/"
    async with browser("ada", page_url) as http:
        page = await http.get(page_url)
        assert page.status_code == 200, page.text
        link = re.search(
            r'<tr id="server-\d+">\s*<td>acme</td>\s*<td>dev</td>\s*<td>team</td>'
            r'.*?href="([^"]+)"',
            page.text,
            re.S,
        ).group(1)
        callback = await to_vendor(http, link, "acme-bot")
        assert (await http.get(callback)).status_code == 200
    for key in (acme.key, acme.people["bob"]):  # the tenant's key, and a person's: the bot
        assert text_of(await call(live_gateway, key, team)) == "acme-bot"
    assert await SignIn.objects.filter(user=None).acount() == 1


async def test_client_credentials_need_no_person(live_gateway, acme, vendor):
    @sync_to_async
    def machines() -> None:
        dev = acme.tenant.toolboxes.get(name="dev")
        for position, (name, secret) in enumerate(
            [("machine", "machine-secret"), ("wrong", "not-the-secret")], start=3
        ):
            server = Server(
                toolbox=dev,
                name=name,
                position=position,
                transport="streamable-http",
                url=f"{vendor}/mcp",
                auth="client_credentials",
                oauth_client={"client_id": "machine", "client_secret": secret},
            )
            server.full_clean()
            server.save()

    await machines()
    assert text_of(await call(live_gateway, acme.key, use("dev", "machine", "whoami"))) == (
        "machine:machine"
    )
    code, text = error_of(await call(live_gateway, acme.key, use("dev", "wrong", "whoami")))
    assert (code, text) == (
        "CONNECTION_FAILED",
        "Error executing tool 'whoami' in server 'wrong' (toolbox 'dev'): "
        "the server could not be reached",
    )


@pytest.fixture
def ada_signed_in(acme) -> str:
    """An access token of ada's OAuth sign-in to acme (no browser dance: tests/accounts')."""
    from django.test import Client

    from tests.accounts.oauth_client import SignIn as OAuthSignIn

    flow = OAuthSignIn(Client())
    flow.client.force_login(User.objects.get(username="ada"))
    flow.register()
    return flow.tokens(acme.tenant.pk, [])["access_token"]


async def test_an_oauth_sign_in_is_its_member(live_gateway, acme, ada_signed_in):
    """A client signed in to Workbench with OAuth acts as its member, as a personal key."""
    code, text = error_of(await call(live_gateway, ada_signed_in))
    assert code == "AUTH_REQUIRED", text
    await sign_in("ada", link_of(text), "ada-via-oauth")
    assert text_of(await call(live_gateway, ada_signed_in)) == "ada-via-oauth"
    assert text_of(await call(live_gateway, acme.people["ada"])) == "ada-via-oauth"


async def test_a_catalog_entry_signs_its_servers_in(live_gateway, acme, vendor):
    """The operator's catalog entry says how its servers sign in (a tenant admin makes
    servers from the catalog only)."""

    @sync_to_async
    def from_the_catalog() -> None:
        entry = CatalogEntry(
            name="vendor", transport="streamable-http", url=f"{vendor}/mcp", auth="oauth_person"
        )
        entry.full_clean()
        entry.save()
        server = Server(
            toolbox=acme.tenant.toolboxes.get(name="dev"),
            name="catalogued",
            position=2,
            catalog_entry=entry,
        )
        server.full_clean()
        server.save()

    await from_the_catalog()
    whoami = use("dev", "catalogued", "whoami")
    code, text = error_of(await call(live_gateway, acme.people["ada"], whoami))
    assert code == "AUTH_REQUIRED", text
    link = re.search(r"first: (\S+)$", text).group(1)
    await sign_in("ada", link, "ada-catalogued", server="catalogued")
    assert text_of(await call(live_gateway, acme.people["ada"], whoami)) == "ada-catalogued"


DOWNSTREAM_WORKBENCH = """
import sys
from django.contrib.auth.models import User
from accounts.models import Membership
from toolboxes.models import Server, Tenant, Toolbox
tenant = Tenant.objects.create(slug="far", name="Far")
tools = Toolbox.objects.create(tenant=tenant, name="tools", description="Far tools")
Server.objects.create(toolbox=tools, name="local", command=sys.executable, args=[{fixture!r}])
carol = User.objects.create_user("carol", password={password!r}, is_staff=True)
Membership.objects.create(user=carol, tenant=tenant, role="admin")
print(tenant.pk)
"""


async def consent_at_workbench(http: httpx2.AsyncClient, authorize: str, tenant_id: str) -> str:
    """At another Workbench (the vendor here): log in as carol, consent; the callback URL."""
    response = await http.get(authorize)
    assert response.status_code == 302, response.text  # to its login
    login_url = urljoin(authorize, response.headers["location"])
    page = await http.get(login_url)
    csrf = dict(HIDDEN.findall(page.text))["csrfmiddlewaretoken"]
    response = await http.post(
        login_url,
        data={
            "username": "carol",
            "password": PASSWORD,
            "csrfmiddlewaretoken": csrf,
            "next": parse_qs(urlsplit(login_url).query)["next"][0],
        },
    )
    assert response.status_code == 302, response.text
    consent_url = urljoin(authorize, response.headers["location"])
    page = await http.get(consent_url)
    assert page.status_code == 200, page.text
    data = {**dict(HIDDEN.findall(page.text)), "tenant": tenant_id, "allow": "Allow"}
    response = await http.post(consent_url, data=data)
    assert response.status_code == 302, response.text
    return response.headers["location"]


@pytest.mark.once
async def test_another_workbench_as_the_downstream(live_gateway, acme, deployment):
    """Workbench is an OAuth authorization server itself: a member of this one connects
    their account at another, whose tools they then call through this one."""
    tenant_id = (
        deployment.shell(DOWNSTREAM_WORKBENCH.format(fixture=FIXTURE_SERVER, password=PASSWORD))
        .strip()
        .splitlines()[-1]
    )
    far = deployment.start_gateway("far")[1]

    @sync_to_async
    def far_server() -> None:
        server = Server(
            toolbox=acme.tenant.toolboxes.get(name="dev"),
            name="far",
            position=2,
            transport="streamable-http",
            url=far,
            auth="oauth_person",
        )
        server.full_clean()
        server.save()

    await far_server()
    opening = use("dev", "far", "open_toolbox", {"toolbox": "tools"})
    code, text = error_of(await call(live_gateway, acme.people["ada"], opening))
    assert code == "AUTH_REQUIRED", text
    link = re.search(r"first: (\S+)$", text).group(1)
    async with browser("ada", link) as ours, httpx2.AsyncClient(timeout=30) as theirs:
        # Workbench's own browser session and the far one's (a cookie jar each, as hosts
        # that differ only by port share cookies).
        response = await ours.get(link)
        assert response.status_code == 302, response.text
        callback = await consent_at_workbench(theirs, response.headers["location"], tenant_id)
        page = await ours.get(callback)
    assert page.status_code == 200, page.text
    opened = await call(live_gateway, acme.people["ada"], opening)
    assert '"toolbox": "tools"' in text_of(opened), text_of(opened)
