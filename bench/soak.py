"""Soak: concurrent sessions for a bounded time while faults are injected on a schedule.

    .venv/bin/python bench/soak.py [--seconds 300] [--sessions 20] [--fault-every 15]

One gateway process (Redis as the shared store when reachable, so that a key revoked by
`manage.py` from another process stops working in the gateway at once), one tenant, one
toolbox holding `mcp-server-time` and the fixture server (per-call timeout 2 s), one API
key per session. Every session opens the toolbox and calls tools until the time is up.
Every `--fault-every` seconds, in turn: a downstream process is killed, a call hangs
past its timeout, a session's key is revoked. At the end it prints calls made, outcomes
by kind, and the gateway's RSS, open file descriptors and child processes at start and
end, then stops the gateway and counts the downstream processes left behind (none
should be). A benchmark reports; it never fails on what it measures.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    REDIS_URL,
    UVICORN_OPTIONS,
    Deployment,
    Row,
    arguments,
    cmdline,
    descendants,
    gateway_session,
    redis_reachable,
    report,
    rss_kib,
    stop,
)

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "servers" / "fixture_server.py"
CALL_TIMEOUT_SECONDS = 2
SEED = """
import json
from toolboxes.models import ApiKey, Server, Tenant, Toolbox
tenant = Tenant.objects.create(slug="soak")
toolbox = Toolbox.objects.create(tenant=tenant, name="soak", description="soak test")
Server.objects.create(toolbox=toolbox, name="time", position=0, command={python!r},
                      args=["-m", "mcp_server_time"])
Server.objects.create(toolbox=toolbox, name="fixture", position=1, command={python!r},
                      args=[{fixture!r}, "--prefix", {marker!r}], timeout={timeout})
