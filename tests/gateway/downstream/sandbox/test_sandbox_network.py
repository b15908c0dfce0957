"""The sandbox's network rules (mcp_gateway/downstream/sandbox/network.py), read off the ruleset it
writes, and checked to agree with the remote servers' egress policy (egress.refused_kind):
a range the namespace refuses is refused there, and an address refused there falls in a
range the namespace refuses. Nothing here sends traffic."""

from __future__ import annotations

import ipaddress
import random
import shutil
import subprocess

import anyio
import pytest

from kernel.classified import ClassifiedFailure
from kernel.egress import EgressPolicy, refused_kind
from mcp_gateway.downstream.sandbox import network as sandbox_network
from mcp_gateway.downstream.sandbox.network_rules import (
    HOST_LOOPBACK,
    REFUSED_IPV4,
    RESOLVER,
    Allowance,
    allowance,
    refused,
    ruleset,
)

RANGES = [ipaddress.IPv4Network(item) for item in REFUSED_IPV4]
REFUSE_ALL = (
    "    ip daddr { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, "
    "172.16.0.0/12, 192.0.0.0/29, 192.0.0.170/31, 192.0.2.0/24, 192.168.0.0/16, "
    "198.18.0.0/15, 198.51.100.0/24, 203.0.113.0/24, 224.0.0.0/3 } counter reject with icmp "
    "type admin-prohibited\n"
)
HEAD = (
    "table inet workbench {\n"
    "  chain output {\n"
    "    type filter hook output priority 0; policy accept;\n"
    '    oifname "lo" accept\n'
    "    ip daddr 10.0.2.3 udp dport 53 accept\n"
    "    ip daddr 10.0.2.3 tcp dport 53 accept\n"
)
TAIL = "    meta nfproto ipv6 counter reject with icmpv6 type admin-prohibited\n  }\n}\n"
# slirp4netns' network (its router is the host's loopback), before any allowance.
SLIRP = "    ip daddr { 10.0.2.0/24 } counter reject with icmp type admin-prohibited\n"


def networks(*items: str) -> Allowance:
    return Allowance(tuple(ipaddress.IPv4Network(item) for item in items))


def test_without_an_allowance_every_non_global_range_and_ipv6_are_refused():
    assert ruleset(Allowance(), ["127.0.0.1"]) == HEAD + SLIRP + REFUSE_ALL + TAIL


def test_the_hosts_own_addresses_are_refused_before_any_allowance():
    """An allowed LAN holding the host must not open the host's services (its loopback
    ones are the namespace's own inside, so not listed)."""
    rules = ruleset(networks("192.0.2.0/24", "198.18.7.0/24"), ["127.0.0.1", "192.0.2.2"])
    assert rules == (
        HEAD
        + "    ip daddr { 10.0.2.0/24, 192.0.2.2 } counter reject with icmp type "
        + "admin-prohibited\n"
        + "    ip daddr { 192.0.2.0/24, 198.18.7.0/24 } accept\n"
        + REFUSE_ALL
        + TAIL
    )


def test_no_allowance_opens_the_hosts_loopback():
    """Issue 31: 127.0.0.1/32 (allowed to reach one local remote server) or 10.0.0.0/8
    (which holds slirp4netns' router) opens no port of the host's loopback."""
    allowed = networks("127.0.0.1/32", "10.0.0.0/8")
    assert not allowed.host_loopback  # slirp4netns runs with --disable-host-loopback
    assert ruleset(allowed) == (
        HEAD + SLIRP + "    ip daddr { 127.0.0.1/32, 10.0.0.0/8 } accept\n" + REFUSE_ALL + TAIL
    )


def test_host_ports_let_the_hosts_loopback_in_at_those_ports_alone():
    allowed = Allowance(networks("10.0.0.0/8").networks, host_ports=(5000, 8080))
    assert allowed.host_loopback
    assert ruleset(allowed) == (
        HEAD
        + "    ip daddr 10.0.2.2 tcp dport { 5000, 8080 } accept\n"
        + SLIRP
        + "    ip daddr { 10.0.0.0/8 } accept\n"
        + REFUSE_ALL
        + TAIL
    )


