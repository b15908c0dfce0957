"""What passes on a connection: its read stream, watched for its end (the only sign that an
idle server has died), and the size of a result."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream


def result_size(result: types.CallToolResult) -> int:
    """The bytes a result carries (texts, binary data, structured content), cheaply."""
    size = 0
    for item in result.content:
        resource = getattr(item, "resource", None)
        for part in (item, resource):
            for field in ("text", "data", "blob"):
                value = getattr(part, field, None)
                if isinstance(value, str):
                    size += len(value)
    if result.structured_content is not None:
        size += len(json.dumps(result.structured_content, separators=(",", ":")))
    return size


class WatchedStream(ObjectReceiveStream[Any]):
    """The transport's read stream, telling its owner when it ends: the only sign that
    an idle server has died. `admit` sees each item first, in order, and keeps from the
    SDK what it answers False for (`notifications.Notifications.admit`)."""

    def __init__(
        self,
        inner: ObjectReceiveStream[Any],
        on_end: Callable[[], None],
        admit: Callable[[Any], bool] | None = None,
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._admit = admit

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's contextvars from here
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
            admit = self._admit
            if admit is not None:
                while not admit(item):
                    item = await self._inner.receive()
            return item
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()
