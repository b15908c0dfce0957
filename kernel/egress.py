"""Where an outbound request may go: resolve, check, pin. One rule for every app that
makes one (the gateway's remote servers, accounts' sign-in providers and client metadata
documents, connected accounts' sign-ins).

An admin's URL must not reach what only the gateway can: its loopback ports, cloud
metadata at link-local addresses, private networks. Before connecting, the host is
resolved and every address it gives is checked (in whatever spelling the URL used:
decimal, hex, IPv4-mapped IPv6, NAT64 or 6to4 all resolve or unwrap to the address
checked); then the connection goes to the checked address, so DNS cannot change between
the check and the connect. Every request goes through this (`PinnedTransport`), so a
redirect to a refused address is refused too. The operator allows exceptions
(`WORKBENCH_EGRESS_ALLOW`: CIDRs and host names). Sandboxed stdio servers have an
allowance of their own (`WORKBENCH_SANDBOX_EGRESS_ALLOW`, the gateway's
`downstream.sandbox.network_rules`): the host's loopback allowed to reach one local remote
server opens nothing to them.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import anyio
import httpx2
from django.conf import settings

from kernel.classified import ClassifiedFailure

# What a client is told of any remote server it cannot reach, whatever the reason: a URL
# must not become a port scanner (the reason goes to the log).
UNREACHABLE = "the server could not be reached"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressRefused(ClassifiedFailure):
    """A remote address the policy refuses: the client hears only that the server could
    not be reached; the detail (which address, why) is for the log."""

    def __init__(self, detail: str) -> None:
        super().__init__(UNREACHABLE, f"egress refused: {detail}")


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 spelling carries (mapped, NAT64, 6to4, compatible)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour:
        return ip.sixtofour
    if int(ip) >> 32 == 0 and int(ip) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(ip))
    return None


def refused_kind(ip: IPAddress) -> str | None:
    """Why this address is not for a remote server, or None when it is public."""
    inner = embedded_ipv4(ip)
    if inner is not None:
        return refused_kind(inner)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address) and ip in CGNAT:
        return "carrier-grade NAT"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "reserved"
    return None


class EgressPolicy:
    """What the operator allows beyond public addresses: networks and host names."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        hosts: set[str] = set()
        for item in (item.strip() for item in allow):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(_host_name(item))
        self.networks = tuple(networks)
        self.hosts = frozenset(hosts)

    @classmethod
    def from_settings(cls) -> EgressPolicy:
        """Remote servers' (and the sign-in flows'): WORKBENCH_EGRESS_ALLOW."""
        return cls(settings.WORKBENCH_EGRESS_ALLOW)

    @classmethod
    def for_sandboxes(cls) -> EgressPolicy:
        """Sandboxed stdio servers': WORKBENCH_SANDBOX_EGRESS_ALLOW."""
        return cls(settings.WORKBENCH_SANDBOX_EGRESS_ALLOW)

    def allows_address(self, ip: IPAddress) -> bool:
        if refused_kind(ip) is None:
            return True
        candidates = [ip, *filter(None, [embedded_ipv4(ip)])]
        return any(
            candidate.version == network.version and candidate in network
            for candidate in candidates
            for network in self.networks
        )

    async def pin(self, host: str, port: int) -> str:
        """The checked address to connect to for host, or EgressRefused."""
        addresses = await resolve(host, port)
        if _host_name(host) not in self.hosts:
            for ip in addresses:
                if not self.allows_address(ip):
                    raise EgressRefused(f"{host} resolves to {ip} ({refused_kind(ip)})")
        return str(addresses[0])


def _host_name(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address host resolves to (an address literal, in any spelling, included)."""
    name = host.strip("[]")
    try:
        infos = await anyio.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ClassifiedFailure(UNREACHABLE, f"cannot resolve {host}: {exc}") from None
    addresses: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise ClassifiedFailure(UNREACHABLE, f"{host} resolves to no address")
    return addresses


class PinnedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that sends every request to the address checked for its host
    (the Host header and TLS SNI keep the name), checking each new host it is sent to."""

    def __init__(self, policy: EgressPolicy, inner: httpx2.AsyncBaseTransport | None = None):
        self.policy = policy
        self._inner = inner or httpx2.AsyncHTTPTransport(trust_env=False)
        self._pins: dict[tuple[str, int], str] = {}

    async def pin(self, url: httpx2.URL) -> str:
        port = url.port or (443 if url.scheme == "https" else 80)
        key = (url.host, port)
        if key not in self._pins:
            self._pins[key] = await self.policy.pin(url.host, port)
        return self._pins[key]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        host = request.url.host
        address = await self.pin(request.url)
        if address == host:
            return await self._inner.handle_async_request(request)
        # A copy for the wire: the client keeps the request it made (its URL names the host).
        headers = request.headers.copy()
        headers.setdefault("Host", request.url.netloc.decode("ascii"))
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            extensions["sni_hostname"] = host
        pinned = httpx2.Request(
            request.method,
            request.url.copy_with(host=address),
            headers=headers,
            stream=request.stream,
            extensions=extensions,
        )
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *args: Any) -> None:
        await self._inner.__aexit__(*args)