keys = [ApiKey.issue(tenant, label=f"session {{i}}")[1] for i in range({sessions})]
print("KEYS=" + json.dumps(keys))
"""


@dataclass
class Snapshot:
    rss_kib: int
    fds: Counter[str]
    children: int

    @classmethod
    def of(cls, pid: int) -> Snapshot:
        fds: Counter[str] = Counter()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed while we looked
                fds[os.readlink(f"/proc/{pid}/fd/{fd}").split(":")[0].split("/")[-1]] += 1
        return cls(rss_kib(pid), fds, len(descendants(pid)))

    def fd_text(self) -> str:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.fds.items()))
        return f"{sum(self.fds.values())} ({kinds})"


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    revoked: set[int] = field(default_factory=set)

    @property
    def calls(self) -> int:
        return sum(self.outcomes.values())


def outcome(result: object) -> str:
    """`ok`, or the error code of an error result."""
    if not getattr(result, "is_error", False):
        return "ok"
    structured = getattr(result, "structured_content", None) or {}
    return structured.get("error", {}).get("code", "downstream isError")


async def session_loop(index: int, url: str, key: str, deadline: float, tally: Tally) -> None:
    time_call = {
        "tool": {"toolbox": "soak", "server": "time", "name": "get_current_time"},
        "arguments": {"timezone": "Etc/UTC"},
    }
    echo_call = {
        "tool": {"toolbox": "soak", "server": "fixture", "name": "echo"},
        "arguments": {"text": "soak"},
    }
    try:
        async with gateway_session(url, key, open_toolbox="soak") as session:
            while time.monotonic() < deadline:
                call = time_call if random.random() < 0.7 else echo_call
                tally.outcomes[outcome(await session.call_tool("use_tool", call))] += 1
    except Exception as exc:  # the end of a session whose key was revoked, or a real fault
        kind = "401 after revocation" if index in tally.revoked else type(exc).__name__
        if isinstance(exc, MCPError) or "401" in str(exc) or index in tally.revoked:
            tally.outcomes[kind] += 1
        else:
            raise


async def inject_faults(
    deployment: Deployment,
    gateway_pid: int,
    url: str,
    keys: list[str],
    marker: str,
    every: float,
    deadline: float,
    tally: Tally,
    revocation: bool,
) -> None:
    kinds = ["kill", "hang", "revoke"] if revocation else ["kill", "hang"]
    turn = 0
    while time.monotonic() + every < deadline:
        await anyio.sleep(every)  # the schedule itself, not a synchronisation
        kind = kinds[turn % len(kinds)]
        turn += 1
        if kind == "kill":
            children = descendants(gateway_pid)
            if children:
                os.kill(random.choice(children), signal.SIGKILL)
                tally.faults["downstream killed"] += 1
        elif kind == "hang":
            hang = {
                "tool": {"toolbox": "soak", "server": "fixture", "name": "slow"},
                "arguments": {"seconds": 3600},
            }
            async with gateway_session(url, keys[0], open_toolbox="soak") as session:
                tally.outcomes[f"hang: {outcome(await session.call_tool('use_tool', hang))}"] += 1
            tally.faults["call hung past its timeout"] += 1
        else:
            index = len(keys) - 1 - len(tally.revoked)
            if index <= 0:
                continue
            tally.revoked.add(index)
            prefix = keys[index].split("_")[1]
            await anyio.to_thread.run_sync(deployment.manage, "revoke_api_key", prefix)
            tally.faults["key revoked"] += 1


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--fault-every", type=float, default=15.0)
    options = parser.parse_args()
    if options.quick:
        options.seconds, options.sessions, options.fault_every = 12.0, 3, 2.5
    marker = f"soak-{random.getrandbits(48):x}"
    revocation = redis_reachable(REDIS_URL)
    with tempfile.TemporaryDirectory(prefix="wb-soak-") as workdir:
        cache_url = f"{REDIS_URL}/{random.randint(1, 15)}" if revocation else "locmemcache://"
        deployment = Deployment(Path(workdir), cache_url, {"LOG_LEVEL": "ERROR"})
        deployment.manage("migrate", "-v0")
        seed = SEED.format(
            python=sys.executable,
            fixture=str(FIXTURE),
            marker=marker,
            timeout=CALL_TIMEOUT_SECONDS,
            sessions=options.sessions,
        )
        keys = json.loads(deployment.shell(seed).split("KEYS=", 1)[1])
        process, url, _ = deployment.start_gateway("gateway", *UVICORN_OPTIONS)
        tally = Tally()
        try:

            async def warm_up() -> None:
                async with gateway_session(url, keys[0], open_toolbox="soak"):
                    pass

            anyio.run(warm_up)
            start = Snapshot.of(process.pid)
            deadline = time.monotonic() + options.seconds

            async def soak() -> None:
                async with anyio.create_task_group() as group:
                    for index, key in enumerate(keys):
                        group.start_soon(session_loop, index, url, key, deadline, tally)
                    group.start_soon(
                        inject_faults,
                        deployment,
                        process.pid,
                        url,
                        keys,
                        marker,
                        options.fault_every,
                        deadline,
                        tally,
                        revocation,
                    )

            began = time.monotonic()
            anyio.run(soak)
            elapsed = time.monotonic() - began
            end = Snapshot.of(process.pid)
            children = {pid: cmdline(pid) for pid in descendants(process.pid)}
        finally:
            process.send_signal(signal.SIGTERM)  # a graceful stop must leave nothing behind
            stop(process)
        left = sum(cmdline(pid) == command for pid, command in children.items())

    rows = [
        Row("soak", "duration (s), sessions", f"{elapsed:.0f}, {options.sessions}"),
        Row("soak", "calls made", str(tally.calls)),
        Row("soak", "calls per second", f"{tally.calls / elapsed:.0f}"),
        *[Row("soak", f"outcome: {kind}", str(n)) for kind, n in sorted(tally.outcomes.items())],
        *[Row("soak", f"fault: {kind}", str(n)) for kind, n in sorted(tally.faults.items())],
        Row(
            "soak",
            "gateway RSS (MiB), start → end",
            f"{start.rss_kib / 1024:.1f} → {end.rss_kib / 1024:.1f}",
        ),
        Row("soak", "open file descriptors, start → end", f"{start.fd_text()} → {end.fd_text()}"),
        Row("soak", "child processes, start → end", f"{start.children} → {end.children}"),
        Row(
            "soak",
            "downstream processes left after shutdown",
            str(left),
            "0",
            "PASS" if left == 0 else "MISS",
        ),
    ]
    if not revocation:
        rows.append(Row("soak", "key revocation fault", "skipped: Redis not reachable"))
    report(
        rows,
        options.json,
        f"Soak: {options.sessions} sessions, faults every {options.fault_every:g} s",
    )


if __name__ == "__main__":
    main()
