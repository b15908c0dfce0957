"""Whose address a login attempt comes from: the one django-axes counts failures by.

`X-Forwarded-For` is whatever a client writes, so it is believed only from the proxies the
operator lists in WORKBENCH_TRUSTED_PROXIES (none by default): otherwise an attacker who
sends a new address with every attempt is never locked out. uvicorn must agree, as it
rewrites the connection's address from that header itself (by default for connections
from 127.0.0.1): `uvicorn_proxy_flags` gives the flags that make it (`make run` passes
them; `python -m accounts.client_address` prints them).

When no proxy is trusted and the address still came out of the header (a uvicorn started
without those flags), the real peer is unknown: such attempts are all counted under
UNKNOWN_PEER, so rotating the header gains nothing.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from typing import Any

from django.conf import settings

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
UNKNOWN_PEER = "0.0.0.0"


def parse_trusted(entries: Iterable[str]) -> list[IpNetwork]:
    """WORKBENCH_TRUSTED_PROXIES as networks; anything but an address or a network (a `*`,
    a host name) is refused: trusting a proxy is naming it."""
    networks: list[IpNetwork] = []
    for entry in (item.strip() for item in entries):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"WORKBENCH_TRUSTED_PROXIES: '{entry}' is not an IP address or network "
                "(e.g. 127.0.0.1, 10.0.0.0/8)."
            ) from None
    return networks


def _address(value: str) -> IpAddress | None:
    """An address as X-Forwarded-For or REMOTE_ADDR spells it (`[::1]:80`, `1.2.3.4:5`)."""
    value = value.strip()
    if value.startswith("["):
        value = value[1 : value.find("]")] if "]" in value else value
    elif value.count(":") == 1:
        value = value.split(":", 1)[0]
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _trusted(address: IpAddress | None, networks: list[IpNetwork]) -> bool:
    return address is not None and any(address in network for network in networks)


def resolve(peer: str | None, forwarded_for: str, networks: list[IpNetwork]) -> str | None:
    """The client's address, from the connection's (`peer`) and X-Forwarded-For."""
    hops = [_address(item) for item in forwarded_for.split(",")] if forwarded_for else []
    peer_address = _address(peer or "")
    if not networks:
        # Nobody is trusted: a peer that appears in the header was taken from it.
        if peer_address is not None and peer_address in hops:
            return UNKNOWN_PEER
        return peer
    if not _trusted(peer_address, networks):
        return peer  # a client, or uvicorn already resolved the header as we would
    for hop in reversed(hops):  # each proxy appends: the first untrusted one from the right
        if hop is None:
            return peer  # a garbled header: count by the proxy
        if not _trusted(hop, networks):
            return str(hop)
    return peer


def client_ip(request: Any) -> str | None:
    """AXES_CLIENT_IP_CALLABLE."""
    return resolve(
        request.META.get("REMOTE_ADDR"),
        request.META.get("HTTP_X_FORWARDED_FOR", ""),
        parse_trusted(settings.WORKBENCH_TRUSTED_PROXIES),
    )


def uvicorn_proxy_flags(trusted: Iterable[str]) -> list[str]:
    """uvicorn's options that make it believe forwarded headers from exactly these."""
    networks = parse_trusted(trusted)
    if not networks:
        return ["--no-proxy-headers"]
    named = [
        str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)
        for net in networks
    ]
    return ["--proxy-headers", "--forwarded-allow-ips=" + ",".join(named)]


def main() -> None:
    """Print the flags for this deployment's settings (the env file included)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench_site.settings")
    print(" ".join(uvicorn_proxy_flags(settings.WORKBENCH_TRUSTED_PROXIES)))


if __name__ == "__main__":
    main()
