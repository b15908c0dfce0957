"""A server's memory cgroup (mcp_gateway/downstream/sandbox/memory.py) on this host: made with its
limit, a process added, an OOM kill recorded, removed once empty (stragglers killed by
sandbox_start). Skipped where cgroups cannot be written (no root, no delegation)."""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_gateway.downstream.sandbox import memory as sandbox_memory
from mcp_gateway.downstream.sandbox import start as sandbox_start
from mcp_gateway.downstream.sandbox.memory import MemoryGroup
from mcp_gateway.downstream.sandbox.policy import exit_reason
from mcp_gateway.snapshots.sandbox import Limits
from tests.harness.waits import wait_until

LIMIT = 64 * 1024 * 1024
# Waits on a line of stdin, then allocates (and touches) 256 MiB.
GREEDY = "import sys; sys.stdin.readline(); block = bytearray(256 << 20); print(len(block))"


@pytest.fixture
def group() -> Iterator[MemoryGroup]:
    made = MemoryGroup.create(LIMIT)
    if made is None:
        pytest.skip("memory cgroups cannot be written on this host")
    yield made
    made.remove()


@pytest.fixture
def waiting() -> Iterator[subprocess.Popen[str]]:
    """A process that waits for a line before it allocates."""
    process = subprocess.Popen(
        [sys.executable, "-c", GREEDY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    yield process
    process.kill()
    process.wait(timeout=10)


def test_a_group_is_made_under_the_gateways_parent_with_its_limit(group):
    assert group.path.parent.name == sandbox_memory.GROUP
    assert group.path.name.startswith(f"{os.getpid()}-")
    limit = "memory.max" if group.version == 2 else "memory.limit_in_bytes"
    assert (group.path / limit).read_text().strip() == str(LIMIT)
    assert group.pids() == []
    assert not group.oom_killed()


def test_a_process_added_is_in_the_group_and_killed_past_its_limit(group, waiting):
    group.add(waiting.pid)
    assert group.pids() == [waiting.pid]
    assert str(group.path).endswith(waiting_cgroup(waiting.pid))
    waiting.stdin.write("go\n")
    waiting.stdin.flush()
    assert waiting.wait(timeout=30) == -9  # SIGKILL: the OOM killer, not a MemoryError
    assert group.oom_killed()
    wait_until(lambda: group.pids() == [], 10, "the group to empty")
    group.remove()
    assert not group.path.exists()
    limits = Limits(memory_mb=64)
    assert exit_reason(128 + 9, limits, [], oom_killed=True) == (
        "the server was stopped by its memory limit (64 MiB)"
    )
    assert exit_reason(128 + 9, limits, [], oom_killed=False) is None


def waiting_cgroup(pid: int) -> str:
    """The memory cgroup /proc says the process is in (v1's line, else v2's)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    memory = [line for line in lines if ":memory:" in line] or [
        line for line in lines if line.startswith("0::")
    ]
    return memory[0].split(":", 2)[2]


@pytest.mark.anyio
async def test_closing_a_sandbox_kills_what_stays_in_its_group_and_removes_it(
    group, waiting, monkeypatch
):
    """A group removed while a process is still in it would stay behind (EBUSY)."""
    monkeypatch.setattr(sandbox_start, "EMPTY_SECONDS", 0.2)
    group.add(waiting.pid)
    started = sandbox_start.Started()
    started.memory = group
    with anyio.fail_after(10):
        await started.close()
    assert waiting.wait(timeout=10) == -9
    assert not group.path.exists()


def test_stale_groups_of_gateways_gone_are_removed(group):
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = group.path.parent / f"{gone.pid}-1"
    stale.mkdir()
    sandbox_memory.remove_stale()
    assert not stale.exists()
    assert group.path.exists()  # this process's own stays


def test_a_name_left_by_an_earlier_gateway_of_the_same_pid_is_skipped(group, monkeypatch):
    # A container's gateway is pid 1 at every start: the groups a killed one left are named
    # as this one's would be.
    monkeypatch.setattr(sandbox_memory, "_counter", itertools.count(1000))
    left = group.path.parent / f"{os.getpid()}-1000"
    left.mkdir()
    try:
        made = MemoryGroup.create(LIMIT)
        assert made is not None
        assert made.path.name == f"{os.getpid()}-1001"
        assert left.is_dir()  # not this process's to remove
        made.remove()
    finally:
        left.rmdir()


def test_without_a_memory_hierarchy_it_says_so_once_and_bounds_by_rlimit(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(sandbox_memory, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(sandbox_memory, "_warned", False)
    caplog.set_level(logging.WARNING, logger="workbench.sandbox")
    assert MemoryGroup.create(LIMIT) is None
    assert MemoryGroup.create(LIMIT) is None
    assert [record.getMessage() for record in caplog.records] == [
        "memory cgroups cannot be used (no memory cgroup hierarchy is mounted): a stdio "
        "server's memory is bounded by RLIMIT_DATA only, which shared memory and tmpfs "
        "pages escape"
    ]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
