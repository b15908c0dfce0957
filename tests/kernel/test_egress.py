"""The egress policy's checks, address by address, and its pinning transport: each
request goes to the address that was checked; a redirect to a refused one is refused."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from collections.abc import Iterator

import httpx2
import pytest

from kernel import egress
from kernel.egress import EgressPolicy, EgressRefused, PinnedTransport, refused_kind
from tests.harness.net import free_port, listening
from tests.harness.paths import SERVERS
from tests.harness.waits import wait_until

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("2002:a00:1::1", "private"),  # 6to4 of 10.0.0.1
        ("::7f00:1", "loopback"),  # IPv4-compatible
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("240.0.0.1", "private"),  # reserved (Python counts it among the private)
        ("192.0.2.1", "private"),  # documentation
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_every_non_public_address_is_refused(address, kind):
    assert refused_kind(ipaddress.ip_address(address)) == kind


def test_the_operator_allows_networks_and_host_names():
    policy = EgressPolicy(["127.0.0.0/8", " Internal.Example. ", "fd00::/8", ""])
    assert policy.allows_address(ipaddress.ip_address("127.0.0.5"))
    assert policy.allows_address(ipaddress.ip_address("::ffff:127.0.0.5"))  # same address
    assert policy.allows_address(ipaddress.ip_address("fd12::1"))
    assert not policy.allows_address(ipaddress.ip_address("10.0.0.1"))
    assert policy.allows_address(ipaddress.ip_address("1.1.1.1"))  # public: always
    assert policy.hosts == frozenset({"internal.example"})


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "017700000001", "localhost"])
async def test_every_spelling_of_loopback_is_refused(host):
    with pytest.raises(EgressRefused) as refused:
        await EgressPolicy().pin(host, 80)
    assert refused.value.phrase == "the server could not be reached"
    assert "(loopback)" in refused.value.detail


async def test_the_connection_goes_to_the_checked_address(monkeypatch):
    """Resolution happens once per host: a DNS answer that changes after the check (a
    rebinding attack) does not move the connection."""
    answers = iter([[ipaddress.ip_address("127.0.0.1")], [ipaddress.ip_address("10.0.0.1")]])

    async def resolve(host, port):
        return next(answers)

    monkeypatch.setattr(egress, "resolve", resolve)
    transport = PinnedTransport(EgressPolicy(["127.0.0.0/8"]))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "http_fixture.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: listening(port), 30, "the fixture server")
        async with httpx2.AsyncClient(transport=transport) as client:
            for _ in range(2):
                response = await client.get(f"http://rebinding.example:{port}/nothing")
                assert response.status_code == 404  # the fixture server answered, twice
                assert response.request.url.host == "rebinding.example"
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.fixture
def redirector() -> Iterator[int]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(SERVERS / "redirect_server.py"),
            "--port",
            str(port),
            "--to",
            "http://169.254.169.254/latest/meta-data/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: listening(port) or process.poll() is not None, 30, "the redirector")
    yield port
    process.terminate()
    process.wait(timeout=15)


async def test_a_redirect_to_a_refused_address_is_refused(redirector):
    transport = PinnedTransport(EgressPolicy(["127.0.0.0/8"]))
    async with httpx2.AsyncClient(transport=transport, follow_redirects=True) as client:
        with pytest.raises(EgressRefused) as refused:
            await client.get(f"http://127.0.0.1:{redirector}/mcp")
    assert refused.value.detail == (
        "egress refused: 169.254.169.254 resolves to 169.254.169.254 (link-local)"
    )
