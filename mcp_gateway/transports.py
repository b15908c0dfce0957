"""How to reach one downstream server: stdio parameters or a remote URL with headers,
with `${VAR}` references expanded from the gateway's environment."""

import os
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import IO, Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client

from mcp_gateway.config import ServerConfig
from mcp_gateway.envrefs import ExpansionError, expand
from mcp_gateway.stdio import bounded_stdio_client

# Room for a message's JSON-RPC envelope around a result of the largest size allowed.
MESSAGE_ENVELOPE_BYTES = 64 * 1024

# What a stdio server gets besides its own configured env (spec: a minimal base).
BASE_ENV_NAMES = ("PATH", "HOME", "LANG")


def stdio_parameters(server: ServerConfig, environ: Mapping[str, str]) -> StdioServerParameters:
    command = expand(server.command, "command", environ)
    args = [expand(arg, f"args[{index}]", environ) for index, arg in enumerate(server.args)]
    env = {name: expand(value, f"env.{name}", environ) for name, value in server.env}
    cwd = expand(server.cwd, "cwd", environ) if server.cwd else None
    base = {name: environ[name] for name in BASE_ENV_NAMES if name in environ}
    path = env.get("PATH", base.get("PATH"))
    executable = command
    if os.sep not in command:
        executable = shutil.which(command, path=path) or ""
        if not executable:
            raise ExpansionError(f"command not found: {command}")
    if cwd is not None and not os.path.isdir(cwd):
        raise ExpansionError(f"working directory does not exist: {cwd}")
    # The SDK adds its own inherited variables (USER, SHELL, ...) to every child; `env -u`
    # takes back those the spec's minimal base does not include.
    extra = sorted(set(get_default_environment()) - set(base) - set(env))
    if extra:
        unset = [part for name in extra for part in ("-u", name)]
        args = [*unset, executable, *args]
        executable = shutil.which("env") or "/usr/bin/env"
    return StdioServerParameters(command=executable, args=args, env=base | env, cwd=cwd)


def remote_target(server: ServerConfig, environ: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    url = expand(server.url, "url", environ)
    headers = {name: expand(value, f"headers.{name}", environ) for name, value in server.headers}
    return url, headers


def open_transport(
    server: ServerConfig,
    environ: Mapping[str, str],
    *,
    stderr: IO[str] | None = None,
    connect_timeout: float = 30.0,
    max_result_bytes: int = 10 * 1024 * 1024,
) -> AbstractAsyncContextManager[Any]:
    """The SDK transport context manager for this server (enter it in the owning task)."""
    max_message_bytes = max_result_bytes + MESSAGE_ENVELOPE_BYTES
    if server.is_stdio:
        params = stdio_parameters(server, environ)
        return bounded_stdio_client(
            params, stderr or sys.stderr, max_message_bytes, result_limit=max_result_bytes
        )
    url, headers = remote_target(server, environ)
    if server.transport == "sse":
        return sse_client(url, headers=headers, timeout=connect_timeout)
    return _streamable_http(url, headers, connect_timeout, max_message_bytes)


@asynccontextmanager
async def _streamable_http(
    url: str, headers: dict[str, str], connect_timeout: float, max_message_bytes: int | None
) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(connect_timeout, read=300.0)
    limit = {"max_sse_event_size": max_message_bytes} if max_message_bytes else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http, **limit) as streams,
    ):
        yield streams
