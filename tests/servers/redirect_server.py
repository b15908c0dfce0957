"""A hostile remote: answers every request with a redirect to `--to` (an address the
egress policy refuses, such as cloud metadata).

python tests/servers/redirect_server.py --port N --to http://169.254.169.254/latest
"""

from __future__ import annotations

import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--to", required=True)
    args = parser.parse_args()

    class Redirect(BaseHTTPRequestHandler):
        def _redirect(self) -> None:
            self.send_response(307)
            self.send_header("Location", args.to)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _redirect

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Redirect).serve_forever()


if __name__ == "__main__":
    main()
