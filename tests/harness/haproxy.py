"""HAProxy with the shipped configuration (deploy/haproxy.cfg) in front of gateway
replicas, and its runtime API: for the tests that need the real balancer
(tests/e2e/test_relay_input_haproxy.py) and for bench/replicas.py."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.harness.deployment import START_TIMEOUT
from tests.harness.net import free_port, listening
from tests.harness.paths import ROOT
from tests.harness.waits import wait_until

HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
BACKEND = "replicas"  # the shipped configuration's backend
MISSING = "haproxy is missing (make loadbalancers)"
# A health check's patience under a loaded machine (`haproxy(patient=True)`).
PATIENT_CHECK = "30s"
_SERVER_LINE = re.compile(r"    server r(\d+) .*\n")


def rendered(count: int, *, round_robin: bool = False, patient: bool = False) -> str:
    """The shipped configuration for `count` replicas (its `server` lines past `count`
    left out, as an operator with fewer replicas does), or with round-robin in its hash's
    stead; `patient`: see `haproxy`."""
    text = HAPROXY_CFG.read_text()
    shipped = [int(number) for number in _SERVER_LINE.findall(text)]
    assert count <= len(shipped), f"{HAPROXY_CFG} names {len(shipped)} replicas, not {count}"
    text = _SERVER_LINE.sub(lambda line: line[0] if int(line[1]) <= count else "", text)
    if patient:
        check = "    timeout check 2s\n"
        assert check in text, f"{HAPROXY_CFG} no longer says {check.strip()!r}"
        text = text.replace(check, f"    timeout check {PATIENT_CHECK}\n")
    if round_robin:
        text = text.replace("    balance uri path-only depth 3\n", "    balance roundrobin\n")
        text = text.replace("    hash-type consistent\n", "")
        text = re.sub(r"    hash-balance-factor \d+\n", "", text)
    return text


@contextmanager
def haproxy(
    workdir: Path, ports: list[int], *, round_robin: bool = False, patient: bool = False
) -> Iterator[tuple[str, Path]]:
    """HAProxy in front of the replicas on `ports` (r1, r2, ... in that order), every one
    seen up: its address and its runtime API's socket. `patient` (under a loaded machine):
    a health check may take up to PATIENT_CHECK to answer, so that a replica slowed by the
    machine is not marked down (on a loaded machine all three once were, within 8 s of
    the first sessions, and every call got HAProxy's 503); one that is gone or draining is
    marked down as fast as shipped."""
    assert shutil.which("haproxy") is not None, MISSING
    config = workdir / ("haproxy-rr.cfg" if round_robin else "haproxy.cfg")
    config.write_text(rendered(len(ports), round_robin=round_robin, patient=patient))
    port = free_port()
    sock = workdir / f"haproxy-{port}.sock"
    env = {
        **os.environ,
        "WORKBENCH_LB_BIND": f"127.0.0.1:{port}",
        "WORKBENCH_LB_SOCKET": str(sock),
        **{f"WORKBENCH_REPLICA_{i + 1}": f"127.0.0.1:{p}" for i, p in enumerate(ports)},
    }
    log = workdir / f"haproxy-{port}.log"
    process = subprocess.Popen(
        ["haproxy", "-db", "-f", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    try:
        wait_until(lambda: listening(port) or process.poll() is not None, START_TIMEOUT, "haproxy")
        if process.poll() is not None:
            raise RuntimeError(f"haproxy exited at start: {log.read_text()[-2000:]}")
        wait_until(
            lambda: all_up(sock, len(ports)), START_TIMEOUT, "haproxy to see every replica up"
        )
        yield f"http://127.0.0.1:{port}", sock
    finally:
        process.terminate()
        process.wait(timeout=10)


def runtime(sock: Path, command: str) -> str:
    """One command on HAProxy's runtime API."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        client.connect(str(sock))
        client.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def states(sock: Path) -> dict[str, str]:
    """Server name -> its operational state as HAProxy sees it (0: down, 2: up)."""
    lines = runtime(sock, f"show servers state {BACKEND}").splitlines()
    found = {}
    for line in lines[2:]:
        fields = line.split()
        if len(fields) > 5:
            found[fields[3]] = fields[5]
    return found


def all_up(sock: Path, count: int, *, ramping: bool = False) -> bool:
    """Every replica up in HAProxy (2: running), or, with `ramping`, at least taking its
    slow start's growing share (1: starting)."""
    accepted = ("1", "2") if ramping else ("2",)
    with suppress(OSError):
        found = states(sock)
        return len(found) == count and all(state in accepted for state in found.values())
    return False


def server_stats(sock: Path) -> dict[str, dict[str, str]]:
    """Server name -> its row of `show stat` (`stot`: the sessions HAProxy sent it,
    health checks apart; `throttle`: its slow start's share, while it ramps up)."""
    lines = runtime(sock, "show stat").splitlines()
    header = lines[0].lstrip("# ").split(",")
    rows = (dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line)
    return {
        row["svname"]: row
        for row in rows
        if row.get("pxname") == BACKEND and row.get("svname") not in ("FRONTEND", "BACKEND")
    }
