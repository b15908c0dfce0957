"""Starting a sandbox: spawned held, given its memory group and network, then let go.

bubblewrap makes the sandbox's namespaces, tells us the pid inside them (`--info-fd`)
and waits (`--block-fd`) before it runs anything of the server's. In that moment the
gateway moves the sandbox into its memory cgroup (every later process is born there)
and gives the network namespace its filtered network; only then is the server run. A
failure of either ends the sandbox before the server ever ran.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import anyio
import anyio.abc

from kernel.classified import ClassifiedFailure
from kernel.egress import EgressPolicy
from mcp_gateway.downstream.sandbox import network as sandbox_network
from mcp_gateway.downstream.sandbox import network_rules
from mcp_gateway.downstream.sandbox.memory import MemoryGroup
from mcp_gateway.downstream.sandbox.policy import SandboxPolicy, effective_limits
from mcp_gateway.snapshots.sandbox import SandboxSpec

SETUP_SECONDS = 10.0
EMPTY_SECONDS = 2.0  # after the sandbox's exit, for its last processes to leave the group


class Started:
    """What a sandbox holds beside its process: its memory group and its network."""

    def __init__(self) -> None:
        self.memory: MemoryGroup | None = None
        self.network: sandbox_network.Network | None = None

    def oom_killed(self) -> bool:
        return self.memory is not None and self.memory.oom_killed()

    async def close(self) -> None:
        """After the server's process has exited."""
        if self.network is not None:
            await self.network.close()
            self.network = None
        if self.memory is not None:
            await _emptied(self.memory)
            self.memory.remove()


async def open_sandboxed(
    argv: Sequence[str],
    env: Mapping[str, str],
    errlog: TextIO | Any,
    spec: SandboxSpec,
    policy: SandboxPolicy,
    egress: EgressPolicy | None = None,
) -> tuple[anyio.abc.Process, Started]:
    """Spawn the sandbox (`argv` starts with bwrap) held, prepare it, let it go (`egress`:
    the sandboxes' allowance, by default WORKBENCH_SANDBOX_EGRESS_ALLOW's)."""
    info_read, info_write = os.pipe()
    block_read, block_write = os.pipe()
    held = [argv[0], "--info-fd", str(info_write), "--block-fd", str(block_read), *argv[1:]]
    started = Started()
    try:
        process = await anyio.open_process(
            held,
            env=env,
            stderr=errlog,
            start_new_session=True,
            pass_fds=(info_write, block_read),
        )
    except BaseException:
        for fd in (info_read, info_write, block_read, block_write):
            os.close(fd)
        raise
    os.close(info_write)
    os.close(block_read)
    try:
        with anyio.fail_after(SETUP_SECONDS):
            pid = await _child_pid(info_read)
            limits = effective_limits(spec, policy)
            if limits.memory_mb:
                started.memory = MemoryGroup.create(limits.memory_mb * 1024 * 1024)
                if started.memory is not None:
                    started.memory.add(process.pid)
                    started.memory.add(pid)
            if spec.network:
                allowed = await network_rules.allowance(
                    egress or EgressPolicy.for_sandboxes(), spec.egress_allow, spec.host_ports
                )
                started.network = await sandbox_network.attach(pid, allowed)
        os.write(block_write, b"go")
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            _kill(process)
            await process.wait()
            await started.close()
        if isinstance(exc, TimeoutError):
            raise ClassifiedFailure(
                "the sandbox could not start in time", f"setup over {SETUP_SECONDS} s"
            ) from None
        if isinstance(exc, OSError):
            raise ClassifiedFailure("the sandbox could not start", repr(exc)) from None
        raise
    finally:
        os.close(info_read)
        os.close(block_write)
    return process, started


async def _child_pid(info_fd: int) -> int:
    """The pid bwrap reports for the sandbox's first process (JSON on the info fd)."""
    data = b""
    while b"}" not in data:
        await anyio.wait_readable(info_fd)
        chunk = os.read(info_fd, 4096)
        if not chunk:
            raise ClassifiedFailure(
                "the sandbox could not start", "bwrap closed its info fd before the pid"
            )
        data += chunk
    return int(json.loads(data[: data.index(b"}") + 1])["child-pid"])


async def _emptied(group: MemoryGroup) -> None:
    """Wait (bounded) for the group to empty, killing what stays: a group removed while a
    process still exits stays behind (rmdir: EBUSY), one per spawn for the gateway's life."""
    for stragglers in (False, True):
        with anyio.move_on_after(EMPTY_SECONDS):
            while pids := group.pids():
                if stragglers:
                    for pid in pids:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, 9)
                await anyio.sleep(0.01)
            return


def _kill(process: anyio.abc.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 9)


__all__ = ["Started", "open_sandboxed"]
