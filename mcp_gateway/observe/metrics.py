"""Prometheus metrics: every series the gateway exports, their multiprocess files, and the
events that move them.

Label values come from configuration only (tenant slug, toolbox, server, a tool the
downstream listed, the spec's error codes): never from client input, so the series stay
bounded.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

from mcp_gateway.snapshots.servers import ServerRef

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Seconds: a meta-tool answers in milliseconds when warm, a cold open in seconds.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
CALL_LABELS = ("tenant", "toolbox", "server", "tool")
# search_tools: answers in milliseconds from the index; seconds when it lists a server.
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# How many tools a search returned (its limit is at most 50).
RESULT_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50)


class Metrics:
    """Every metric the gateway exports; made once per process (see `metrics`)."""

    def __init__(self) -> None:
        self.calls = Counter(
            "workbench_tool_calls",
            "use_tool calls by outcome: ok, tool_error (the downstream's isError), an error code",
            [*CALL_LABELS, "outcome"],
            registry=None,
        )
        self.call_seconds = Histogram(
            "workbench_tool_call_duration_seconds",
            "use_tool duration, from the request to its result",
            CALL_LABELS,
            buckets=DURATION_BUCKETS,
            registry=None,
        )
        self.opens = Counter(
            "workbench_open_toolbox",
            "open_toolbox calls by outcome (ok or an error code)",
            ["tenant", "toolbox", "outcome"],
            registry=None,
        )
        self.open_seconds = Histogram(
            "workbench_open_toolbox_duration_seconds",
            "open_toolbox duration",
            ["tenant", "toolbox"],
            buckets=DURATION_BUCKETS,
            registry=None,
        )
        self.searches = Counter(
            "workbench_search_tools",
            "search_tools calls by outcome (ok or an error code)",
            ["tenant", "outcome"],
            registry=None,
        )
        self.search_seconds = Histogram(
            "workbench_search_tools_duration_seconds",
            "search_tools duration",
            ["tenant"],
            buckets=SEARCH_BUCKETS,
            registry=None,
        )
        self.search_results = Histogram(
            "workbench_search_tools_results",
            "Tools a successful search_tools returned",
            ["tenant"],
            buckets=RESULT_BUCKETS,
            registry=None,
        )
        self.search_empty = Counter(
            "workbench_search_tools_no_results",
            "Successful search_tools calls that found nothing (descriptions worth improving)",
            ["tenant"],
            registry=None,
        )
        server_labels = ["tenant", "toolbox", "server"]
        self.live = Gauge(
            "workbench_downstream_connections",
            "Live downstream connections (all gateway processes)",
            server_labels,
            multiprocess_mode="livesum",
            registry=None,
        )
        self.starts = Counter(
            "workbench_downstream_starts",
            "Downstream connections made (a process started, a remote session opened)",
            server_labels,
            registry=None,
        )
        self.start_failures = Counter(
            "workbench_downstream_start_failures",
            "Downstream connections that failed to start",
            server_labels,
            registry=None,
        )
        self.crashes = Counter(
            "workbench_downstream_crashes",
            "Live downstream connections that ended without the gateway closing them",
            server_labels,
            registry=None,
        )
        self.limit_kills = Counter(
            "workbench_downstream_limit_kills",
            "Sandboxed servers stopped by one of their limits (CPU time, memory...)",
            server_labels,
            registry=None,
        )
        self.notifications_dropped = Counter(
            "workbench_downstream_notifications_dropped",
            "Notifications of a downstream server dropped: sent faster than a connection's rate",
            server_labels,
            registry=None,
        )
        self.relay_bounds = Counter(
            "workbench_relay_bound_reached",
            "Calls to a server spoken to in 2025-11-25 past a per-process bound of relaying its "
            "questions: held_calls (its question refused), lone_connections (the call shared "
            "the pool's connection, where a question is refused with another call in flight)",
            [*server_labels, "bound"],
            registry=None,
        )
        self.auth_refusals = Counter(
            "workbench_auth_refusals",
            "Requests refused before the gateway knew the caller, by reason",
            ["reason"],
            registry=None,
        )
        self.rate_limited = Counter(
            "workbench_rate_limited",
            "Requests refused by a rate limit: use_tool, open_toolbox or in_flight",
            ["tenant", "limit"],
            registry=None,
        )
        self.secrets_removed = Counter(
            "workbench_secrets_removed",
            "Credentials the secrets guard removed from tool results, by kind",
            ["tenant", "kind"],
            registry=None,
        )
        self.call_log_dropped = Counter(
            "workbench_call_log_dropped",
            "Call log records dropped: the queue was full (the database is slow or down)",
            registry=None,
        )
        self.call_log_failed = Counter(
            "workbench_call_log_write_failures",
            "Call log records lost because their batch could not be written",
            registry=None,
        )
        self.call_log_written = Counter(
            "workbench_call_log_written", "Call log records written", registry=None
        )
        self.sign_in_refreshes = Counter(
            "workbench_sign_in_refreshes",
            "Connected accounts' token refreshes by server (its id) and outcome (ok, failed)",
            ["server_id", "outcome"],
            registry=None,
        )
        self.all = [
            self.sign_in_refreshes,
            self.calls,
            self.call_seconds,
            self.opens,
            self.open_seconds,
            self.searches,
            self.search_seconds,
            self.search_results,
            self.search_empty,
            self.live,
            self.starts,
            self.start_failures,
            self.crashes,
            self.limit_kills,
            self.notifications_dropped,
            self.relay_bounds,
            self.auth_refusals,
            self.rate_limited,
            self.secrets_removed,
            self.call_log_dropped,
            self.call_log_failed,
            self.call_log_written,
        ]


_metrics: Metrics | None = None
_multiprocess_dir: str | None = None


def configure_metrics(directory: str | None) -> None:
    """Multiprocess mode (each worker writes its own files in `directory`; a scrape adds
    them up) when a directory is given. Call before the first metric is made.

    Files of processes no longer running are removed first: counters of workers from an
    earlier start, and the live gauges of a worker that died, must not be added in.
    """
    global _multiprocess_dir
    if _metrics is not None or not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        pid = stale.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _running(int(pid)):
            stale.unlink(missing_ok=True)
    os.environ[MULTIPROC_ENV] = str(path)
    values.ValueClass = values.MultiProcessValue()
    _multiprocess_dir = str(path)
    atexit.register(_process_exiting)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def metrics() -> Metrics:
    global _metrics
    if _metrics is None:
        _metrics = Metrics()
    return _metrics


def exposition() -> bytes:
    """The text a scrape gets: every process's metrics when in multiprocess mode."""
    registry = CollectorRegistry()
    if _multiprocess_dir:
        multiprocess.MultiProcessCollector(registry, path=_multiprocess_dir)
    else:
        for metric in metrics().all:
            registry.register(metric)
    return generate_latest(registry)


def live_downstream() -> dict[ServerRef, int]:
    """Live downstream connections by server, as a scrape would add them up: every worker
    of this host in multiprocess mode, else this process (the admin's dashboard)."""
    if _multiprocess_dir:
        registry = CollectorRegistry()
        families = multiprocess.MultiProcessCollector(registry, path=_multiprocess_dir).collect()
    else:
        families = metrics().live.collect()
    found: dict[ServerRef, int] = {}
    for family in families:
        if family.name != "workbench_downstream_connections":
            continue
        for sample in family.samples:
            labels = sample.labels
            ref = ServerRef(labels["tenant"], labels["toolbox"], labels["server"])
            if sample.value >= 1:
                found[ref] = found.get(ref, 0) + int(sample.value)
    return found


def _process_exiting() -> None:
    """This worker's live gauges stop counting (its connections are gone)."""
    if _multiprocess_dir:
        multiprocess.mark_process_dead(os.getpid(), _multiprocess_dir)
