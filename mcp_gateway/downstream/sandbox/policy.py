"""The gateway-wide sandbox rules (the WORKBENCH_SANDBOX* settings), built from the
gateway's options, and what a sandboxed server's limits are and what its exit says of them."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcp_gateway.downstream.sandbox.cache import CachePolicy
from mcp_gateway.options import GatewayOptions, current_options
from mcp_gateway.snapshots.sandbox import Limits, SandboxSpec

logger = logging.getLogger("workbench.sandbox")

MODES = ("bwrap", "none")
FIX = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on a kernel that allows "
    "user namespaces, or set WORKBENCH_SANDBOX=none to run stdio servers unsandboxed"
)


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The gateway-wide rules (from the WORKBENCH_SANDBOX* settings)."""

    mode: str = GatewayOptions.sandbox  # the defaults' home: the gateway's options
    limits: Limits = field(default_factory=lambda: SandboxPolicy.limits_of(GatewayOptions()))
    uid_base: int = GatewayOptions.sandbox_uid_base
    tmp_mb: int = GatewayOptions.sandbox_tmp_mb  # each of the tmpfs /tmp and HOME, at most
    # Never bound, and masked where a system directory would show them: the project
    # directory, the database's directory, the env file, ...
    protected: tuple[str, ...] = ()
    bwrap: str = "bwrap"
    # The seccomp filter (`seccomp`); off only to measure what it costs (bench).
    seccomp: bool = True
    # Each tenant's package cache; None: the settings' (`cache.active`), for a sandbox
    # started outside the gateway (bench). The gateway's options always give theirs.
    cache: CachePolicy | None = None

    @property
    def enabled(self) -> bool:
        return self.mode == "bwrap"

    @staticmethod
    def limits_of(options: GatewayOptions) -> Limits:
        return Limits(
            options.sandbox_memory_mb or None,
            options.sandbox_processes or None,
            options.sandbox_cpu_seconds or None,
            options.sandbox_open_files or None,
        )

    @classmethod
    def of(cls, options: GatewayOptions) -> SandboxPolicy:
        """The gateway-wide rules its options (WORKBENCH_SANDBOX*) give, with its cache's."""
        return cls(
            mode=options.sandbox,
            limits=cls.limits_of(options),
            uid_base=options.sandbox_uid_base,
            tmp_mb=options.sandbox_tmp_mb,
            protected=tuple(options.sandbox_protected_paths),
            cache=CachePolicy.of(options),
        )

    @classmethod
    def from_settings(cls) -> SandboxPolicy:
        """From Django's WORKBENCH_SANDBOX* settings, as they are now."""
        return cls.of(current_options())


def announce(policy: SandboxPolicy) -> None:
    """At a gateway's start: a mode other than bwrap or none refused, `none` logged as a
    warning."""
    if policy.mode not in MODES:
        raise ValueError(f"WORKBENCH_SANDBOX must be one of {', '.join(MODES)}")
    if not policy.enabled:
        logger.warning(
            "WORKBENCH_SANDBOX=none: stdio servers run unsandboxed, as the gateway's own user, "
            "and can read its files, environment and other tenants' processes"
        )


def effective_limits(spec: SandboxSpec, policy: SandboxPolicy) -> Limits:
    return spec.limits.over(policy.limits)


# What runtimes print when an allocation fails past RLIMIT_DATA (Python, Node, C/C++, Go).
OUT_OF_MEMORY_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "heap out of memory",
    "std::bad_alloc",
    "out of memory",
)


def exit_reason(
    returncode: int | None,
    limits: Limits,
    last_words: Iterable[str] = (),
    oom_killed: bool = False,
) -> str | None:
    """The limit a sandboxed server's exit shows it was stopped by, if any: the CPU limit
    by its signal, the memory limit by its cgroup's OOM kill or by what the runtime
    printed as it died (an allocation past RLIMIT_DATA fails; the runtime then exits or
    aborts)."""
    if returncode is None or returncode == 0:
        return None
    signo = returncode - 128 if returncode > 128 else -returncode
    if signo == signal.SIGXCPU and limits.cpu_seconds:
        return f"the server was stopped by its CPU time limit ({limits.cpu_seconds} s)"
    if limits.memory_mb and oom_killed:
        return f"the server was stopped by its memory limit ({limits.memory_mb} MiB)"
    if limits.memory_mb and any(
        marker in line for line in last_words for marker in OUT_OF_MEMORY_MARKERS
    ):
        return f"the server was stopped by its memory limit ({limits.memory_mb} MiB)"
    return None
