"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm, pinned in
tests/package.json) run against a live gateway. The suite sends no credential, so it
talks to the gateway through `auth_proxy`, which adds one key's `Authorization` header
and passes everything else (Host and Origin included, which the DNS-rebinding scenario
sets) both ways unchanged, streams included."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import uvicorn
from starlette.types import Receive, Scope, Send

from tests.harness.paths import ROOT
from tests.harness.waits import wait_until

TESTS = ROOT / "tests"
SUITE = TESTS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE20_SHIM = TESTS / "conformance" / "node20.mjs"  # fs.globSync, which Node 20 lacks
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"content-length"})
SCENARIO_TIMEOUT_MS = 60_000


def suite_available() -> bool:
    return shutil.which("node") is not None and SUITE.exists()


class AuthProxy:
    """ASGI: each request forwarded to `target` with `Authorization: Bearer <key>`."""

    def __init__(self, target: str, key: str) -> None:
        self.target = target.rstrip("/")
        self.key = key
        self.http: httpx2.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self.http is None:
            self.http = httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=300))
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        # A value's surrounding whitespace is no part of it (RFC 9110, 5.5); httpx2 refuses
        # to send it, so it goes stripped (the header-validation scenario sends some).
        headers = [
            (k.decode("latin-1"), v.decode("latin-1").strip(" \t"))
            for k, v in scope["headers"]
            if k not in HOP_BY_HOP and k != b"authorization"
        ]
        headers.append(("Authorization", f"Bearer {self.key}"))
        query = scope.get("query_string", b"").decode()
        url = self.target + scope["path"] + (f"?{query}" if query else "")
        request = self.http.build_request(scope["method"], url, headers=headers, content=body)
        response = await self.http.send(request, stream=True)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k.encode("latin-1"), v.encode("latin-1"))
                        for k, v in response.headers.multi_items()
                        if k.encode("latin-1").lower() not in HOP_BY_HOP
                    ],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


@contextmanager
def auth_proxy(target: str, key: str) -> Iterator[str]:
    """A proxy on a free loopback port in a thread of its own; yields its base URL."""
    config = uvicorn.Config(
        AuthProxy(target, key), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 20, "the proxy to start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    failures: tuple[str, ...]  # "<check id>: <error>" of each failed check
    checks: int

    @property
    def passed(self) -> bool:
        return self.checks > 0 and not self.failures


def run_scenario(url: str, scenario: str, spec_version: str) -> ScenarioResult:
    """One server scenario at one protocol revision; its checks read from its results."""
    with tempfile.TemporaryDirectory() as out:
        command = [
            "node",
            "--import",
            str(NODE20_SHIM),
            str(SUITE),
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            "--spec-version",
            spec_version,
            "--timeout",
            str(SCENARIO_TIMEOUT_MS),
            "-o",
            out,
        ]
        subprocess.run(
            command, cwd=TESTS, capture_output=True, timeout=SCENARIO_TIMEOUT_MS / 1000 + 60
        )
        checks = [
            check
            for found in Path(out).glob("**/checks.json")
            for check in json.loads(found.read_text())
        ]
    failures = tuple(
        f"{check['id']}: {check.get('errorMessage') or check.get('details')}"
        for check in checks
        if check.get("status") == "FAILURE"
    )
    return ScenarioResult(scenario, failures, len(checks))
