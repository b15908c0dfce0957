"""`make run`'s HTTP protocol: uvicorn's httptools one, with h11's bound on a request's head
(a head past it is refused as h11 refuses it, and the connection closed)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.harness.net import free_port, listening
from tests.harness.paths import ROOT
from tests.harness.waits import wait_until

pytestmark = pytest.mark.once_pg
SERVE = """
import uvicorn
async def app(scope, receive, send):
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
uvicorn.run(app, port=%d, log_level="error", lifespan="off", loop="uvloop",
            http="workbench_site.http_protocol:BoundedHttpToolsProtocol",
            h11_max_incomplete_event_size=16384)
"""


def answer(port: int, header_bytes: int) -> bytes:
    """The first line of the answer to a GET whose head carries header_bytes of one header,
    sent in 4 KiB writes (as a slow client would)."""
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * header_bytes + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        try:
            for start in range(0, len(head), 4096):
                conn.sendall(head[start : start + 4096])
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused and closed while we were still sending
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = conn.recv(4096)
            if not chunk:
                break
            received += chunk
        while b"Invalid" not in received and received.startswith(b"HTTP/1.1 400"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            received += chunk
    return received


def test_a_request_head_past_the_bound_is_refused_and_a_normal_one_served():
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVE % port], cwd=ROOT)
    try:
        wait_until(lambda: listening(port) or server.poll() is not None, 30, "the server")
        assert server.poll() is None
        assert answer(port, 1000).startswith(b"HTTP/1.1 200 OK")
        refused = answer(port, 200_000)
        assert refused.startswith(b"HTTP/1.1 400 Bad Request")
        assert refused.endswith(b"Invalid HTTP request received.")
        assert answer(port, 1000).startswith(b"HTTP/1.1 200 OK")  # the server goes on
    finally:
        server.kill()
        server.wait(timeout=10)
