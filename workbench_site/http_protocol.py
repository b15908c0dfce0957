"""uvicorn's httptools protocol, with the bound on a request's head that h11 has.

`uvicorn --http httptools` parses with llhttp (C) instead of h11 (pure Python): several
times cheaper per request. But httptools buffers a request line and headers of any size,
where h11 refuses an incomplete head past `--h11-max-incomplete-event-size`. This protocol
keeps that bound under httptools, read from the same option (16 KiB when unset, h11's
default), and refuses past it as h11 does: 400 "Invalid HTTP request received.", then
closes. At most the bound plus one read (64 KiB) of an unfinished head is held.

    uvicorn workbench_site.asgi:application --loop uvloop \\
        --http workbench_site.http_protocol:BoundedHttpToolsProtocol
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEFAULT_MAX_HEAD_BYTES = 16 * 1024  # h11.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
REFUSAL = "Invalid HTTP request received."  # what uvicorn's h11 protocol answers


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._max_head = config.h11_max_incomplete_event_size or DEFAULT_MAX_HEAD_BYTES
        self._head_bytes = 0  # bytes fed while no request's head has completed
        self._in_head = True

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Checked after feeding: one read may end a head and carry its body.
        if self._in_head and self._head_bytes > self._max_head and not self.transport.is_closing():
            self.logger.warning(REFUSAL)
            self.send_400_response(REFUSAL)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        # The next request's head starts here (a pipelined one may already be in `data`).
        self._in_head = True
        self._head_bytes = 0
        super().on_message_complete()
