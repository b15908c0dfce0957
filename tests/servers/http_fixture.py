"""The fixture server over Streamable HTTP, as a remote downstream for tests.

python tests/servers/http_fixture.py --port N [fixture_server options]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--description-size", type=int, default=0)
    parser.add_argument("--crash-on-call", action="store_true")
    args = parser.parse_args()
    server = fixture_server.build(args)
    app = server.streamable_http_app(
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
