"""Handing a new key to a client: shown once on a page of its own (a reload shows it no
more and makes nothing), with ready-to-paste configurations for the usual clients."""

import html
import json
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounts.models import Membership
from toolboxes.admin.keys import NEW_KEY_SESSION
from toolboxes.models import ApiKey, Server, Tenant, Toolbox

KEY_RE = re.compile(r"wb_[a-z0-9]{8}_[A-Za-z0-9_-]{43}")
# The tenant's own endpoint (a load balancer places tenants by it: issue 23).
URL = "http://testserver/mcp/t/acme"


@pytest.fixture
def tenant(db):
    return Tenant.objects.create(slug="acme", name="Acme")


def create_key(client, tenant, label="laptop"):
    data = {"tenant": tenant.pk, "label": label, "expires_at_0": "", "expires_at_1": ""}
    return client.post(reverse("admin:toolboxes_apikey_add"), data)


def configs(page: str) -> dict[str, str]:
    """The text of each client's block, by its id."""
    found = re.findall(r'<pre id="config-([a-z-]+)">(.*?)</pre>', page, re.S)
    return {slug: html.unescape(text) for slug, text in found}


def test_creating_redirects_to_a_page_that_shows_the_key_once(admin_client, tenant):
    response = create_key(admin_client, tenant)
    api_key = ApiKey.objects.get()
    handoff = reverse("admin:toolboxes_apikey_handoff", args=[api_key.pk])
    assert response.status_code == 302 and response["Location"] == handoff
    # Between the POST and the page, the session holds the key encrypted, never in clear.
    held = admin_client.session[NEW_KEY_SESSION]
    assert held["id"] == api_key.pk and not KEY_RE.search(json.dumps(held))

    first = admin_client.get(handoff)
    page = first.content.decode()
    [full_key] = set(KEY_RE.findall(page))
    assert api_key.matches(full_key)
    assert "Copy this API key now. It will not be shown again" in page
    assert "no-store" in first["Cache-Control"]
    assert NEW_KEY_SESSION not in admin_client.session

    again = admin_client.get(handoff).content.decode()  # a reload, or a second visit
    assert not KEY_RE.search(again)
    assert (
        f"The key {html.escape(str(api_key))} was shown once, when it was created, and "
        "cannot be shown again" in again
    )
    assert configs(again)["cursor"] == json.dumps(
        {
            "mcpServers": {
                "workbench": {"url": URL, "headers": {"Authorization": "Bearer <your API key>"}}
            }
        },
        indent=2,
    )
    assert ApiKey.objects.count() == 1  # nothing was created by the visits


def test_the_configurations_follow_each_clients_format(admin_client, tenant):
    create_key(admin_client, tenant)
    page = admin_client.get(
        reverse("admin:toolboxes_apikey_handoff", args=[ApiKey.objects.get().pk])
    ).content.decode()
    key = KEY_RE.search(page).group(0)
    bearer = {"Authorization": f"Bearer {key}"}
    blocks = configs(page)
    assert list(blocks) == [
        "claude-code",
        "vscode",
        "cursor",
        "windsurf",
        "gemini-cli",
        "claude-desktop",
        "python",
        "typescript",
    ]
    assert blocks["claude-code"] == (
        f'claude mcp add --transport http workbench {URL} --header "Authorization: Bearer {key}"'
    )
    assert json.loads(blocks["vscode"]) == {
        "servers": {"workbench": {"type": "http", "url": URL, "headers": bearer}}
    }
    assert json.loads(blocks["cursor"]) == {
        "mcpServers": {"workbench": {"url": URL, "headers": bearer}}
    }
    assert json.loads(blocks["windsurf"]) == {
        "mcpServers": {"workbench": {"serverUrl": URL, "headers": bearer}}
    }
    assert json.loads(blocks["gemini-cli"]) == {
        "mcpServers": {"workbench": {"httpUrl": URL, "headers": bearer}}
    }
    assert json.loads(blocks["claude-desktop"]) == {
        "mcpServers": {
            "workbench": {
                "command": "npx",
                "args": ["-y", "mcp-remote", URL, "--header", "Authorization:${AUTH_HEADER}"],
                "env": {"AUTH_HEADER": f"Bearer {key}"},
            }
        }
    }
    assert f'headers = {{"Authorization": "Bearer {key}"}}' in blocks["python"]
    assert f'streamable_http_client("{URL}", http_client=http)' in blocks["python"]
    # Long enough for a cold server (httpx2's default 5 s is not: tests/e2e/test_snippets.py).
    assert "timeout = httpx2.Timeout(30, read=300)" in blocks["python"]
    assert "httpx2.AsyncClient(headers=headers, timeout=timeout) as http" in blocks["python"]
    compile(blocks["python"], "snippet.py", "exec")  # valid Python
    assert f'new StreamableHTTPClientTransport(new URL("{URL}")' in blocks["typescript"]
    assert f'headers: {{ Authorization: "Bearer {key}" }}' in blocks["typescript"]
    assert 'data-copy-target="config-claude-code"' in page
    assert "admin_kit/copy.js" in page


