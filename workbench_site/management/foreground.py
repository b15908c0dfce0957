"""Serve in the foreground until stopped, and say so once the server answers (`make run`).

Why not uvicorn as make's own child: what is printed before uvicorn starts ("ready", and
the credentials) could be followed by a failed start; and uvicorn, stopped by Ctrl-C or
SIGTERM, ends by raising that signal against itself again, which make reports as
`make: *** [Makefile: run] Terminated` (or `Interrupt`) after a clean stop. Here the server
is a child: its first HTTP answer (any status: the process serves) releases the
announcement; a stop request is passed on as make passes it: SIGINT (Ctrl-C) reaches the
whole foreground process group, the server too, so a first one is not sent again (a
second SIGINT would make uvicorn skip its graceful shutdown), while SIGTERM, or a second
SIGINT, is sent on as SIGTERM (the gateway's graceful stop). A server that ended because
it was asked to is a clean exit, 0.
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from types import FrameType

POLL_SECONDS = 0.1


def probe_host(host: str) -> str:
    """Where to reach a server listening on `host` from this machine."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def answers(host: str, port: int, path: str = "/healthz") -> bool:
    """Whether an HTTP server answers there (any status)."""
    connection = http.client.HTTPConnection(probe_host(host), port, timeout=2)
    try:
        connection.request("GET", path)
        connection.getresponse().read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    return True


def serve(command: Sequence[str], host: str, port: int, announce: Callable[[], None]) -> int:
    """Run `command` until it ends; `announce` once it answers on host:port. The exit
    status: 0 after a stop that was asked for, else the server's own (a failed start)."""
    server = subprocess.Popen(list(command))
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        passed_on = signum == signal.SIGINT and not stopping  # the terminal's, to all
        stopping = True
        if not passed_on and server.poll() is None:
            server.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while server.poll() is None and not stopping:
            if answers(host, port):
                announce()
                break
            time.sleep(POLL_SECONDS)  # the server's start, polled
        status = server.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if stopping else status
