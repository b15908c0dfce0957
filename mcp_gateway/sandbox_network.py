"""A sandboxed server's network: a namespace of its own, filtered by the egress policy.

Every sandbox gets a new network namespace (bubblewrap's `--unshare-net`): its loopback
is its own, and nothing of the host's (its loopback ports, the database, the shared
store, the gateway's `/metrics`, abstract Unix sockets) is reachable. A server whose
network is on gets a user-mode network through `slirp4netns` (a process of the gateway's
beside the sandbox, gone with it), and before the server runs, `nft` installs rules
inside the namespace that refuse what the egress policy refuses for remote servers:
loopback, link-local (cloud metadata), private, carrier-grade NAT, reserved and the
host's own addresses, except the networks and host names the operator allows
(`WORKBENCH_EGRESS_ALLOW`; host names are resolved at each spawn). The rules belong to
the namespace's owner (root outside), so the server, an unprivileged uid in a user
namespace of its own, cannot change them. DNS goes to slirp4netns' resolver, which
asks the host's.

Why slirp4netns: pasta (passt) cannot join a namespace when started as root (it drops
to `nobody` first); an egress proxy reaches only the programs that honour HTTP_PROXY
(Node's `fetch` does not). Measured in bench/sandbox_network.py.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc

from mcp_gateway.egress import EgressPolicy, IPAddress, refused_kind, resolve
from mcp_gateway.failures import ClassifiedFailure

logger = logging.getLogger("workbench.sandbox")

SLIRP = "slirp4netns"
NFT = "nft"
NSENTER = "nsenter"
SETUP_SECONDS = 10.0  # slirp4netns ready and the rules installed, at the most
# slirp4netns' fixed addresses inside the namespace: its router (the host's loopback,
# when that is allowed) and its DNS forwarder.
HOST_LOOPBACK = "10.0.2.2"
RESOLVER = "10.0.2.3"
RESOLV_CONF = f"# Workbench sandbox: slirp4netns' resolver\nnameserver {RESOLVER}\n"
FIX = (
    "install slirp4netns and nftables (Debian/Ubuntu: apt-get install slirp4netns nftables), "
    "or turn the server's network off"
)

# The IPv4 ranges that are not global, as egress.refused_kind sees them (Python's
# ipaddress: every address in them is refused there, and every address refused there is
# in one; tests/gateway/test_sandbox_network.py checks both ways, so the sandbox and the
# remote servers' policy agree). IPv6 is not routed at all (slirp4netns runs without it).
# 192.0.0.0/24 is refused only where every Python version refuses it (3.11.7 refuses the
# /29 and .170/31 alone); 6to4's anycast 192.88.99.0/24 is global to Python.
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


class Network:
    """slirp4netns serving one sandbox's namespace; `close` ends it (so does our exit:
    it watches a pipe whose only writer end we hold)."""

    def __init__(self, process: anyio.abc.Process, exit_fd: int) -> None:
        self.process = process
        self._exit_fd = exit_fd

    async def close(self) -> None:
        if self._exit_fd >= 0:
            os.close(self._exit_fd)
            self._exit_fd = -1
        with anyio.move_on_after(2):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            with anyio.CancelScope(shield=True):
                await self.process.wait()


async def attach(pid: int, allowed: Allowance) -> Network:
    """Give the namespace of `pid` its network and rules; raise ClassifiedFailure."""
    await _loopback_up(pid)
    ready_read, ready_write = os.pipe()
    exit_read, exit_write = os.pipe()
    argv = [SLIRP, "--configure", "--mtu=65520", "--ready-fd", str(ready_write)]
    argv += ["--exit-fd", str(exit_read)]
    if not allowed.host_loopback:
        argv.append("--disable-host-loopback")
    argv += [str(pid), "tap0"]
    try:
        process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # nobody would read it: a full pipe would stall it
            pass_fds=(ready_write, exit_read),
        )
    except OSError as exc:
        for fd in (ready_read, ready_write, exit_read, exit_write):
            os.close(fd)
        raise ClassifiedFailure(
            f"the sandbox's network could not start; {FIX}", repr(exc)
        ) from None
    os.close(ready_write)
    os.close(exit_read)
    network = Network(process, exit_write)
    try:
        with anyio.fail_after(SETUP_SECONDS):
            await _wait_ready(ready_read, process)
            await _install(pid, ruleset(allowed, host_addresses()))
    except BaseException:
        with anyio.CancelScope(shield=True):
            await network.close()
        raise
    finally:
        os.close(ready_read)
    return network


async def _loopback_up(pid: int) -> None:
    """Wait until bubblewrap has set up the namespace's loopback. It does so after it
    reports the pid and before it blocks; slirp4netns sets `lo` up too, and the two at
    once end the sandbox now and then (`bwrap: loopback: Failed RTM_NEWADDR`). Up, with
    127.0.0.1/8, the namespace routes 127.255.255.255 as a broadcast."""
    trie = f"/proc/{pid}/net/fib_trie"
    while True:
        try:
            with open(trie) as handle:
                if "127.255.255.255" in handle.read():
                    return
        except OSError as exc:
            raise ClassifiedFailure(
                "the sandbox could not start", f"its network namespace is gone: {exc!r}"
            ) from None
        await anyio.sleep(0.001)


async def _wait_ready(ready_fd: int, process: anyio.abc.Process) -> None:
    await anyio.wait_readable(ready_fd)
    if os.read(ready_fd, 1) != b"1":
        with anyio.move_on_after(1):
            await process.wait()
        raise ClassifiedFailure(
            f"the sandbox's network could not start; {FIX}",
            f"slirp4netns did not become ready (exit status {process.returncode})",
        )


async def _install(pid: int, rules: str) -> None:
    try:
        result = await anyio.run_process(
            [NSENTER, f"--net=/proc/{pid}/ns/net", NFT, "-f", "-"],
            input=rules.encode(),
            check=False,
        )
    except (OSError, anyio.BrokenResourceError, ExceptionGroup) as exc:
        # nsenter gone before it read the rules (the sandbox died meanwhile, say).
        raise ClassifiedFailure(
            f"the sandbox's network rules could not be installed; {FIX}", f"nft: {exc!r}"[:300]
        ) from None
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip()[:300]
        raise ClassifiedFailure(
            f"the sandbox's network rules could not be installed; {FIX}", f"nft: {detail}"
        )


def resolv_conf_target() -> str:
    """Where the sandbox's resolv.conf goes (the host's may be a symlink into /run)."""
    return os.path.realpath("/etc/resolv.conf")


def available() -> str | None:
    """What is missing for a filtered network, or None."""
    for program in (SLIRP, NFT, NSENTER):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    return None


__all__ = [
    "HOST_LOOPBACK",
    "RESOLV_CONF",
    "Allowance",
    "Network",
    "allowance",
    "attach",
    "available",
    "refused",
    "resolv_conf_target",
    "ruleset",
]
