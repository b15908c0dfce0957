"""What a sandbox's network may reach: the sandboxes' allowance (WORKBENCH_SANDBOX_EGRESS_ALLOW
and the server's own: networks, allowed host names resolved at each spawn), the host
ports an operator named on the server, and the nftables rules installed in its
namespace, the same refusals as remote servers get (`kernel.egress`). Pure but for
resolving.

The host's loopback (the gateway's port, the database, the shared store, whatever else
listens there) is reached through slirp4netns' router, HOST_LOOPBACK, and only at the
ports named on the server: no network allowed opens it, whatever it overlaps (an operator
who allows 127.0.0.1/32 to remote servers, to reach one local server, opens nothing to a
sandbox)."""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernel.classified import ClassifiedFailure
from kernel.egress import EgressPolicy, IPAddress, refused_kind, resolve

logger = logging.getLogger("workbench.sandbox")

# slirp4netns' fixed addresses inside the namespace: its router (the host's loopback,
# at the ports named) and its DNS forwarder, in its network.
HOST_LOOPBACK = "10.0.2.2"
RESOLVER = "10.0.2.3"
SLIRP_NETWORK = ipaddress.IPv4Network("10.0.2.0/24")

# The IPv4 ranges that are not global, as egress.refused_kind sees them (Python's
# ipaddress: every address in them is refused there, and every address refused there is
# in one; tests/gateway/downstream/sandbox/test_sandbox_network.py checks both ways, so the
# sandbox and the remote servers' policy agree). IPv6 is not routed at all (slirp4netns runs
# without it). 192.0.0.0/24 is refused only where every Python version refuses it (3.11.7
# refuses the /29 and .170/31 alone); 6to4's anycast 192.88.99.0/24 is global to Python.
REFUSED_IPV4 = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/29",
    "192.0.0.170/31",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/3",  # multicast 224/4 and reserved 240/4
)


@dataclass(frozen=True, slots=True)
class Allowance:
    """What a server may reach beyond public addresses: networks, addresses its allowed
    host names resolve to now, and TCP ports of the host's loopback (as HOST_LOOPBACK)."""

    networks: tuple[ipaddress.IPv4Network, ...] = ()
    host_ports: tuple[int, ...] = ()

    @property
    def host_loopback(self) -> bool:
        """slirp4netns forwards HOST_LOOPBACK to the host's loopback (the rules let only
        the ports named through)."""
        return bool(self.host_ports)


async def allowance(
    policy: EgressPolicy, extra: Sequence[str] = (), host_ports: Sequence[int] = ()
) -> Allowance:
    """The sandboxes' policy's networks (IPv4) and the server's own (`extra`), host names
    resolved (failures skipped), and the server's host ports."""
    own = EgressPolicy(extra)
    networks = [
        network
        for network in (*policy.networks, *own.networks)
        if isinstance(network, ipaddress.IPv4Network)
    ]
    for host in sorted(policy.hosts | own.hosts):
        try:
            addresses = await resolve(host, 443)
        except ClassifiedFailure as exc:
            logger.warning("sandbox egress: allowed host %s not resolved (%s)", host, exc.detail)
            continue
        for ip in addresses:
            if isinstance(ip, ipaddress.IPv4Address):
                networks.append(ipaddress.IPv4Network(ip))
    return Allowance(tuple(dict.fromkeys(networks)), tuple(sorted(set(host_ports))))


@functools.cache
def host_addresses() -> tuple[str, ...]:
    """The host's own IPv4 addresses (a server must not reach the host's services
    through them, whatever their range)."""
    try:
        found = subprocess.run(
            ["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True, timeout=5
        )
        entries = json.loads(found.stdout or "[]")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return ()
    return tuple(
        info["local"]
        for entry in entries
        for info in entry.get("addr_info", [])
        if info.get("family") == "inet" and info.get("local")
    )


def _own(host: Iterable[str]) -> list[str]:
    """The host's addresses to refuse (its loopback ones are the namespace's own inside;
    one in slirp4netns' network is refused with it)."""
    return sorted(
        {
            address
            for address in host
            if not ipaddress.ip_address(address).is_loopback
            and ipaddress.ip_address(address) not in SLIRP_NETWORK
        }
    )


def ruleset(allowed: Allowance, host: Iterable[str] = ()) -> str:
    """The nftables rules of one sandbox's namespace (`nft -f -`). slirp4netns' network
    (its router is the host's loopback) and the host's own addresses are refused before
    any allowance, so that an allowed network that holds them (10.0.0.0/8, the host's
    LAN) opens none of the host's services to the server; its loopback is reached only at
    the ports named, through HOST_LOOPBACK."""
    accept = [str(network) for network in allowed.networks]
    lines = [
        "table inet workbench {",
        "  chain output {",
        "    type filter hook output priority 0; policy accept;",
        '    oifname "lo" accept',
        f"    ip daddr {RESOLVER} udp dport 53 accept",
        f"    ip daddr {RESOLVER} tcp dport 53 accept",
    ]
    if allowed.host_ports:
        ports = ", ".join(map(str, allowed.host_ports))
        lines.append(f"    ip daddr {HOST_LOOPBACK} tcp dport {{ {ports} }} accept")
    refused_first = ", ".join([str(SLIRP_NETWORK), *_own(host)])
    lines.append(
        f"    ip daddr {{ {refused_first} }} counter reject with icmp type admin-prohibited"
    )
    if accept:
        lines.append(f"    ip daddr {{ {', '.join(accept)} }} accept")
    lines += [
        f"    ip daddr {{ {', '.join(REFUSED_IPV4)} }} counter reject with icmp type "
        "admin-prohibited",
        "    meta nfproto ipv6 counter reject with icmpv6 type admin-prohibited",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def refused(
    ip: IPAddress,
    allowed: Allowance,
    host: Iterable[str] | None = None,
    port: int | None = None,
) -> bool:
    """What the rules do with one TCP connection a server makes to `ip` (at `port`, which
    matters in slirp4netns' network alone; `host`: the host's own addresses, by default
    this host's), for tests and the admin's explanations."""
    if isinstance(ip, ipaddress.IPv6Address):
        return True
    if str(ip) == HOST_LOOPBACK:
        return port not in allowed.host_ports
    if str(ip) == RESOLVER:
        return port != 53
    if ip in SLIRP_NETWORK or str(ip) in _own(host_addresses() if host is None else host):
        return True
    if any(ip in network for network in allowed.networks):
        return False
    return refused_kind(ip) is not None
