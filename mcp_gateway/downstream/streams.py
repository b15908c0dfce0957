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
    an idle server has died."""

    def __init__(self, inner: ObjectReceiveStream[Any], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's contextvars from here
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()