def test_the_public_url_setting_wins_over_the_request(admin_client, tenant, settings):
    settings.WORKBENCH_PUBLIC_URL = "https://mcp.example.com/mcp"
    create_key(admin_client, tenant)
    page = admin_client.get(
        reverse("admin:toolboxes_apikey_handoff", args=[ApiKey.objects.get().pk])
    ).content.decode()
    assert '<code id="gateway-url">https://mcp.example.com/mcp/t/acme</code>' in page
    assert "http://testserver/mcp" not in page


def test_a_tenant_admin_makes_a_key_and_another_tenant_cannot_see_its_page(client, tenant):
    ada = User.objects.create_user("ada", password="pw-ada-1234", is_staff=True)
    Membership.objects.create(user=ada, tenant=tenant, role="admin")
    other = Tenant.objects.create(slug="globex")
    gus = User.objects.create_user("gus", password="pw-gus-1234", is_staff=True)
    Membership.objects.create(user=gus, tenant=other, role="admin")
    client.force_login(ada)
    handoff = create_key(client, tenant)["Location"]
    assert KEY_RE.search(client.get(handoff).content.decode())
    client.force_login(gus)
    assert client.get(handoff).status_code == 404


def test_a_key_waits_for_its_own_page_only(admin_client, tenant):
    create_key(admin_client, tenant, label="first")
    first = ApiKey.objects.get(label="first")
    second, _ = ApiKey.issue(tenant, label="second")
    # Another key's page shows no key and leaves the new one waiting.
    page = admin_client.get(reverse("admin:toolboxes_apikey_handoff", args=[second.pk]))
    assert not KEY_RE.search(page.content.decode())
    page = admin_client.get(reverse("admin:toolboxes_apikey_handoff", args=[first.pk]))
    assert first.matches(KEY_RE.search(page.content.decode()).group(0))


def test_the_key_page_links_to_the_configurations(admin_client, tenant):
    api_key, _ = ApiKey.issue(tenant)
    page = admin_client.get(reverse("admin:toolboxes_apikey_change", args=[api_key.pk]))
    handoff = reverse("admin:toolboxes_apikey_handoff", args=[api_key.pk])
    assert f'<a href="{handoff}">Client configurations for this key…</a>' in page.content.decode()


