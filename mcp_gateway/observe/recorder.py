"""What the gateway records, out through one seam: of each meta-tool call, the metrics,
the request span's attributes and the call log (called at the three places on the call
path, the front door's `open_toolbox`, `use_tool` and `search_tools`, with the outcome the
meta-tool returned);
of the rest, the metrics of requests refused at the door, of downstream connections and of
connected accounts' refreshes. Nothing else in the gateway moves a metric."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mcp_gateway.observe import tracing
from mcp_gateway.observe.calllog import CallEntry, CallLog
from mcp_gateway.observe.client_names import ClientNames
from mcp_gateway.observe.metrics import metrics
from mcp_gateway.observe.outcome import Outcome
from mcp_gateway.observe.request_context import RequestInfo, current_request
from mcp_gateway.snapshots.callers import Caller
from mcp_gateway.snapshots.servers import ServerConfig, ServerRef

OK = "ok"
TOOL_ERROR = tracing.TOOL_ERROR
CANCELLED = "cancelled"
INPUT_REQUIRED = "input_required"  # the server asked the client for input (2026-07-28)
RATE_LIMITED = "RATE_LIMITED"
# Outcomes past the point where the downstream's own tool list named the tool.
_TOOL_KNOWN = frozenset({OK, TOOL_ERROR, "TIMEOUT", "DOWNSTREAM_ERROR", CANCELLED})


def outcome_label(outcome: Outcome) -> str:
    """ok, tool_error (the downstream's isError), input_required, cancelled, or the
    gateway's error code (or what it is recorded as: `filtered`, a TOOL_NOT_FOUND of the
    server's filter)."""
    if outcome.result is None:
        return CANCELLED
    if outcome.error_code:
        return outcome.recorded_as or outcome.error_code
    if getattr(outcome.result, "result_type", None) == INPUT_REQUIRED:
        return INPUT_REQUIRED
    return TOOL_ERROR if getattr(outcome.result, "is_error", False) else OK


@dataclass
class Recorder:
    """Metrics for every call; the call log when one is given; spans when `tracing` (the
    assembly's `configure_tracing()`)."""

    call_log: CallLog | None = None
    client_names: ClientNames | None = None
    tracing: bool = False

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Recorder]:
        """The call log's writer runs for as long as the gateway does."""
        if self.call_log is None:
            yield self
            return
        async with self.call_log.running():
            yield self

    def open_toolbox(
        self, caller: Caller, arguments: object, outcome: Outcome, started: float
    ) -> None:
        elapsed = time.perf_counter() - started
        label = outcome_label(outcome)
        tenant = caller.tenant.slug
        toolbox = outcome.toolbox.name if outcome.toolbox is not None else ""
        m = metrics()
        m.opens.labels(tenant, toolbox, label).inc()
        m.open_seconds.labels(tenant, toolbox).observe(elapsed)
        if label == RATE_LIMITED:
            m.rate_limited.labels(tenant, "open_toolbox").inc()
        if self.call_log is not None:
            self._log("open_toolbox", caller, arguments, outcome, elapsed, label)

    def search_tools(
        self, caller: Caller, arguments: object, outcome: Outcome, started: float
    ) -> None:
        """Its latency and outcome; of a successful one, how many tools it found (none:
        counted apart, a query whose tool descriptions may hide); the call log keeps its
        arguments (the query) by the rules of every call's arguments."""
        elapsed = time.perf_counter() - started
        label = outcome_label(outcome)
        tenant = caller.tenant.slug
        m = metrics()
        m.searches.labels(tenant, label).inc()
        m.search_seconds.labels(tenant).observe(elapsed)
        if label == OK and outcome.result is not None:
            listed = getattr(outcome.result, "structured_content", None) or {}
            found = len(listed.get("tools", ()))
            m.search_results.labels(tenant).observe(found)
            if not found:
                m.search_empty.labels(tenant).inc()
        if self.call_log is not None:
            self._log("search_tools", caller, arguments, outcome, elapsed, label)

    def use_tool(self, caller: Caller, arguments: object, outcome: Outcome, started: float) -> None:
        elapsed = time.perf_counter() - started
        label = outcome_label(outcome)
        server = outcome.server
        labels = (
            caller.tenant.slug,
            outcome.toolbox.name if outcome.toolbox is not None else "",
            server.name if server is not None else "",
            outcome.named.tool if server is not None and label in _TOOL_KNOWN else "",
        )
        m = metrics()
        m.calls.labels(*labels, label).inc()
        m.call_seconds.labels(*labels).observe(elapsed)
        if label == RATE_LIMITED:
            m.rate_limited.labels(caller.tenant.slug, "use_tool").inc()
        for kind, count in outcome.secrets_removed:
            m.secrets_removed.labels(caller.tenant.slug, kind).inc(count)
        if self.call_log is not None:
            self._log("use_tool", caller, arguments, outcome, elapsed, label)
        if self.tracing:
            tracing.annotate_outcome(labels, label, signed_in_as(caller, server))

    def auth_refused(self, reason: str) -> None:
        """A request refused before the gateway knew its caller."""
        metrics().auth_refusals.labels(reason).inc()

    def in_flight_refused(self, tenant: str) -> None:
        """A request refused: its key had its limit of requests in flight."""
        metrics().rate_limited.labels(tenant, "in_flight").inc()

    # Downstream connections, by the server they are for

    def downstream_started(self, server: ServerRef) -> None:
        m = metrics()
        m.starts.labels(*server).inc()
        m.live.labels(*server).inc()

    def downstream_failed_to_start(self, server: ServerRef) -> None:
        metrics().start_failures.labels(*server).inc()

    def downstream_ended(self, server: ServerRef) -> None:
        metrics().live.labels(*server).dec()

    def downstream_crashed(self, server: ServerRef) -> None:
        """A live connection ended without the gateway closing it (exit, crash, dropped)."""
        metrics().crashes.labels(*server).inc()

    def downstream_limit_kill(self, server: ServerRef) -> None:
        """A sandboxed server stopped by one of its limits (CPU time, memory...)."""
        metrics().limit_kills.labels(*server).inc()

    def downstream_notifications_dropped(self, server: ServerRef, count: int = 1) -> None:
        """Notifications a server sent faster than its connection's rate, dropped."""
        metrics().notifications_dropped.labels(*server).inc(count)

    def relay_bound_reached(self, server: ServerRef, bound: str) -> None:
        """A call past one of the process's bounds on relaying a server's questions (its
        name a constant: `metatools.held_calls`, `metatools.lone_calls`)."""
        metrics().relay_bounds.labels(*server, bound).inc()

    def sign_in_refreshed(self, server_id: int, *, ok: bool) -> None:
        """A connected account's token refresh, by server (its id) and outcome."""
        metrics().sign_in_refreshes.labels(str(server_id), "ok" if ok else "failed").inc()

    def _log(
        self,
        meta_tool: str,
        caller: Caller,
        arguments: object,
        outcome: Outcome,
        elapsed: float,
        label: str,
    ) -> None:
        assert self.call_log is not None
        request = current_request() or RequestInfo()
        named = outcome.named
        self.call_log.put(
            CallEntry(
                at=time.time(),
                tenant_id=caller.tenant.tenant_id,
                key_id=caller.key.key_id,
                key_prefix=caller.key.prefix,
                client_name=request.client_name,
                client_version=request.client_version,
                session_id=request.session_id or "",
                meta_tool=meta_tool,
                duration_ms=elapsed * 1000,
                outcome=label,
                error_code=outcome.error_code,
                incident=outcome.incident,
                arguments=arguments,
                result=outcome.result,
                redactors=outcome.redactors,
                toolbox=named.toolbox,
                server=named.server if meta_tool == "use_tool" else "",
                tool=named.tool if meta_tool == "use_tool" else "",
                signed_in_as=signed_in_as(caller, outcome.server)
                if meta_tool == "use_tool"
                else "",
                decision=_decision_text(outcome),
            )
        )


def _decision_text(outcome: Outcome) -> str:
    """The call log's decision: the tool policy's, and what the secrets guard removed
    ("secrets removed: AWS Access Key (2), stored secret (1)": kinds and counts only)."""
    if not outcome.secrets_removed:
        return outcome.decision
    removed = ", ".join(f"{kind} ({count})" for kind, count in outcome.secrets_removed)
    return "; ".join(part for part in (outcome.decision, f"secrets removed: {removed}") if part)


def signed_in_as(caller: Caller, server: ServerConfig | None) -> str:
    """Whose connected account a call to `server` used (never a token): `person:<user id>`,
    `tenant` (a shared account), `workbench` (client credentials), or "" (no sign-in)."""
    if server is None or not server.signs_in:
        return ""
    if server.per_person:
        return f"person:{caller.person_id}" if caller.person_id is not None else ""
    return "workbench" if server.auth == "client_credentials" else "tenant"