def test_the_ruleset_is_one_nft_accepts(tmp_path):
    """`nft --check` reads it as written (overlapping allowances merged), touching nothing."""
    if shutil.which("nft") is None:
        pytest.skip("nft is not installed (Debian: apt-get install nftables)")
    rules = tmp_path / "rules.nft"
    allowed = networks("10.0.0.0/8", "10.1.2.3/32", "127.0.0.0/8", "0.0.0.0/0")
    allowed = Allowance(allowed.networks, host_ports=(8080, 5000))
    rules.write_text(ruleset(allowed, ["192.0.2.2", "203.0.113.9", "10.0.2.15"]))
    checked = subprocess.run(
        ["nft", "--check", "-f", str(rules)], capture_output=True, text=True, check=False
    )
    if checked.returncode != 0 and "Operation not permitted" in checked.stderr:
        pytest.skip("nft --check needs CAP_NET_ADMIN")
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("network", RANGES, ids=str)
def test_every_range_the_namespace_refuses_the_egress_policy_refuses(network):
    rng = random.Random(str(network))
    size = network.num_addresses
    picks = {0, 1, size // 2, size - 2, size - 1} | {rng.randrange(size) for _ in range(500)}
    accepted = [str(network[i]) for i in sorted(picks) if refused_kind(network[i]) is None]
    assert accepted == []


# IANA's IPv4 special-purpose address registry (and multicast), where the two policies
# could disagree: every address of the small blocks is checked, a sample of the large.
IANA_SPECIAL = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
    "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
    "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.0/24",
)  # fmt: skip


def test_every_address_the_egress_policy_refuses_is_in_a_range_the_namespace_refuses():
    rng = random.Random(20)
    sample = [rng.getrandbits(32) for _ in range(20_000)]
    for block in map(ipaddress.IPv4Network, IANA_SPECIAL):
        start, size = int(block.network_address), block.num_addresses
        if size <= 256:
            sample += range(start, start + size)
        else:
            sample += [start - 1, start, start + size - 1, start + size]
            sample += [start + rng.randrange(size) for _ in range(200)]
    outside = sorted(
        {
            str(ip)
            for ip in map(ipaddress.IPv4Address, (n % 2**32 for n in sample))
            if refused_kind(ip) is not None and not any(ip in network for network in RANGES)
        }
    )
    assert outside == []


def test_refused_says_what_the_rules_do():
    host = ["127.0.0.1", "192.0.2.2"]
    lan = networks("192.0.2.0/24")
    ip = ipaddress.ip_address
    assert refused(ip("192.0.2.2"), lan, host)  # the host itself, allowance or not
    assert not refused(ip("192.0.2.7"), lan, host)
    assert refused(ip("192.0.2.7"), Allowance(), host)
    assert refused(ip("169.254.169.254"), lan, host)
    assert not refused(ip("8.8.8.8"), Allowance(), host)  # public
    assert refused(ip("2001:4860::8888"), Allowance(), host)  # IPv6 is not routed
    assert refused(ip(HOST_LOOPBACK), networks("10.0.0.0/8"), host, 8080)
    assert refused(ip(HOST_LOOPBACK), networks("127.0.0.0/8"), host, 8080)
    assert refused(ip("10.0.2.9"), networks("10.0.0.0/8"), host)  # slirp4netns' network
    assert not refused(ip("10.0.3.9"), networks("10.0.0.0/8"), host)
    ports = Allowance(host_ports=(8080,))
    assert not refused(ip(HOST_LOOPBACK), ports, host, 8080)
    assert refused(ip(HOST_LOOPBACK), ports, host, 5432)
    assert not refused(ip(RESOLVER), Allowance(), host, 53)
    assert refused(ip(RESOLVER), Allowance(), host, 8080)


@pytest.mark.anyio
async def test_an_allowance_takes_networks_and_the_addresses_host_names_resolve_to():
    policy = EgressPolicy(["10.1.2.0/24", "::1/128", "localhost"])
    allowed = await allowance(policy, ["198.18.5.0/24"])
    assert set(map(str, allowed.networks)) == {"10.1.2.0/24", "198.18.5.0/24", "127.0.0.1/32"}
    assert not allowed.host_loopback  # localhost resolves to loopback: no port for that
    only_networks = await allowance(EgressPolicy(["10.1.2.0/24"]), host_ports=[8080, 22, 8080])
    assert [str(network) for network in only_networks.networks] == ["10.1.2.0/24"]
    assert only_networks.host_ports == (22, 8080)


def test_a_missing_program_is_named(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert sandbox_network.available() == "slirp4netns is not installed"


@pytest.mark.anyio
async def test_attaching_to_a_namespace_gone_says_the_sandbox_could_not_start():
    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(ClassifiedFailure) as caught:
        with anyio.fail_after(5):
            await sandbox_network.attach(gone.pid, Allowance())
    assert str(caught.value) == "the sandbox could not start"
    assert caught.value.detail.startswith("its network namespace is gone: FileNotFoundError")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
