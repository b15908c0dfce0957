"""Loopback ports for servers the tests and benchmarks start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port free now (the kernel picks among thousands: races are remote)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
