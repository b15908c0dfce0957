"""Test hosts: network namespaces a test (or a benchmark) makes itself, joined to this
host by a veth pair, with an HTTP listener inside. Traffic meant for "the network" goes
to such a host and nowhere else. Django-free: the benchmarks use it too."""

from __future__ import annotations

import ipaddress
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tests.harness.waits import wait_until

START_TIMEOUT = 20.0
BODY = b"test host\n"


@dataclass(frozen=True)
class TestHost:
    """A namespace `name` on `network`: this host is `near` in it, the test host `address`,
    serving `BODY` over HTTP at `port`."""

    __test__ = False  # not a pytest test class

    name: str
    network: str
    near: str
    address: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/"


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=False)


def unavailable() -> str | None:
    """Why this machine cannot make a test host (not root, no `ip netns`), or None."""
    name = f"wb-probe-{os.getpid()}"
    try:
        made = _ip("netns", "add", name)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`ip netns` cannot run here ({exc!r})"
    if made.returncode != 0:
        return f"`ip netns add` is not permitted here: {made.stderr.strip()[:200]}"
    _ip("netns", "del", name)
    return None


def _free_network(prefix: str) -> ipaddress.IPv4Network:
    """A /24 under `prefix` that no route of this host overlaps (another test host's)."""
    routes = json.loads(_ip("-j", "-4", "route", "show").stdout or "[]")
    used = [
        ipaddress.ip_network(route["dst"], strict=False)
        for route in routes
        if route.get("dst", "default") != "default"
    ]
    candidates = list(ipaddress.ip_network(prefix).subnets(new_prefix=24))
    random.shuffle(candidates)
    for network in candidates:
        if not any(network.overlaps(other) for other in used):
            return network
    raise RuntimeError(f"no free /24 under {prefix}")


def _answering(address: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((address, port)) == 0


@contextmanager
def test_host(prefix: str = "198.18.0.0/16") -> Iterator[TestHost]:
    """A test host on a free /24 under `prefix` (a benchmarking range, RFC 2544: never
    routed), removed with its namespace on the way out."""
    network = _free_network(prefix)
    tag = f"{os.getpid() % 10000:04d}{random.randrange(100):02d}"
    name, outside, inside = f"wb-host-{tag}", f"wbh{tag}", f"wbn{tag}"
    near, address, port = str(network[1]), str(network[2]), 8080
    steps = [
        ("netns", "add", name),
        ("link", "add", outside, "type", "veth", "peer", "name", inside),
        ("link", "set", inside, "netns", name),
        ("addr", "add", f"{near}/24", "dev", outside),
        ("link", "set", outside, "up"),
        ("-n", name, "addr", "add", f"{address}/24", "dev", inside),
        ("-n", name, "link", "set", inside, "up"),
        ("-n", name, "link", "set", "lo", "up"),
    ]
    listener: subprocess.Popen[bytes] | None = None
    try:
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                raise RuntimeError(f"ip {' '.join(step)}: {done.stderr.strip()}")
        with tempfile.TemporaryDirectory(prefix="wb-test-host-") as root:
            Path(root, "index.html").write_bytes(BODY)
            serve = [sys.executable, "-m", "http.server", str(port), "--bind", address]
            listener = subprocess.Popen(
                ["ip", "netns", "exec", name, *serve, "--directory", root],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            wait_until(
                lambda: listener.poll() is not None or _answering(address, port),
                START_TIMEOUT,
                f"the test host's listener at {address}:{port}",
            )
            assert listener.poll() is None, f"the test host's listener: {listener.returncode}"
            yield TestHost(name, str(network), near, address, port)
    finally:
        if listener is not None and listener.poll() is None:
            listener.terminate()
            with suppress(subprocess.TimeoutExpired):
                listener.wait(timeout=10)
            if listener.poll() is None:
                listener.kill()
                listener.wait(timeout=10)
        _ip("link", "del", outside)  # gone with the namespace too; here in case it was not
        _ip("netns", "del", name)
