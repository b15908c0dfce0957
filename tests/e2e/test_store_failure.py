"""The shared store failing is a classified error, and the gateway recovers by itself
(issue 23).

What an operator saw with Redis cut for one replica: `/mcp` answered HTTP 500, calls got
Redis' own text as their error (`Error 111 connecting to 127.0.0.1:6391. Connection
refused.`: an internal address told to a client), and minutes after Redis came back some
calls failed on pooled connections that were never checked. Here a Redis of the test's own
is stopped under a running gateway, and started again.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.e2e.test_shared_store import call, set_up
from tests.harness.deployment import Deployment
from tests.harness.net import free_port
from tests.harness.results import INITIALIZE_PARAMS, raw_rpc, refusal_reason
from tests.harness.waits import wait_until

pytestmark = [
    pytest.mark.once,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is missing"),
]

UNAVAILABLE = re.compile(
    r"the gateway's shared store is unavailable: retry shortly \(incident ([0-9a-f]{12})\)"
)


class Redis:
    """A Redis server of the test's own, on a fixed port, that keeps nothing on disk."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.workdir)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)

        def answers() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_until(answers, 10, "redis to answer")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Redis]:
    server = Redis(tmp_path)
    server.start()
    yield server
    server.stop()


def test_a_store_cut_is_a_classified_503_and_the_gateway_recovers_when_it_returns(
    own_redis: Redis, tmp_path: Path
) -> None:
    (tmp_path / "gw").mkdir()
    deployment = Deployment(tmp_path / "gw", cache_url=own_redis.url)
    try:
        deployment.migrate()
        _, _, key = set_up(deployment, "acme", "m:")
        _, url, log = deployment.start_gateway("gateway")

        async def scenario() -> None:
            async with httpx2.AsyncClient(timeout=60) as http:
                opened = await call(http, url, key, "open_toolbox", {"toolbox": "dev"})
                assert '\\"servers_connected\\": 1' in opened

                own_redis.stop()
                cut = await raw_rpc(http, url, "initialize", INITIALIZE_PARAMS, key=key)
                assert cut.status_code == 503, cut.text
                assert cut.headers["retry-after"] == "2"
                assert refusal_reason(cut, 503) == "store_unavailable"
                error = cut.json()["error"]
                found = UNAVAILABLE.fullmatch(error["message"])
                assert found, error
                assert error["data"]["incident"] == found.group(1)
                for internal in (str(own_redis.port), "127.0.0.1", "Error", "refused"):
                    assert internal not in cut.text
                logged = log.read_text()
                assert f"incident {found.group(1)} [store] the shared store is unavailable" in (
                    logged
                )
                ready = await http.get(url.removesuffix("/mcp") + "/readyz")
                assert ready.status_code == 503
                assert ready.json()["checks"] == {"database": True, "cache": False}
                # The operator is told everything: which store, what failed.
                assert f"redis 127.0.0.1:{own_redis.port}/0" in logged

                own_redis.start()  # a new Redis on the same port: pooled connections are dead
                ready = await http.get(url.removesuffix("/mcp") + "/readyz")
                assert ready.status_code == 200
                opened = await call(http, url, key, "open_toolbox", {"toolbox": "dev"})
                assert '\\"servers_connected\\": 1' in opened
                echoed = await call(
                    http,
                    url,
                    key,
                    "use_tool",
                    {
                        "tool": {"toolbox": "dev", "server": "fixture", "name": "echo"},
                        "arguments": {"text": "back"},
                    },
                )
                assert "m:back" in echoed

        anyio.run(scenario)
    finally:
        deployment.stop_all()
