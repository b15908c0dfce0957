"""FastMCP's proxy in front of `mcp-server-time` over stdio, served over Streamable HTTP.

    bench/.fastmcp-venv/bin/python bench/fastmcp_proxy.py --port 8123

Run with the separate FastMCP virtualenv (see bench/README.md), never the product's: FastMCP
brings its own dependencies. This is the comparison point of `latency.py`'s FastMCP path:
`create_proxy` with its defaults (stateful HTTP sessions, a kept-alive stdio backend),
served by uvicorn on loopback like the other paths.
"""

from __future__ import annotations

import argparse
import sys

import uvicorn
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    backend = StdioTransport(command=sys.executable, args=["-m", "mcp_server_time"])
    proxy = create_proxy(backend, name="fastmcp-proxy")
    uvicorn.run(
        proxy.http_app(path="/mcp"),
        host="127.0.0.1",
        port=options.port,
        loop="uvloop",  # as every server of bench/ (common.UVICORN_OPTIONS)
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
