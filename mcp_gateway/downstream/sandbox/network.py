"""A sandboxed server's network: a namespace of its own, filtered by the egress policy.

Every sandbox gets a new network namespace (bubblewrap's `--unshare-net`): its loopback
is its own, and nothing of the host's (its loopback ports, the database, the shared
store, the gateway's `/metrics`, abstract Unix sockets) is reachable. A server whose
network is on gets a user-mode network through `slirp4netns` (a process of the gateway's
beside the sandbox, gone with it), and before the server runs, `nft` installs rules
inside the namespace that refuse what the egress policy refuses for remote servers:
loopback, link-local (cloud metadata), private, carrier-grade NAT, reserved and the
host's own addresses, except the networks and host names the operator allows sandboxes
(`WORKBENCH_SANDBOX_EGRESS_ALLOW` and the server's own; host names are resolved at each
spawn). The host's loopback is reached only at the ports an operator named on the
server (`network_rules`); without any, slirp4netns does not forward it. The rules belong to
the namespace's owner (root outside), so the server, an unprivileged uid in a user
namespace of its own, cannot change them. DNS goes to slirp4netns' resolver, which
asks the host's.

Why slirp4netns: pasta (passt) cannot join a namespace when started as root (it drops
to `nobody` first); an egress proxy reaches only the programs that honour HTTP_PROXY
(Node's `fetch` does not). Measured in bench/sandbox_network.py.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess

import anyio
import anyio.abc

from kernel.classified import ClassifiedFailure
from mcp_gateway.downstream.sandbox.network_rules import (
    RESOLVER,
    Allowance,
    host_addresses,
    ruleset,
)

logger = logging.getLogger("workbench.sandbox")

SLIRP = "slirp4netns"
NFT = "nft"
NSENTER = "nsenter"
SETUP_SECONDS = 10.0  # slirp4netns ready and the rules installed, at the most
RESOLV_CONF = f"# Workbench sandbox: slirp4netns' resolver\nnameserver {RESOLVER}\n"
FIX = (
    "install slirp4netns and nftables (Debian/Ubuntu: apt-get install slirp4netns nftables), "
    "or turn the server's network off"
)


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
            # Cached after the first call; that one runs `ip`, off the event loop.
            host = await anyio.to_thread.run_sync(host_addresses)
            await _install(pid, ruleset(allowed, host))
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
