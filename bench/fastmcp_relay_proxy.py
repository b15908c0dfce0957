"""FastMCP's proxy in front of the relay benchmark's two stdio servers (tests/servers'
relay probe and fixture server), served over Streamable HTTP.

    bench/.fastmcp-venv/bin/python bench/fastmcp_relay_proxy.py --port 8123 --python PY

Run with the separate FastMCP virtualenv; the servers themselves run with `--python` (the
product's, whose SDK they are written for). `create_proxy` of an MCP configuration with
two servers, with its defaults: tools named `<server>_<tool>`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import uvicorn
from fastmcp.server import create_proxy

SERVERS = Path(__file__).resolve().parents[1] / "tests" / "servers"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--python", required=True)
    options = parser.parse_args()
    config = {
        "mcpServers": {
            name: {"command": options.python, "args": [str(SERVERS / script)]}
            for name, script in (("probe", "relay_probe.py"), ("fixture", "fixture_server.py"))
        }
    }
    proxy = create_proxy(config, name="fastmcp-proxy")
    uvicorn.run(
        proxy.http_app(path="/mcp"),
        host="127.0.0.1",
        port=options.port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