def test_each_toolbox_the_key_may_open_is_handed_over_as_a_server_of_its_own(admin_client, tenant):
    """The hand-off page gives each toolbox's own endpoint (a limited key: its toolboxes
    only) with the configurations of the clients that take a server's tools as their own;
    the toolbox's page gives its endpoint too."""
    dev = Toolbox.objects.create(tenant=tenant, name="dev", description="Dev")
    Toolbox.objects.create(tenant=tenant, name="ops", description="Ops")
    create_key(admin_client, tenant)
    api_key = ApiKey.objects.get()
    page = admin_client.get(reverse("admin:toolboxes_apikey_handoff", args=[api_key.pk]))
    text = page.content.decode()
    [full_key] = set(KEY_RE.findall(text))
    urls = re.findall(r'<code id="toolbox-url-([a-z]+)">([^<]+)</code>', text)
    assert urls == [("dev", f"{URL}/toolboxes/dev"), ("ops", f"{URL}/toolboxes/ops")]
    found = re.findall(r'<pre id="toolbox-dev-config-([a-z-]+)">(.*?)</pre>', text, re.S)
    dev_configs = {slug: html.unescape(body) for slug, body in found}
    assert sorted(dev_configs) == ["claude-code", "claude-desktop", "cursor", "vscode"]
    assert dev_configs["claude-code"] == (
        f"claude mcp add --transport http workbench-dev {URL}/toolboxes/dev "
        f'--header "Authorization: Bearer {full_key}"'
    )

    api_key.toolboxes.set([dev])  # limited to dev: ops is not its to open
    again = admin_client.get(reverse("admin:toolboxes_apikey_handoff", args=[api_key.pk]))
    assert re.findall(r'<code id="toolbox-url-([a-z]+)">', again.content.decode()) == ["dev"]

    toolbox_page = admin_client.get(reverse("admin:toolboxes_toolbox_change", args=[dev.pk]))
    shown = toolbox_page.content.decode()
    assert f'<code id="toolbox-endpoint-url">{URL}/toolboxes/dev</code>' in shown
    assert (
        html.escape(
            f"claude mcp add --transport http workbench-dev {URL}/toolboxes/dev "
            '--header "Authorization: Bearer <your API key>"'
        )
        in shown
    )


def test_the_toolbox_page_says_which_tools_its_endpoint_leaves_out_and_why(admin_client, tenant):
    """A `<server>__<tool>` name too long for clients, or two tools' names at once, is not
    offered by the toolbox endpoint: the toolbox's page says so, with the reason."""
    from tests.toolboxes.search_world import listed, tool

    dev = Toolbox.objects.create(tenant=tenant, name="dev", description="Dev")
    a = Server.objects.create(toolbox=dev, name="a", command="a-server")
    a_b = Server.objects.create(toolbox=dev, name="a__b", command="ab-server", position=1)
    long_name = "t" * 126
    listed(a, tool("b__c", "One"), tool("fine", "Fine"), tool(long_name, "Long"))
    listed(a_b, tool("c", "Two"))
    page = admin_client.get(reverse("admin:toolboxes_toolbox_change", args=[dev.pk]))
    found = re.search(
        r'<ul class="errorlist" id="toolbox-endpoint-left-out">(.*?)</ul>',
        page.content.decode(),
        re.S,
    )
    assert found
    lines = [html.unescape(line) for line in re.findall(r"<li>(.*?)</li>", found.group(1))]
    assert lines == [
        "Tool 'b__c' in server 'a' is not offered by the toolbox endpoint: its name there, "
        "'a__b__c', is the name of another tool of the toolbox too.",
        f"Tool '{long_name}' in server 'a' is not offered by the toolbox endpoint: its name "
        f"there, 'a__{long_name}', is longer than 128 characters.",
        "Tool 'c' in server 'a__b' is not offered by the toolbox endpoint: its name there, "
        "'a__b__c', is the name of another tool of the toolbox too.",
    ]


def test_a_toolbox_its_admin_does_not_offer_alone_is_neither_handed_over_nor_shown_served(
    admin_client, tenant
):
    """Off (on by default): the key's hand-off page leaves the toolbox out, and its page
    says its endpoint is not offered, with no configuration to paste."""
    dev = Toolbox.objects.create(tenant=tenant, name="dev", description="Dev")
    Toolbox.objects.create(tenant=tenant, name="ops", description="Ops")
    assert dev.offered_alone
    form = admin_client.get(reverse("admin:toolboxes_toolbox_change", args=[dev.pk]))
    assert 'name="offered_alone"' in form.content.decode()
    assert "offered as an mcp server of its own" in form.content.decode().lower()

    Toolbox.objects.filter(pk=dev.pk).update(offered_alone=False)
    api_key, _ = ApiKey.issue(tenant)
    page = admin_client.get(reverse("admin:toolboxes_apikey_handoff", args=[api_key.pk]))
    assert re.findall(r'<code id="toolbox-url-([a-z]+)">', page.content.decode()) == ["ops"]

    shown = admin_client.get(reverse("admin:toolboxes_toolbox_change", args=[dev.pk]))
    text = shown.content.decode()
    assert "Not offered as an MCP server of its own" in text
    assert f'<code id="toolbox-endpoint-url">{URL}/toolboxes/dev</code> answers 404' in text
    assert "claude mcp add" not in text
