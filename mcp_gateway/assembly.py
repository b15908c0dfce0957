"""The one place that assembles the gateway: its parts, each built whole from the options.

The database's installation is read first: it names the entries this gateway keeps in the
shared store (a new database never finds an old one's), so the parts that keep entries
there (open state, rate limits, warm-up) are built knowing it. The sandbox's policies and
the metrics and tracing switches come from the options too (`configure_process`), once per
process. `front.http.Gateway` runs what this builds (its lifespan) and serves requests
with it (its ASGI handler).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from mcp_gateway.database.reads import Snapshots, installation, saved_sign_in, stored_listings
from mcp_gateway.database.records import (
    SignInRecords,
    pass_approval,
    record_connection,
    record_set_offer,
    save_calls,
)
from mcp_gateway.database.threads import close_thread_connections
from mcp_gateway.downstream.connected.accounts import ConnectedAccounts, SignInDoor
from mcp_gateway.downstream.pool import Pool
from mcp_gateway.downstream.sandbox import policy as sandbox_policy
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy
from mcp_gateway.downstream.warmup import WarmUp
from mcp_gateway.front.auth import Authenticator
from mcp_gateway.front.cancellation import InFlightCalls
from mcp_gateway.front.hostcheck import HostCheck
from mcp_gateway.front.questions import Questions
from mcp_gateway.front.server import build_server
from mcp_gateway.front.toolbox_server import ToolboxEndpoint, build_toolbox_endpoint
from mcp_gateway.metatools.held_calls import HeldCalls
from mcp_gateway.metatools.known_tools import KnownTools
from mcp_gateway.metatools.meta_tools import MetaTools
from mcp_gateway.metatools.open_state import OpenToolboxes
from mcp_gateway.metatools.parts import MetaToolParts
from mcp_gateway.metatools.ratelimit import InFlight, Limit, RateLimiter, buckets_for
from mcp_gateway.observe.calllog import CallLog
from mcp_gateway.observe.client_names import ClientNames
from mcp_gateway.observe.metrics import configure_metrics
from mcp_gateway.observe.metrics_endpoint import MetricsEndpoint
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.observe.tracing import configure_tracing
from mcp_gateway.options import GatewayOptions
from mcp_gateway.store.shared import SharedStore, installation_prefix, store_for

# The SDK's own Host/Origin check is off: `hostcheck` makes the same one, as set lookups.
NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


@dataclass(frozen=True, slots=True)
class Installation:
    """The database this gateway serves: its id (made on first use), its description and
    its SQLite file ("" for a server), as the sandbox's uid claim records them."""

    id: str
    database: str
    database_file: str

    @property
    def prefix(self) -> str:
        """What starts every entry this gateway keeps in the shared store."""
        return installation_prefix(self.id)


@dataclass(frozen=True, slots=True)
class GatewayParts:
    """Everything one gateway process serves /mcp with, made once at its start."""

    options: GatewayOptions
    installation: Installation
    sandbox: SandboxPolicy
    shared: SharedStore
    recorder: Recorder
    snapshots: Snapshots
    auth: Authenticator
    open_toolboxes: OpenToolboxes
    pool: Pool
    warm_up: WarmUp
    limiter: RateLimiter
    in_flight: InFlight
    metatools: MetaTools
    calls: InFlightCalls
    # A 2025-11-25 client's answers to a server's questions during its calls.
    questions: Questions
    server: Server[Any]
    # Two ways to answer a POST, both stateless: the SDK's SSE stream (a request that may
    # ask for progress: `server.session_manager`) and one JSON body (every other; no
    # stream machinery per request).
    json_answers: StreamableHTTPSessionManager
    host_check: HostCheck
    # `/mcp/t/<slug>/toolboxes/<toolbox>`: one toolbox as an MCP server of its own.
    toolbox_endpoint: ToolboxEndpoint | None = None


def configure_process(options: GatewayOptions) -> MetricsEndpoint:
    """What a gateway process sets once, before its first request: the sandbox's policy
    checked (`none` is logged as a warning) and metrics (multiprocess files under
    `metrics_dir`: prometheus' value class is the process's). The /metrics endpoint it
    serves them at. Spans are switched on or off by `build_parts` (`configure_tracing`)."""
    sandbox_policy.announce(SandboxPolicy.of(options))
    configure_metrics(options.metrics_dir)
    return MetricsEndpoint(options.metrics_token, options.metrics_allowed_ips)


