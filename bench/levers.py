"""What each speed lever of issue 15 gives: gateways with every lever on, with one lever off
at a time, and the code before them, side by side in one run.

    .venv/bin/python bench/levers.py [--before DIR] [--tree NAME=DIR ...] [--blocks 8]
                                     [--block-calls 25] [--quick]

Each variant is a gateway process of its own (the same seeded tenant, key and toolbox
`bench` with mcp-server-time); one SDK session per variant calls `use_tool` in blocks that
take turns (order rotating), and opens the toolbox once per block from a new session. Per
variant: use_tool p50, the gateway's CPU per call (its own process, from /proc, over its
blocks), and the warm open p50. A lever is turned off in a running gateway by
bench/lever_off.py (the product has no switch for them); "before" is a source tree given
with --before (e.g. `git archive <commit> | tar -x -C DIR`), served as it was served then
(h11, asyncio). `--tree NAME=DIR` adds a variant served from another source tree as
shipped (uvloop, httptools): a lever that has no switch is measured alone by a tree that
holds the code before with only that lever's files changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    BENCH,
    GATEWAY_ENV,
    ROOT,
    SEED,
    TENANT,
    TOOLBOX,
    Row,
    arguments,
    checked,
    cpu_seconds,
    gateway_session,
    median,
    report,
    stop,
    time_server,
    use_call,
)
from tests.harness.deployment import Deployment
from tests.harness.net import free_port, listening
from tests.harness.waits import wait_until

SECTION = "7 levers"
SHIPPED = ("--http", "workbench_site.http_protocol:BoundedHttpToolsProtocol", "--loop", "uvloop")
PURE_PYTHON = ("--http", "h11", "--loop", "asyncio")
# name: (levers off (bench/lever_off.py), uvicorn options)
VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "all levers on (as shipped)": ((), SHIPPED),
    "all but httptools + uvloop (h11, asyncio)": ((), PURE_PYTHON),
    "all but JSON answers (SSE always)": (("json",), SHIPPED),
    "all but the set-lookup host check": (("hostcheck",), SHIPPED),
    "all but no SDK spans": (("spans",), SHIPPED),
    "all but the open cache": (("opencache",), SHIPPED),
}
BEFORE = "before (the --before tree, h11, asyncio)"


@contextmanager
def variant_gateway(
    workdir: Path, levers_off: tuple[str, ...], options: tuple[str, ...], source: Path
) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    servers = [{"name": "time", "command": sys.executable, "args": list(time_server().args)}]
    deployment = Deployment(workdir, env_extra=GATEWAY_ENV)
    script = SEED.format(migrate=True, tenant=TENANT, toolboxes=json.dumps({TOOLBOX: servers}))
    key = deployment.shell(script).split("KEY=", 1)[1].split()[0]
    port = free_port()
    launcher = [sys.executable, str(BENCH / "lever_off.py"), ",".join(levers_off), "--"]
    command = [*launcher, "workbench_site.asgi:application", "--port", str(port)]
    env = {**deployment.env, "PYTHONPATH": str(source)}
    with (workdir / "gateway.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--no-access-log", *options],
            env=env,
            cwd=source,
            stderr=log,
            stdout=subprocess.DEVNULL,
        )
    try:
        wait_until(lambda: listening(port) or process.poll() is not None, 60, "a gateway")
        assert process.poll() is None, (workdir / "gateway.log").read_text()[-2000:]
        yield f"http://127.0.0.1:{port}/mcp", key, process
    finally:
        stop(process)


async def measure(
    gateways: dict[str, tuple[str, str, subprocess.Popen[bytes]]], blocks: int, block_calls: int
) -> dict[str, dict[str, list[float]]]:
    figures = {name: {"calls": [], "cpu": [], "open": []} for name in gateways}
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        sessions = {
            name: await stack.enter_async_context(gateway_session(url, key))
            for name, (url, key, _) in gateways.items()
        }
        for session in sessions.values():
            for _ in range(20):
                checked(await session.call_tool("use_tool", use_call()))
        names = list(gateways)
        for block in range(blocks):
            for name in names[block % len(names) :] + names[: block % len(names)]:
                url, key, process = gateways[name]
                session = sessions[name]
                cpu = -cpu_seconds([process.pid])
                for _ in range(block_calls):
                    start = time.perf_counter()
                    checked(await session.call_tool("use_tool", use_call()))
                    figures[name]["calls"].append((time.perf_counter() - start) * 1000)
                figures[name]["cpu"].append((cpu + cpu_seconds([process.pid])) / block_calls)
                async with gateway_session(url, key, open_toolbox=None) as fresh:
                    start = time.perf_counter()
                    checked(await fresh.call_tool("open_toolbox", {"toolbox": TOOLBOX}))
                    figures[name]["open"].append((time.perf_counter() - start) * 1000)
    return figures


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--before", type=Path, help="a source tree of the code before")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a variant served from another source tree, as shipped (repeatable)",
    )
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--block-calls", type=int, default=25)
    options = parser.parse_args()
    variants = dict(VARIANTS)
    if options.quick:
        options.blocks, options.block_calls = 1, 3
        # One gateway, through bench/lever_off.py: what could rot, in the least time.
        variants = {name: variants[name] for name in ["all but JSON answers (SSE always)"]}
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    # (name, levers off, uvicorn options, source tree) of every gateway of the run
    specs = [(name, off, served, ROOT) for name, (off, served) in variants.items()]
    if options.before:
        specs.append((BEFORE, (), PURE_PYTHON, options.before.resolve()))
    for tree in options.tree:
        name, _, source = tree.partition("=")
        specs.append((name, (), SHIPPED, Path(source).resolve()))
    with ExitStack() as stack:
        gateways = {}
        for name, off, served, source in specs:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wb-lever-")))
            gateways[name] = stack.enter_context(variant_gateway(workdir, off, served, source))
        figures = anyio.run(measure, gateways, options.blocks, options.block_calls)
    rows = []
    for name, values in figures.items():
        rows.append(
            Row(
                SECTION,
                f"{name}: use_tool p50 / gateway CPU per call / new-session open p50 (ms)",
                f"{median(values['calls']):.2f} / {1000 * median(values['cpu']):.2f} / "
                f"{median(values['open']):.2f}",
            )
        )
    rows.append(Row(SECTION, "load average (1/5/15 min) before the run", load))
    report(rows, options.json, f"Levers: {options.blocks} blocks of {options.block_calls} calls")


if __name__ == "__main__":
    main()
