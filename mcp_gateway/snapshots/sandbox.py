"""What one stdio server's configuration says about its sandbox: mounts, network, limits,
egress allowance, its tenant's directories, host ports. Plain values; the rules that turn
them into an argv are `downstream.sandbox`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-server limits; None: not set here (the gateway's default, or no limit)."""

    memory_mb: int | None = None
    processes: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = None

    def over(self, defaults: Limits) -> Limits:
        """These values, each unset one taken from `defaults`."""
        return Limits(
            *(
                mine if mine is not None else theirs
                for mine, theirs in zip(self.as_tuple(), defaults.as_tuple(), strict=True)
            )
        )

    def as_tuple(self) -> tuple[int | None, ...]:
        return (self.memory_mb, self.processes, self.cpu_seconds, self.open_files)


@dataclass(frozen=True, slots=True)
class Mount:
    path: str
    writable: bool = False


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What one server's configuration says about its sandbox."""

    owner: int = 0  # the tenant: its uid is uid_base + owner
    mounts: tuple[Mount, ...] = ()
    network: bool = True
    limits: Limits = field(default_factory=Limits)
    # Networks and host names this server may reach beyond public addresses (an
    # operator's allowance, added to WORKBENCH_SANDBOX_EGRESS_ALLOW's).
    egress_allow: tuple[str, ...] = ()
    # The host directories its tenant's admins may name (downstream.sandbox.paths.tenant_roots).
    roots: tuple[str, ...] = ()
    # TCP ports of the host's loopback it may reach (an operator's, named one by one).
    host_ports: tuple[int, ...] = ()

    def mounts_bound(self) -> list[tuple[str, bool]]:
        return [(mount.path, mount.writable) for mount in self.mounts]

    def material(self) -> list[object]:
        """What the connection fingerprint includes."""
        mounts = [[mount.path, mount.writable] for mount in self.mounts]
        material = [mounts, self.network, list(self.limits.as_tuple()), list(self.egress_allow)]
        # Only when set: the fingerprints of servers without host ports stay as they were.
        return [*material, list(self.host_ports)] if self.host_ports else material
