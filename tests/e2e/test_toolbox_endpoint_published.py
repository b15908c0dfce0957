"""The toolbox endpoint in front of published servers: server-everything's tools with their
own annotations, a `resource_link` one of them returns read back through the endpoint, the
instructions made of the toolbox's description and the servers' own, npm's MCP Apps
example (its tool's `_meta` naming a `ui://` page that the client reads through the
endpoint), and PyPI's mcp-server-git called by its prefixed names (its filter holding)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import error_of, payload
from tests.harness.tenant_dirs import tenant_dir
from tests.harness.toolbox_world import (
    APPS,
    EVERYTHING,
    add_apps,
    add_everything,
    endpoint,
    needs_apps,
    needs_node,
)
from toolboxes.models import Server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.once_pg,
    pytest.mark.xdist_group("toolbox_endpoint_published"),
]


@pytest.fixture(scope="module")
def world(module_db) -> tuple[TenantSetup, str]:
    """acme, and the git repository its `vcs` toolbox's server is shown."""
    acme = make_tenant_setup("acme")
    add_everything(acme.toolbox("dev", "Development tools"))
    if APPS.exists():
        add_apps(acme.toolbox("apps", "Apps with pages"))
    repo = tenant_dir("acme") / "repo"  # a directory its servers may be shown
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    server = Server(
        toolbox=acme.toolbox("vcs", "Version control"),
        name="git",
        command=sys.executable,
        args=["-m", "mcp_server_git", "--repository", str(repo)],
        tool_filters=["git_status", "git_log"],
    )
    server.full_clean()
    server.save()
    return acme, str(repo)


@pytest.fixture
def acme(world) -> TenantSetup:
    return world[0].new_key()


@pytest.fixture
def dev(module_gateway) -> LiveGateway:
    return endpoint(module_gateway, "acme", "dev")


@needs_node
async def test_tools_keep_their_annotations(module_gateway, dev, acme):
    tenant = replace(module_gateway, url=module_gateway.url.rstrip("/") + "/t/acme")
    async with tenant.session(acme.key) as session:
        opened = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    async with dev.client(acme.key) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(listed) == sorted(f"everything__{entry['name']}" for entry in opened["tools"])
    links = listed["everything__get-resource-links"]
    assert links.title == "Get Resource Links Tool"
    assert links.annotations == types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


@needs_node
async def test_every_tool_is_the_servers_own_but_for_its_name(dev, acme):
    """Beside a direct stdio connection to the same server: each tool the endpoint lists
    is the server's own definition, field for field (title, description, schemas,
    annotations, icons, execution, _meta), named `everything__<tool>`. The direct client
    declares what the gateway's listing connection declares: nothing (the server offers
    the tools that use elicitation, sampling or roots only to a client that declared them:
    no one lists those)."""
    direct = StdioServerParameters(command=str(EVERYTHING), args=["stdio"])
    async with (
        stdio_client(direct) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        own = (await session.list_tools()).tools
    async with dev.session(acme.key) as session:
        served = (await session.list_tools()).tools
    assert [tool.name for tool in served] == [f"everything__{tool.name}" for tool in own]
    for mine, theirs in zip(served, own, strict=True):
        assert mine.model_dump(exclude={"name"}) == theirs.model_dump(exclude={"name"})


@needs_node
async def test_a_resource_link_of_a_result_is_read_through_the_endpoint(dev, acme):
    async with dev.session(acme.key) as session:
        result = await session.call_tool("everything__get-resource-links", {"count": 2})
        assert not result.is_error
        links = [item for item in result.content if isinstance(item, types.ResourceLink)]
        assert len(links) == 2
        for link in links:
            read = await session.read_resource(link.uri)
            assert [str(content.uri) for content in read.contents] == [str(link.uri)]


@needs_node
async def test_instructions_are_the_toolboxs_and_its_servers(dev, acme):
    async with dev.session(acme.key) as session:
        first = session.initialize_result.instructions
    async with dev.client(acme.key) as client:
        second = client.instructions
    assert first == second
    assert first.startswith("Development tools\n\n## everything\n\n")


async def own_app(uri: str) -> tuple[list[types.Tool], types.ReadResourceResult]:
    """The MCP Apps server's tools and its page, from a direct stdio connection."""
    direct = StdioServerParameters(command=str(APPS), args=["--stdio"])
    async with stdio_client(direct) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return (await session.list_tools()).tools, await session.read_resource(uri)


@needs_apps
@pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])
async def test_an_apps_tool_names_its_page_which_is_read_through_the_endpoint(
    module_gateway, acme, generation
):
    """The tool's `_meta` is the server's own (`ui.resourceUri`, and the older flat
    `ui/resourceUri`); the `ui://` page it names is read through the endpoint, the
    server's HTML unchanged; and the tool is called by its prefixed name."""
    apps = endpoint(module_gateway, "acme", "apps")
    uri = "ui://get-time/mcp-app.html"
    own_tools, own_page = await own_app(uri)
    if generation == "2025-11-25":
        async with apps.session(acme.key) as session:
            tools = (await session.list_tools()).tools
            listed = (await session.list_resources()).resources
            page = await session.read_resource(uri)
            called = await session.call_tool("apps__get-time", {})
    else:
        async with apps.client(acme.key) as client:
            tools = (await client.list_tools()).tools
            listed = (await client.list_resources()).resources
            page = await client.read_resource(uri)
            called = await client.call_tool("apps__get-time", {})
    assert [tool.name for tool in tools] == ["apps__get-time"]
    assert tools[0].meta == own_tools[0].meta
    assert tools[0].meta is not None and tools[0].meta["ui"] == {"resourceUri": uri}
    assert [str(resource.uri) for resource in listed] == [uri]
    assert page.contents == own_page.contents
    content = page.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "text/html;profile=mcp-app"
    assert content.text.startswith("<!DOCTYPE html>")
    assert not called.is_error, called


async def test_git_is_called_by_its_prefixed_names(module_gateway, world, acme):
    vcs = endpoint(module_gateway, "acme", "vcs")
    repo = world[1]
    async with vcs.session(acme.key) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        status = await session.call_tool("git__git_status", {"repo_path": repo})
        refused = await session.call_tool("git__git_add", {"repo_path": repo, "files": ["x"]})
    assert names == ["git__git_status", "git__git_log"]
    assert not status.is_error
    assert error_of(refused) == (
        "TOOL_NOT_FOUND",
        "Error executing tool: Tool 'git_add' not found in server 'git'",
    )
