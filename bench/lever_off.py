"""Serve the gateway with some of issue 15's speed levers turned off (for bench/levers.py).

    python bench/lever_off.py json,hostcheck,spans,opencache -- <uvicorn arguments>

The product has no switch for them (each is simply how it works); this builds the ASGI
application as uvicorn would, turns the named levers off in it, then hands the same
arguments to uvicorn, which finds the module already imported. An empty list changes
nothing (so a tree from before the levers runs through here too).
"""

from __future__ import annotations

import sys


def turn_off(levers: set[str]) -> None:
    from workbench_site import asgi

    gateway = getattr(asgi.application, "gateway", None)
    if "json" in levers:
        from mcp_gateway.front import http

        http.answers_as_json = lambda scope, body: False
    if "hostcheck" in levers:
        from mcp.server.transport_security import TransportSecuritySettings

        names = list(gateway.options.allowed_hosts)
        hosts = [host for name in names for host in (name, f"{name}:*")]
        origins = [f"{s}://{n}{p}" for n in names for s in ("http", "https") for p in ("", ":*")]
        sdk_check = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)
        gateway.host_check.enabled = False
        gateway.server.session_manager.security_settings = sdk_check
        gateway.json_answers.security_settings = sdk_check
    if "spans" in levers:
        from mcp_gateway.observe.sdk_patch import sdk_spans

        sdk_spans(True)
    if "opencache" in levers:
        from mcp_gateway.metatools.open_toolbox import ToolboxOpener

        ToolboxOpener.reopened = lambda self, caller, toolbox: None


def main() -> None:
    levers = {name for name in sys.argv[1].split(",") if name}
    uvicorn_args = sys.argv[sys.argv.index("--") + 1 :]
    if levers:
        turn_off(levers)
    from uvicorn.main import main as uvicorn_main

    sys.argv = ["uvicorn", *uvicorn_args]
    uvicorn_main()


if __name__ == "__main__":
    main()
