"""The egress policy for remote servers, through /mcp: loopback (in every spelling),
link-local, private and the rest are refused unless WORKBENCH_EGRESS_ALLOW allows them;
every refused or unreachable server gets one uniform reason, the log holds the detail;
an allowed host name is connected at its checked address with its own Host header."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from tests.harness.net import free_port
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.servers import http_fixture_process, server_process

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

UNREACHABLE = "the server could not be reached"


@pytest.fixture
def http_fixture() -> Iterator[int]:
    with http_fixture_process() as port:
        yield port


def refused_urls(port: int) -> dict[str, str]:
    return {
        "loopback": f"http://127.0.0.1:{port}/mcp",
        "decimal": f"http://2130706433:{port}/mcp",
        "hex-short": f"http://0x7f.1:{port}/mcp",
        "mapped": f"http://[::ffff:127.0.0.1]:{port}/mcp",
        "ipv6-loopback": f"http://[::1]:{port}/mcp",
        "localhost": f"http://localhost:{port}/mcp",
        "metadata": "http://169.254.169.254/latest/meta-data",
        "private": "http://10.0.0.1/mcp",
        "cgnat": "http://100.64.0.1/mcp",
        "unspecified": f"http://0.0.0.0:{port}/mcp",
        "multicast": "http://224.0.0.1/mcp",
    }


async def test_non_public_addresses_are_refused_in_every_spelling(
    live_gateway, amake_setup, settings, http_fixture, caplog
):
    caplog.set_level(logging.WARNING, logger="workbench.incident")
    settings.WORKBENCH_EGRESS_ALLOW = []
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    urls = refused_urls(http_fixture)
    for position, (name, url) in enumerate(urls.items()):
        await dev.servers.acreate(
            name=name, transport="streamable-http", url=url, position=position
        )
    await dev.servers.acreate(
        name="sse", transport="sse", url=f"http://127.0.0.1:{http_fixture}/sse", position=99
    )
    async with live_gateway.session(setup.key) as session:
        result = await session.call_tool("open_toolbox", {"toolbox": "dev"})
    code, text = error_of(result)
    assert code == "CONNECTION_FAILED"
    names = [*urls, "sse"]
    assert text == "Error opening toolbox 'dev': " + "\n".join(
        f"Failed to connect to server '{name}' in toolbox 'dev': {UNREACHABLE}" for name in names
    )
    incidents = result.structured_content["error"]["details"]["incidents"]
    assert sorted(incidents) == sorted(names)
    logged = {
        name: [r.getMessage() for r in caplog.records if f"incident {incident} " in r.getMessage()]
        for name, incident in incidents.items()
    }
    assert "resolves to 127.0.0.1 (loopback)" in logged["decimal"][0]
    assert "resolves to ::ffff:7f00:1 (loopback)" in logged["mapped"][0]
    assert "resolves to 169.254.169.254 (link-local)" in logged["metadata"][0]
    assert "resolves to 100.64.0.1 (carrier-grade NAT)" in logged["cgnat"][0]
    assert "resolves to 10.0.0.1 (private)" in logged["private"][0]
    assert all("egress refused" in lines[0] for lines in logged.values())


async def test_unreachable_and_failing_remotes_get_the_same_reason(
    live_gateway, amake_setup, http_fixture
):
    """Closed port, open port that is no MCP server, an error status, a redirect to a
    refused address: one phrase, so a server URL cannot map the network behind it."""
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    with (
        server_process("redirect_server.py", "--to", "http://169.254.169.254/") as redirect,
    ):
        targets = {
            "closed": f"http://127.0.0.1:{free_port()}/mcp",
            "wrong-path": f"http://127.0.0.1:{http_fixture}/nothing-here",
            "redirect": f"http://127.0.0.1:{redirect}/mcp",
        }
        for position, (name, url) in enumerate(targets.items()):
            await dev.servers.acreate(
                name=name, transport="streamable-http", url=url, position=position
            )
        async with live_gateway.session(setup.key) as session:
            code, text = error_of(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
    assert code == "CONNECTION_FAILED"
    assert text == "Error opening toolbox 'dev': " + "\n".join(
        f"Failed to connect to server '{name}' in toolbox 'dev': {UNREACHABLE}" for name in targets
    )


async def test_an_allowed_host_name_is_reached_at_its_checked_address(
    live_gateway, amake_setup, settings, http_fixture
):
    settings.WORKBENCH_EGRESS_ALLOW = ["localhost"]
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await dev.servers.acreate(
        name="named", transport="streamable-http", url=f"http://localhost:{http_fixture}/mcp"
    )
    async with live_gateway.session(setup.key) as session:
        data = payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        seen = await session.call_tool("use_tool", use("dev", "named", "headers"))
    assert data["servers_connected"] == 1
    # The request went to the pinned address, but the server saw its own name.
    assert json.loads(text_of(seen))["host"] == f"localhost:{http_fixture}"
