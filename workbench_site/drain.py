"""Drain on SIGTERM, so that a load balancer moves traffic away before a replica stops.

uvicorn, on SIGTERM, closes its listening socket at once and then waits for the requests
in flight (`--timeout-graceful-shutdown`): a load balancer that has not yet noticed keeps
sending new requests to a closed port. Here the first SIGTERM only turns `/readyz` to 503
(`draining`) and keeps serving for `WORKBENCH_DRAIN_SECONDS`; then uvicorn's own handler
runs (in-flight requests, then the lifespan's shutdown closes downstream connections). A
second SIGTERM, or SIGINT (Ctrl-C), stops at once. Installed from the ASGI lifespan's
start, in each worker process, after uvicorn has installed its handlers.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType

logger = logging.getLogger("workbench")

DEFAULT_DRAIN_SECONDS = 5.0  # about two failed health checks of a load balancer at 1 s

draining = threading.Event()


def install(delay: float, ending: Callable[[], None] | None = None) -> None:
    """Drain for `delay` seconds on the first SIGTERM (nothing to do for 0, or off the main
    thread, where no signal handler can be set: a gateway inside a test's thread).

    `ending`, run on the event loop as the process starts to stop (a SIGINT, or a SIGTERM
    once drained): ends the responses that never end by themselves (the toolbox endpoint's
    listen streams), which uvicorn would otherwise wait for."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    if ending is not None:
        _ending_first(signal.SIGINT, loop, ending)
    if delay <= 0:
        if ending is not None:
            _ending_first(signal.SIGTERM, loop, ending)
        return
    stop = signal.getsignal(signal.SIGTERM)
    if not callable(stop):  # nobody's handler to hand over to: keep the default
        return

    def stopping(signum: int) -> None:
        if ending is not None:
            ending()
        stop(signum, None)

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if draining.is_set():  # a second SIGTERM: stop now
            stop(signum, frame)
            return
        draining.set()
        logger.info(
            "SIGTERM: draining (/readyz answers 503, requests still served) for %s s, "
            "then shutting down",
            delay,
        )
        loop.call_soon_threadsafe(loop.call_later, delay, stopping, signum)

    signal.signal(signal.SIGTERM, on_sigterm)


def _ending_first(signum: int, loop: asyncio.AbstractEventLoop, ending: Callable[[], None]) -> None:
    """`ending` on the loop, then the signal's own handler (uvicorn's)."""
    handler = signal.getsignal(signum)
    if not callable(handler):
        return

    def first_ending(number: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(ending)
        handler(number, frame)

    signal.signal(signum, first_ending)
