"""Admin logins: after the failure limit for one username from one address, that pair is
refused for the cool-off (django-axes); other usernames and addresses are unaffected. The
address is the connection's, X-Forwarded-For believed only from the trusted proxies: over
a real uvicorn, as `make run` starts it and as uvicorn starts by default."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from django.conf import settings
from django.contrib.auth.models import User
from django.core.asgi import get_asgi_application
from django.test import Client
from django.urls import reverse

from accounts.client_address import UNKNOWN_PEER, parse_trusted, resolve, uvicorn_proxy_flags
from tests.harness.paths import ROOT
from tests.harness.waits import wait_until

PASSWORD = "pw-correct-horse-1"


@pytest.fixture
def users(db):
    return [
        User.objects.create_user(name, password=PASSWORD, is_staff=True, is_superuser=True)
        for name in ("ann", "ben")
    ]


def attempt(username: str, password: str, address: str = "10.0.0.1"):
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": reverse("admin:index")},
    )
    return response


def test_defaults_are_ten_failures_and_fifteen_minutes():
    assert settings.WORKBENCH_LOGIN_FAILURE_LIMIT == settings.AXES_FAILURE_LIMIT == 10
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_pair_is_locked_out_after_the_limit_and_only_that_pair(users, caplog):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt("ann", "wrong").status_code == 200  # the login form again
    assert attempt("ann", PASSWORD).status_code == 302  # still below the limit
    with caplog.at_level(logging.WARNING, logger="axes"):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            attempt("ann", "wrong")
    refused = attempt("ann", PASSWORD)
    assert refused.status_code == 429
    assert "Too many failed logins for this username from your address" in refused.content.decode()
    assert any("Locking out" in record.getMessage() for record in caplog.records)
    assert attempt("ben", PASSWORD).status_code == 302  # another user, same address
    assert attempt("ann", PASSWORD, address="10.0.0.2").status_code == 302  # another address


# --- the address counted: the connection's, unless a trusted proxy says otherwise ------


@dataclass
class Served:
    """Django's ASGI app under a real uvicorn on a free loopback port, in a thread."""

    server: uvicorn.Server
    thread: threading.Thread
    url: str


@contextmanager
def served(**options: Any) -> Iterator[Served]:
    config = uvicorn.Config(
        get_asgi_application(),
        host="127.0.0.1",
        port=0,
        lifespan="off",
        log_level="warning",
        **options,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-admin", daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 20, "uvicorn to start")
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(server, thread, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "uvicorn did not stop"


def options_of(flags: list[str]) -> dict[str, Any]:
    """uvicorn.Config's options for the command-line flags `make run` passes."""
    options: dict[str, Any] = {}
    for flag in flags:
        name, _, value = flag.removeprefix("--").partition("=")
        if name == "no-proxy-headers":
            options["proxy_headers"] = False
        elif name == "proxy-headers":
            options["proxy_headers"] = True
        elif name == "forwarded-allow-ips":
            options["forwarded_allow_ips"] = value
    return options


def http_attempts(url: str, username: str, forwarded_for: list[str]) -> list[int]:
    """Failed logins over real HTTP (CSRF and all), one per X-Forwarded-For value."""
    with httpx2.Client(base_url=url, timeout=30) as http:
        page = http.get("/admin/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return [
            http.post(
                "/admin/login/",
                data={"csrfmiddlewaretoken": csrf, "username": username, "password": "wrong"},
                headers={"X-Forwarded-For": address},
            ).status_code
            for address in forwarded_for
        ]


@pytest.fixture
def live_users(transactional_db, settings):
    settings.CSRF_COOKIE_SECURE = settings.SESSION_COOKIE_SECURE = False
    settings.WORKBENCH_TRUSTED_PROXIES = []
    return User.objects.create_user("ann", password=PASSWORD, is_staff=True, is_superuser=True)


ROTATING = [f"198.51.100.{n}" for n in range(1, 13)]  # a new address for every attempt


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param([], id="uvicorn-defaults"),  # believes X-Forwarded-For from 127.0.0.1
        pytest.param(uvicorn_proxy_flags([]), id="make-run-flags"),
    ],
)
def test_a_new_forwarded_address_per_attempt_is_still_locked_out(live_users, flags):
    """The review's finding: 12 attempts, each with its own X-Forwarded-For, all got 200.
    Nobody is trusted: whatever uvicorn was told, they count as one address."""
    with served(**options_of(flags)) as live:
        statuses = http_attempts(live.url, "ann", ROTATING)
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses == [200] * (limit - 1) + [429] * (len(ROTATING) - limit + 1)


