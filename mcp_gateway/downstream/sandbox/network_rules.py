"""What a sandbox's network may reach: the egress policy's allowance (networks, allowed
host names resolved at each spawn) and the nftables rules installed in its namespace, the
same refusals as remote servers get (`downstream.egress`). Pure but for resolving."""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mcp_gateway.downstream.egress import EgressPolicy, IPAddress, refused_kind, resolve
from mcp_gateway.downstream.failures import ClassifiedFailure

logger = logging.getLogger("workbench.sandbox")

# slirp4netns' fixed addresses inside the namespace: its router (the host's loopback,
# when that is allowed) and its DNS forwarder.
HOST_LOOPBACK = "10.0.2.2"
RESOLVER = "10.0.2.3"

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
    """What a server may reach beyond public addresses: networks, and addresses its
    allowed host names resolve to now."""

    networks: tuple[ipaddress.IPv4Network, ...] = ()

    @property
    def host_loopback(self) -> bool:
        """The host's loopback is allowed (reached inside as HOST_LOOPBACK)."""
        return any(
            network.overlaps(ipaddress.ip_network("127.0.0.0/8")) for network in self.networks
        )


async def allowance(policy: EgressPolicy, extra: Sequence[str] = ()) -> Allowance:
    """The policy's networks (IPv4) and its host names resolved (failures skipped)."""
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
    return Allowance(tuple(dict.fromkeys(networks)))


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
    """The host's addresses to refuse (its loopback ones are the namespace's own inside)."""
    return sorted({address for address in host if not ipaddress.ip_address(address).is_loopback})


def ruleset(allowed: Allowance, host: Iterable[str] = ()) -> str:
    """The nftables rules of one sandbox's namespace (`nft -f -`). The host's own
    addresses are refused before any allowance: an allowed network that holds the host
    (its LAN, say) must not open the host's services to the server (its loopback is
    reached through HOST_LOOPBACK only, when 127.0.0.0/8 is allowed)."""
    accept = [str(network) for network in allowed.networks]
    if allowed.host_loopback:
        accept.append(HOST_LOOPBACK)
    own = _own(host)
    lines = [
        "table inet workbench {",
        "  chain output {",
        "    type filter hook output priority 0; policy accept;",
        '    oifname "lo" accept',
        f"    ip daddr {RESOLVER} udp dport 53 accept",
        f"    ip daddr {RESOLVER} tcp dport 53 accept",
    ]
    if own:
        lines.append(
            f"    ip daddr {{ {', '.join(own)} }} counter reject with icmp type admin-prohibited"
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


def refused(ip: IPAddress, allowed: Allowance, host: Iterable[str] | None = None) -> bool:
    """What the rules do with one address a server connects to (`host`: the host's own
    addresses, by default this host's), for tests and the admin's explanations."""
    if isinstance(ip, ipaddress.IPv6Address):
        return True
    if str(ip) in _own(host_addresses() if host is None else host):
        return True
    if str(ip) == HOST_LOOPBACK:  # slirp4netns forwards it only when allowed
        return not allowed.host_loopback
    if any(ip in network for network in allowed.networks):
        return False
    return refused_kind(ip) is not None
