"""A sandboxed server's network, end to end through /mcp (issues 20 and 31): with the
network on (the default) the hostile server reaches none of the host's services (the
gateway's port, Redis, PostgreSQL, a listener of the test's, the host's own address, the
host's loopback as 10.0.2.2) nor cloud metadata, each refused at once rather than left to
time out; a test host in a network namespace of the test's own is reached only when
WORKBENCH_SANDBOX_EGRESS_ALLOW or the server's own allowance names its network; no
allowance opens the host's loopback (not the remote servers' WORKBENCH_EGRESS_ALLOW, not
an allowance covering 127.0.0.0/8): only the ports an operator names on the server, each
alone; with the network off nothing is reached. One gateway and one tenant for the
module; six sandboxes."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator

import pytest

from mcp_gateway.downstream.sandbox.network_rules import HOST_LOOPBACK
from tests.harness import netns
from tests.harness.live import LiveGateway, TenantSetup, make_tenant_setup
from tests.harness.results import payload, text_of, use

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg, pytest.mark.xdist_group("sandbox_net")]

METADATA = ("169.254.169.254", 80)
REDIS, POSTGRESQL = 6379, 5432
REFUSED = "EHOSTUNREACH"  # the namespace's rules: reject with icmp admin-prohibited
NOTHING_THERE = "ECONNREFUSED"  # the namespace's own loopback, where nothing listens
NO_ROUTE = "ENETUNREACH"  # network off: loopback is all there is


@pytest.fixture(scope="module")
def test_host() -> Iterator[netns.TestHost]:
    reason = netns.unavailable()
    if reason:
        pytest.skip(f"no test host can be made: {reason}")
    with netns.test_host() as host:
        yield host


@pytest.fixture(scope="module")
def world(module_db, test_host, listener) -> TenantSetup:
    """One hostile server per case, each in a toolbox of its own (a connection is kept per
    server, and the gateway's allowance is read when the sandbox starts)."""
    setup = make_tenant_setup("net")
    cases = {
        "refused": {},
        "sandboxes-allow": {},
        "server-allows": {"egress_allow": [test_host.network, "127.0.0.0/8"]},
        "off": {"network": False},
        "remote-loopback": {},
        "host-port": {"host_ports": [f"127.0.0.1:{listener}"]},
    }
    for toolbox, fields in cases.items():
        setup.hostile_server(toolbox, **fields)
    return setup


@pytest.fixture
def live_gateway(module_gateway) -> LiveGateway:
    return module_gateway


@pytest.fixture
def key(world) -> str:
    """The module's tenant, with a key no other test used."""
    return world.new_key().key


@pytest.fixture(scope="module")
def listener() -> Iterator[int]:
    """A listener of the test's on every host address (loopback and the host's own)."""
    with socket.create_server(("0.0.0.0", 0)) as server:
        yield server.getsockname()[1]


def host_address() -> str | None:
    """The host's own non-loopback address (not a test host's side of a veth)."""
    shown = subprocess.run(
        ["ip", "-j", "-4", "addr", "show", "scope", "global"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    for entry in json.loads(shown.stdout or "[]"):
        for info in entry.get("addr_info", []):
            if not entry.get("ifname", "").startswith("wbh"):
                return info["local"]
    return None


def reachable_from_here(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(3)
        return sock.connect_ex((host, port)) == 0


async def connect(live_gateway: LiveGateway, key: str, toolbox: str, targets: list) -> dict:
    async with live_gateway.session(key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": toolbox}))
        result = await session.call_tool(
            "use_tool", use(toolbox, "hostile", "connect", {"targets": targets, "timeout": 5})
        )
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def gateway_port(live_gateway: LiveGateway) -> int:
    return int(live_gateway.url.split(":")[2].split("/")[0])


async def test_with_the_network_on_the_hosts_services_and_metadata_are_refused(
    live_gateway, key, settings, listener, test_host
):
    settings.WORKBENCH_EGRESS_ALLOW = ["127.0.0.0/8"]  # remote servers' alone: moot here
    gateway = gateway_port(live_gateway)
    own = host_address()
    # The controls: each is there to be reached, from the host.
    assert reachable_from_here("127.0.0.1", gateway)
    assert reachable_from_here("127.0.0.1", listener)
    assert reachable_from_here(test_host.address, test_host.port)
    expected = {
        f"127.0.0.1:{port}": NOTHING_THERE for port in (gateway, REDIS, POSTGRESQL, listener)
    }
    expected |= {
        f"{HOST_LOOPBACK}:{port}": REFUSED for port in (gateway, REDIS, POSTGRESQL, listener)
    }
    expected |= {f"{METADATA[0]}:{METADATA[1]}": REFUSED}
    expected |= {f"{test_host.address}:{test_host.port}": REFUSED}
    if own is not None:
        assert reachable_from_here(own, listener)
        expected |= {f"{own}:{listener}": REFUSED}
    targets = [target.rsplit(":", 1) for target in expected]

    found = await connect(live_gateway, key, "refused", targets)

    assert found == expected


async def test_a_test_host_is_reached_when_the_sandboxes_allowance_names_its_network(
    live_gateway, key, settings, listener, test_host
):
    # The host's loopback too: it opens no port of the host's (only host ports do).
    settings.WORKBENCH_SANDBOX_EGRESS_ALLOW = [test_host.network, "127.0.0.1/32"]
    own = host_address()
    targets = [[test_host.address, test_host.port], [HOST_LOOPBACK, listener], list(METADATA)]
    targets += [[own, listener]] if own else []

    found = await connect(live_gateway, key, "sandboxes-allow", targets)

    expected = {
        f"{test_host.address}:{test_host.port}": "connected",
        f"{HOST_LOOPBACK}:{listener}": REFUSED,
        f"{METADATA[0]}:{METADATA[1]}": REFUSED,
    }
    assert found == expected | ({f"{own}:{listener}": REFUSED} if own else {})


async def test_a_test_host_is_reached_when_the_servers_own_allowance_names_its_network(
    live_gateway, key, settings, listener, test_host
):
    # Its allowance names 127.0.0.0/8 too: no port of the host's for that.
    targets = [[test_host.address, test_host.port], [HOST_LOOPBACK, listener], list(METADATA)]

    found = await connect(live_gateway, key, "server-allows", targets)

    assert found == {
        f"{test_host.address}:{test_host.port}": "connected",
        f"{HOST_LOOPBACK}:{listener}": REFUSED,
        f"{METADATA[0]}:{METADATA[1]}": REFUSED,
    }


async def test_with_the_network_off_nothing_is_reached(
    live_gateway, key, settings, listener, test_host
):
    settings.WORKBENCH_SANDBOX_EGRESS_ALLOW = [test_host.network]  # moot: no network
    gateway = gateway_port(live_gateway)
    targets = [
        ["127.0.0.1", gateway],
        [test_host.address, test_host.port],
        [HOST_LOOPBACK, listener],
        list(METADATA),
    ]

    found = await connect(live_gateway, key, "off", targets)

    assert found == {
        f"127.0.0.1:{gateway}": NOTHING_THERE,
        f"{test_host.address}:{test_host.port}": NO_ROUTE,
        f"{HOST_LOOPBACK}:{listener}": NO_ROUTE,
        f"{METADATA[0]}:{METADATA[1]}": NO_ROUTE,
    }


async def test_the_remote_servers_loopback_allowance_opens_no_host_port_to_a_sandbox(
    live_gateway, key, settings, listener
):
    """Issue 31, finding 4: an operator allows the host's loopback to reach one local
    remote server; a hostile stdio server (another tenant's, any tenant's) tries the
    gateway's port, Redis and PostgreSQL through slirp4netns' 10.0.2.2."""
    settings.WORKBENCH_EGRESS_ALLOW = ["127.0.0.1/32"]
    gateway = gateway_port(live_gateway)
    ports = (gateway, REDIS, POSTGRESQL, listener)
    assert all(reachable_from_here("127.0.0.1", port) for port in ports)  # there to be reached
    targets = [[HOST_LOOPBACK, port] for port in ports]

    found = await connect(live_gateway, key, "remote-loopback", targets)

    assert found == {f"{HOST_LOOPBACK}:{port}": REFUSED for port in ports}


async def test_a_host_port_named_on_the_server_is_reached_and_no_other(
    live_gateway, key, settings, listener
):
    """The operator's way to a local service: its port, named on the server. The rest of
    the host's loopback stays out of reach, whatever the allowances."""
    settings.WORKBENCH_EGRESS_ALLOW = ["127.0.0.0/8"]
    settings.WORKBENCH_SANDBOX_EGRESS_ALLOW = ["127.0.0.0/8", "10.0.0.0/8"]
    gateway = gateway_port(live_gateway)
    targets = [[HOST_LOOPBACK, port] for port in (listener, gateway, REDIS, POSTGRESQL)]

    found = await connect(live_gateway, key, "host-port", targets)

    assert found == {
        f"{HOST_LOOPBACK}:{listener}": "connected",
        f"{HOST_LOOPBACK}:{gateway}": REFUSED,
        f"{HOST_LOOPBACK}:{REDIS}": REFUSED,
        f"{HOST_LOOPBACK}:{POSTGRESQL}": REFUSED,
    }
