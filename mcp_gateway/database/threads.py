"""ORM code off the event loop: every read and write of the gateway's door runs here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections

P = ParamSpec("P")
R = TypeVar("R")


def in_thread(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`func` run in the ORM's thread, closing connections Django would consider stale."""

    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        return func(*args, **kwargs)

    return sync_to_async(wrapped, thread_sensitive=True)


async def release_database() -> None:
    """Close the connections the ORM opened in asgiref's thread (at shutdown)."""
    await sync_to_async(connections.close_all, thread_sensitive=True)()


def close_thread_connections() -> None:
    """Close the connections the ORM opened in the calling thread (a writer's thread, at
    shutdown: Django's connections are per thread)."""
    connections.close_all()
