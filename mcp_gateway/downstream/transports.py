"""How to reach one downstream server: stdio parameters or a remote URL with headers,
with `${VAR}` references expanded from the gateway's environment."""

import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from kernel.classified import ClassifiedFailure
from kernel.egress import UNREACHABLE, EgressPolicy, PinnedTransport
from kernel.headers import UNCONFIGURABLE_HEADERS
from kernel.redaction import redact_log_records
from mcp_gateway.downstream.envrefs import ExpansionError, expand
from mcp_gateway.downstream.sandbox.argv import HOME, launch
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.downstream.stderr import StderrPipe
from mcp_gateway.downstream.stdio import bounded_stdio_client
from mcp_gateway.snapshots.servers import ServerConfig

# The HTTP client logs each request's URL at INFO (a `${VAR}` or secret parameter in the
# URL), the SDK what it sends: records made in a connection's task are redacted.
redact_log_records()

# Room for a message's JSON-RPC envelope around a result of the largest size allowed.
MESSAGE_ENVELOPE_BYTES = 64 * 1024

# What a stdio server gets besides its own configured env (spec: a minimal base).
BASE_ENV_NAMES = ("PATH", "HOME", "LANG")


def stdio_parameters(
    server: ServerConfig, environ: Mapping[str, str], policy: SandboxPolicy
) -> StdioServerParameters:
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
    if policy.enabled:
        # The sandbox's own HOME; `env -u` takes back what the SDK and bwrap add (PWD).
        env = env | {"HOME": HOME}
        extra = sorted(set(get_default_environment()) - set(base) - set(env) | {"PWD"})
        argv = launch(executable, args, base | env, cwd, server.sandbox, policy, unset=extra).argv
        return StdioServerParameters(command=argv[0], args=argv[1:], env=base | env)
    # The SDK adds its own inherited variables (USER, SHELL, ...) to every child; `env -u`
    # takes back those the spec's minimal base does not include.
    extra = sorted(set(get_default_environment()) - set(base) - set(env))
    if extra:
        unset = [part for name in extra for part in ("-u", name)]
        args = [*unset, executable, *args]
        executable = shutil.which("env") or "/usr/bin/env"
    return StdioServerParameters(command=executable, args=args, env=base | env, cwd=cwd)


def remote_target(server: ServerConfig, environ: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The expanded URL and headers; headers the gateway owns (Host, hop-by-hop) are
    dropped even if a stored configuration predates their validation."""
    url = expand(server.url, "url", environ)
    headers = {
        name: expand(value, f"headers.{name}", environ)
        for name, value in server.headers
        if name.lower() not in UNCONFIGURABLE_HEADERS
    }
    return url, headers


def open_transport(
    server: ServerConfig,
    environ: Mapping[str, str],
    *,
    stderr: StderrPipe | None = None,
    connect_timeout: float,
    max_result_bytes: int,
    egress: EgressPolicy | None = None,
    auth: httpx2.Auth | None = None,
    sandbox: SandboxPolicy,
    on_limit_kill: Callable[[], None] | None = None,
    admit: Callable[[SessionMessage], bool] | None = None,
) -> AbstractAsyncContextManager[Any]:
    """The SDK transport context manager for this server (enter it in the owning task).
    `admit`: a stdio server's messages as they are read (`stdio.bounded_stdio_client`)."""
    max_message_bytes = max_result_bytes + MESSAGE_ENVELOPE_BYTES
    if server.is_stdio:
        params = stdio_parameters(server, environ, sandbox)
        return bounded_stdio_client(
            params,
            stderr or sys.stderr,
            max_message_bytes,
            result_limit=max_result_bytes,
            sandbox=server.sandbox,
            policy=sandbox,
            on_limit_kill=on_limit_kill,
            admit=admit,
        )
    url, headers = remote_target(server, environ)
    policy = egress or EgressPolicy.from_settings()
    if server.transport == "sse":
        return _sse(url, headers, connect_timeout, policy, auth)
    return _streamable_http(url, headers, connect_timeout, max_message_bytes, policy, auth)


def _pinned_client(
    headers: dict[str, str] | None,
    timeout: httpx2.Timeout,
    transport: PinnedTransport,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client whose every request goes through the egress policy, to the checked
    address; no proxy from the environment, no redirects followed by the client (the
    SDK follows same-origin ones itself, through this transport)."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout,
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        auth=auth,
    )


async def _pinned_transport(url: str, policy: EgressPolicy) -> PinnedTransport:
    """Check (and pin) the server's own address before the SDK starts: its transports
    would turn a refusal into a hang."""
    try:
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL as exc:
        raise ClassifiedFailure(UNREACHABLE, f"invalid URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ClassifiedFailure(UNREACHABLE, f"not an http(s) URL with a host: {url}")
    transport = PinnedTransport(policy)
    await transport.pin(parsed)
    return transport


@asynccontextmanager
async def _streamable_http(
    url: str,
    headers: dict[str, str],
    connect_timeout: float,
    max_message_bytes: int | None,
    policy: EgressPolicy,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[Any]:
    transport = await _pinned_transport(url, policy)
    timeout = httpx2.Timeout(connect_timeout, read=300.0)
    limit: dict[str, Any] = {"max_sse_event_size": max_message_bytes} if max_message_bytes else {}
    async with (
        _pinned_client(headers, timeout, transport, auth) as http,
        streamable_http_client(url, http_client=http, **limit) as streams,
    ):
        yield streams


@asynccontextmanager
async def _sse(
    url: str,
    headers: dict[str, str],
    connect_timeout: float,
    policy: EgressPolicy,
    signed_in: httpx2.Auth | None = None,
) -> AsyncIterator[Any]:
    transport = await _pinned_transport(url, policy)

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        client = _pinned_client(headers, timeout or httpx2.Timeout(connect_timeout), transport)
        chosen = signed_in or auth
        if chosen is not None:
            client.auth = chosen
        return client

    async with sse_client(
        url, headers=headers, timeout=connect_timeout, httpx_client_factory=factory
    ) as streams:
        yield streams