def test_a_trusted_proxys_clients_are_counted_apart(live_users, settings):
    settings.WORKBENCH_TRUSTED_PROXIES = ["127.0.0.1"]
    flags = uvicorn_proxy_flags(settings.WORKBENCH_TRUSTED_PROXIES)
    assert flags == ["--proxy-headers", "--forwarded-allow-ips=127.0.0.1"]
    limit = settings.AXES_FAILURE_LIMIT
    with served(**options_of(flags)) as live:
        one = http_attempts(live.url, "ann", ["203.0.113.7"] * (limit + 1))
        other = http_attempts(live.url, "ann", ["203.0.113.8"])
    assert one == [200] * (limit - 1) + [429, 429]
    assert other == [200]


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "counted"),
    [
        ("10.0.0.1", "", [], "10.0.0.1"),
        ("10.0.0.1", "198.51.100.1", [], "10.0.0.1"),  # the header is not believed
        ("198.51.100.1", "198.51.100.1", [], UNKNOWN_PEER),  # uvicorn believed it
        ("198.51.100.2", "1.1.1.1, 198.51.100.2:4711", [], UNKNOWN_PEER),
        ("[::1]", "[2001:db8::1]:80, ::1", [], UNKNOWN_PEER),
        ("127.0.0.1", "198.51.100.1", ["127.0.0.1"], "198.51.100.1"),
        ("127.0.0.1", "6.6.6.6, 198.51.100.1", ["127.0.0.1"], "198.51.100.1"),  # right-most
        ("127.0.0.1", "198.51.100.1, 10.1.2.3", ["127.0.0.1", "10.0.0.0/8"], "198.51.100.1"),
        ("127.0.0.1", "nonsense", ["127.0.0.1"], "127.0.0.1"),
        ("127.0.0.1", "", ["127.0.0.1"], "127.0.0.1"),
        ("198.51.100.1", "6.6.6.6", ["127.0.0.1"], "198.51.100.1"),  # not from the proxy
    ],
)
def test_resolve(peer, forwarded, trusted, counted):
    assert resolve(peer, forwarded, parse_trusted(trusted)) == counted


@pytest.mark.parametrize("entry", ["*", "proxy.internal", "10.0.0.300"])
def test_trusted_proxies_are_addresses_or_networks(entry):
    with pytest.raises(ValueError) as refused:
        parse_trusted([entry])
    assert str(refused.value) == (
        f"WORKBENCH_TRUSTED_PROXIES: '{entry}' is not an IP address or network "
        "(e.g. 127.0.0.1, 10.0.0.0/8)."
    )


def make_run_dry(tmp_path: Path, **env: str) -> str:
    """`make -n run` in an empty directory: the commands `make run` would run."""
    (tmp_path / "pyproject.toml").touch()
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()
    os.utime(tmp_path / "pyproject.toml", (0, 0))
    (tmp_path / ".env").touch()
    env_file = tmp_path / "settings.env"
    # The settings the flags are read from: nothing of the project's own (its database).
    env_file.write_text(
        f"DEBUG=true\nDATABASE_URL=sqlite:///{tmp_path}/db.sqlite3\n"
        f"WORKBENCH_STORE_DIR={tmp_path}/store\n"
    )
    clean = {k: v for k, v in os.environ.items() if k != "WORKBENCH_TRUSTED_PROXIES"}
    make_vars = [f"VENV={venv}", f"PY={sys.executable}"]
    done = subprocess.run(
        ["make", "-n", "-f", str(ROOT / "Makefile"), "-C", str(tmp_path), "run", *make_vars],
        check=True,
        capture_output=True,
        text=True,
        env={**clean, "PYTHONPATH": str(ROOT), "WORKBENCH_ENV_FILE": str(env_file), **env},
    )
    commands = done.stdout.replace("\\\n", " ").splitlines()  # continued lines joined
    [line] = [line for line in commands if "uvicorn " in line]
    return " ".join(line.split())


def test_make_run_believes_no_forwarded_header_unless_told(tmp_path):
    assert make_run_dry(tmp_path).endswith(" --no-proxy-headers")


def test_make_run_passes_the_trusted_proxies_to_uvicorn(tmp_path):
    line = make_run_dry(tmp_path, WORKBENCH_TRUSTED_PROXIES="10.0.0.5,fd00::/8")
    assert line.endswith(" --proxy-headers --forwarded-allow-ips=10.0.0.5,fd00::/8")
