"""A 2026-07-28 client's answer to a server's question, through HAProxy with the shipped
configuration (deploy/haproxy.cfg) in front of two replicas (issue 34): the replica that
asked is stopped, and the retry, which HAProxy sends to the other, reaches the server
there (the gateway's sealed `requestState` opens in any process of the installation). A
state the gateway did not seal is refused, whichever replica gets it."""

from __future__ import annotations

import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

import anyio
import mcp_types as types
import pytest

from tests.e2e.test_relay_input import REFUSED_STATE
from tests.e2e.test_relay_input_workers import ANSWER, SETUP, ask_probe, open_dev
from tests.harness.deployment import START_TIMEOUT, Deployment
from tests.harness.haproxy import MISSING, haproxy, server_stats, states
from tests.harness.net import free_port
from tests.harness.paths import RELAY_PROBE
from tests.harness.procs import STOP_TIMEOUT
from tests.harness.results import error_of, text_of
from tests.harness.waits import wait_until

# Gateways as processes on a SQLite file of their own: run once (the SQLite pass).
pytestmark = [
    pytest.mark.once,
    pytest.mark.skipif(shutil.which("haproxy") is None, reason=MISSING),
    pytest.mark.xdist_group("relay_input_haproxy"),  # one worker: one installation
]

REPLICAS = ("r1", "r2")  # as the shipped configuration names them
CALL_BOUND = 120.0  # a bound on each round of calls, on a loaded machine; never a pace
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Installation:
    """Two replicas of one installation (one database, one store, one set of keys)
    behind HAProxy: the tenant's endpoint through it, its runtime socket, the replicas."""

    deployment: Deployment
    url: str
    sock: Path
    key: str


@pytest.fixture(scope="module")
def installation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    """One for the module's tests (two gateways and HAProxy take a while to start): a
    forged state is refused whichever replica answers, so the order of the tests, one of
    which stops a replica, does not matter."""
    workdir = tmp_path_factory.mktemp("haproxy")
    deployment = Deployment(workdir)
    deployment.migrate()
    try:
        key = deployment.shell(SETUP.format(python=sys.executable, probe=RELAY_PROBE)).split()[-1]
        ports = [free_port() for _ in REPLICAS]
        for name, port in zip(REPLICAS, ports, strict=True):
            deployment.start_gateway(name, port=port)
        # Patient health checks: on a loaded machine a replica's /readyz once took over the
        # shipped 2 s, and HAProxy marked both down (a stopped one is still down at once).
        with haproxy(workdir, ports, patient=True) as (base, sock):
            anyio.run(open_dev, f"{base}/mcp/t/asking", key)
            yield Installation(deployment, f"{base}/mcp/t/asking", sock, key)
    finally:
        deployment.stop_all()


def sessions(sock: Path) -> dict[str, int]:
    """Replica -> the sessions HAProxy has sent it."""
    return {name: int(row["stot"]) for name, row in server_stats(sock).items()}


def bounded(call: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call` run to its end, within CALL_BOUND."""

    async def run() -> T:
        with anyio.fail_after(CALL_BOUND):
            return await call(*args, **kwargs)

    return anyio.run(run)


def test_a_forged_request_state_through_haproxy_is_refused(installation: Installation) -> None:
    url, key = installation.url, installation.key
    asked = bounded(ask_probe, url, key)
    assert isinstance(asked, types.InputRequiredResult), asked
    genuine = asked.request_state
    assert genuine
    # The server's own state (no seal), and the gateway's altered.
    for forged in ("probe-state", genuine[::-1]):
        refused = bounded(
            ask_probe, url, key, input_responses={"ask": ANSWER}, request_state=forged
        )
        assert error_of(refused) == ("INVALID_PARAMETERS", REFUSED_STATE)


def test_a_retry_through_haproxy_reaches_the_server_on_the_other_replica(
    installation: Installation,
) -> None:
    url, key, sock = installation.url, installation.key, installation.sock
    asked = bounded(ask_probe, url, key)
    assert isinstance(asked, types.InputRequiredResult), asked
    # The tenant's path hashes onto one replica: every session so far went there.
    placed = sessions(sock)
    (asking,) = [name for name, count in placed.items() if count]
    (other,) = [name for name in REPLICAS if name != asking]

    process = installation.deployment.processes[REPLICAS.index(asking)]
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=STOP_TIMEOUT)
    wait_until(lambda: states(sock)[asking] == "0", START_TIMEOUT, f"haproxy to mark {asking} down")

    answered = bounded(
        ask_probe, url, key, input_responses={"ask": ANSWER}, request_state=asked.request_state
    )
    assert isinstance(answered, types.CallToolResult), answered
    assert text_of(answered) == 'answered {"action":"accept","content":{"name":"Ada"}}'
    assert sessions(sock)[other] > 0  # HAProxy sent the retry to the other replica