async def assemble(options: GatewayOptions) -> GatewayParts:
    """The installation read, then every part built whole (in the gateway's lifespan: the
    database is read on its loop, through the ORM's thread)."""
    found = Installation(*await installation())
    return build_parts(options, found)


def build_parts(options: GatewayOptions, found: Installation) -> GatewayParts:
    sandbox = SandboxPolicy.of(options)
    shared = store_for(options.cache)
    call_log = (
        CallLog(
            save_calls,
            options.call_log_queue,
            options.call_log_batch,
            release=close_thread_connections,
        )
        if options.call_log
        else None
    )
    # Spans exported or not: the one switch, read by the recorder and what it is handed to.
    recorder = Recorder(
        call_log, ClientNames(shared, options.session_idle_seconds), tracing=configure_tracing()
    )
    snapshots = Snapshots(shared, found.id)
    open_toolboxes = OpenToolboxes(options.session_idle_seconds, shared, prefix=found.prefix)
    pool = Pool(
        connect_timeout=options.connect_timeout_seconds,
        idle_seconds=options.idle_connection_seconds,
        max_result_bytes=options.max_result_bytes,
        max_connections=options.max_connections,
        tenant_max_connections=options.tenant_max_connections,
        record=record_connection,
        record_set_offer=record_set_offer,
        sandbox=sandbox,
        recorder=recorder,
    )
    warm_up = WarmUp(
        pool,
        shared,
        snapshots.tenant,
        options.replica,
        options.warm_up_seconds,
        memory_seconds=options.idle_connection_seconds,
        prefix=found.prefix,
    )
    limiter = RateLimiter(
        buckets_for(options.cache),
        Limit.parse(options.tenant_rate_limit, options.tenant_rate_burst),
        Limit.parse(options.key_rate_limit, options.key_rate_burst),
        open_tenant=Limit.parse(options.open_tenant_rate_limit, options.open_tenant_rate_burst),
        open_key=Limit.parse(options.open_key_rate_limit, options.open_key_rate_burst),
        prefix=found.prefix,
    )
    accounts = ConnectedAccounts(
        SignInDoor(
            read=saved_sign_in,
            claim_refresh=SignInRecords.claim_refresh,
            save_refreshed=SignInRecords.save_refreshed,
            release_claim=SignInRecords.release_claim,
            needs_reconnect=SignInRecords.needs_reconnect,
            new_link=SignInRecords.new_link,
        ),
        recorder,
    )
    # Each tenant's tools, searchable: fed by the pool's listings and the stored ones.
    known_tools = KnownTools(pool, stored_listings)
    metatool_parts = MetaToolParts(
        pool,
        open_toolboxes,
        limiter,
        accounts,
        known_tools,
        approvals=pass_approval,
        held_calls=HeldCalls(options.held_calls, recorder),
    )
    metatools = MetaTools(metatool_parts)
    calls = InFlightCalls()
    questions = Questions(shared)
    server = build_server(metatools, recorder, calls, questions)
    server.streamable_http_app(
        stateless_http=True,
        transport_security=NO_SDK_HOST_CHECK,
        max_request_body_size=options.max_request_bytes,
    )
    json_answers = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=NO_SDK_HOST_CHECK,
        max_request_body_size=options.max_request_bytes,
    )
    return GatewayParts(
        options=options,
        installation=found,
        sandbox=sandbox,
        shared=shared,
        recorder=recorder,
        snapshots=snapshots,
        auth=Authenticator(snapshots),
        open_toolboxes=open_toolboxes,
        pool=pool,
        warm_up=warm_up,
        limiter=limiter,
        in_flight=InFlight(options.key_max_in_flight),
        metatools=metatools,
        calls=calls,
        questions=questions,
        server=server,
        json_answers=json_answers,
        host_check=HostCheck(options.allowed_hosts),
        toolbox_endpoint=build_toolbox_endpoint(
            metatool_parts,
            recorder,
            calls,
            NO_SDK_HOST_CHECK,
            options.max_request_bytes,
            questions,
        ),
    )
