"""deploy/: the shipped load balancer configurations are valid for the programs they are
for (HAProxy's and nginx's own checks, from Debian's packages), and the unit and manifests
say what the README says (bench/replicas.py runs the HAProxy one under load)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

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
