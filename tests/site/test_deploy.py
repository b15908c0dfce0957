"""deploy/: the shipped load balancer configurations are valid for the programs they are
for (HAProxy's and nginx's own checks, from Debian's packages), and the unit and manifests
say what the README says (bench/replicas.py runs the HAProxy one under load)."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.harness.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
REPLICAS = {f"WORKBENCH_REPLICA_{i}": f"127.0.0.1:{8000 + i}" for i in (1, 2, 3)}

pytestmark = pytest.mark.once


@pytest.mark.skipif(
    shutil.which("haproxy") is None, reason="haproxy is missing (make loadbalancers)"
)
def test_haproxy_accepts_the_shipped_configuration(tmp_path: Path) -> None:
    env = {
        **os.environ,
        **REPLICAS,
        "WORKBENCH_LB_BIND": "127.0.0.1:8080",
        "WORKBENCH_LB_SOCKET": str(tmp_path / "admin.sock"),
    }
    done = subprocess.run(
        ["haproxy", "-c", "-f", str(DEPLOY / "haproxy.cfg")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Configuration file is valid" in done.stdout
    assert "WARNING" not in done.stderr


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is missing (make loadbalancers)")
def test_nginx_accepts_the_shipped_configuration(tmp_path: Path) -> None:
    values = {
        **REPLICAS,
        "WORKBENCH_LB_PORT": "127.0.0.1:8080",
        "WORKBENCH_NGINX_DIR": str(tmp_path),
    }
    text = (DEPLOY / "nginx.conf").read_text()
    rendered = re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], text)  # as envsubst does
    config = tmp_path / "nginx.conf"
    config.write_text(rendered)
    done = subprocess.run(
        ["nginx", "-t", "-c", str(config), "-p", str(tmp_path), "-g", "daemon off;"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr


def test_the_kubernetes_manifests_drain_within_their_grace_period() -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "workbench.yaml").read_text()))
    kinds = [document["kind"] for document in documents]
    assert kinds == ["Deployment", "PodDisruptionBudget", "Service", "Ingress"]
    pod = documents[0]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {item["name"]: item["value"] for item in container["env"]}
    graceful = int(next(a for a in container["args"] if "graceful" in a).split("=")[1])
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
    drain = float(env["WORKBENCH_DRAIN_SECONDS"])
    assert pod["terminationGracePeriodSeconds"] > pre_stop + drain + graceful
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_the_systemd_unit_stops_within_its_bound() -> None:
    unit = (DEPLOY / "systemd" / "workbench@.service").read_text()
    assert "--timeout-graceful-shutdown 30" in unit
    assert "--port %i" in unit
    assert int(re.search(r"TimeoutStopSec=(\d+)", unit).group(1)) > 5 + 30  # type: ignore[union-attr]


class _Named(http.server.BaseHTTPRequestHandler):
    """A stand-in replica: answers every request (health checks too) with its name."""

    def do_GET(self) -> None:
        name = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(name)))
        self.end_headers()
        self.wfile.write(name)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _stand_in_replicas() -> Iterator[dict[str, str]]:
    """Three named replicas on free loopback ports: WORKBENCH_REPLICA_<i> -> address."""
    servers = []
    for index in (1, 2, 3):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Named)
        server.name = f"r{index}"  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    try:
        yield {
            f"WORKBENCH_REPLICA_{index}": f"127.0.0.1:{server.server_address[1]}"
            for index, server in enumerate(servers, 1)
        }
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from env


def _replica_of(base: str, path: str) -> str:
    with _DIRECT.open(base + path, timeout=10) as answer:
        return answer.read().decode()


def _placed_alike(base: str) -> dict[str, set[str]]:
    """For each of 24 tenants, the replicas its endpoint's paths reached (one request at a
    time: the bounded-load hash moves nothing)."""
    wait_until(lambda: _answers(base), 30, "the load balancer to answer")
    return {
        slug: {
            _replica_of(base, path)
            for path in (
                f"/mcp/t/{slug}",
                f"/mcp/t/{slug}/",
                f"/mcp/t/{slug}/toolboxes/dev",
                f"/mcp/t/{slug}/toolboxes/another-one",
            )
        }
        for slug in (f"tenant-{index:02d}" for index in range(24))
    }


def _answers(base: str) -> bool:
    try:
        _replica_of(base, "/mcp")
    except OSError:
        return False
    return True


@pytest.mark.skipif(
    shutil.which("haproxy") is None, reason="haproxy is missing (make loadbalancers)"
)
def test_haproxy_places_a_toolbox_endpoint_with_its_tenant(tmp_path: Path) -> None:
    """Issue 35: `/mcp/t/<slug>/toolboxes/<toolbox>` hashes as `/mcp/t/<slug>`, so a
    toolbox endpoint's servers run on its tenant's replica (bench/replicas.py counts them
    under load, where the bounded-load hash may move a busy tenant by design)."""
    port = _free_port()
    with _stand_in_replicas() as replicas:
        env = {
            **os.environ,
            **replicas,
            "WORKBENCH_LB_BIND": f"127.0.0.1:{port}",
            "WORKBENCH_LB_SOCKET": str(tmp_path / "admin.sock"),
        }
        process = subprocess.Popen(
            ["haproxy", "-db", "-f", str(DEPLOY / "haproxy.cfg")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            placed = _placed_alike(f"http://127.0.0.1:{port}")
        finally:
            process.terminate()
            process.wait(timeout=10)
    assert {slug: len(found) for slug, found in placed.items()} == dict.fromkeys(placed, 1)
    assert len(set().union(*placed.values())) > 1  # tenants spread over the replicas


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is missing (make loadbalancers)")
def test_nginx_places_a_toolbox_endpoint_with_its_tenant(tmp_path: Path) -> None:
    port = _free_port()
    with _stand_in_replicas() as replicas:
        values = {
            **replicas,
            "WORKBENCH_LB_PORT": f"127.0.0.1:{port}",
            "WORKBENCH_NGINX_DIR": str(tmp_path),
        }
        text = (DEPLOY / "nginx.conf").read_text()
        config = tmp_path / "nginx.conf"
        config.write_text(re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], text))
        process = subprocess.Popen(
            ["nginx", "-c", str(config), "-p", str(tmp_path), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            placed = _placed_alike(f"http://127.0.0.1:{port}")
        finally:
            process.terminate()
            process.wait(timeout=10)
    assert {slug: len(found) for slug, found in placed.items()} == dict.fromkeys(placed, 1)
    assert len(set().union(*placed.values())) > 1
