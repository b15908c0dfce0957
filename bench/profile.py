"""Where the gateway's CPU goes: py-spy on the gateway process during sequential `use_tool`
calls, folded by package.

    .venv/bin/python bench/profile.py [--calls 1500] [--py-spy PATH] [--output FILE]

One SDK client session calls `use_tool` (mcp-server-time's `get_current_time`) `--calls`
times, one after another, through a gateway started with the shipped defaults (as
`common.gateway` starts every gateway of bench/). py-spy samples the gateway process
(never its downstream server) meanwhile, and its busy samples (a thread waiting in the
event loop's poll is idle, not counted) are folded by package: inclusive (the share of
samples with that package anywhere on the stack) and self (the share whose innermost
frame is in it). The gateway's CPU per call is measured from /proc over the same window.

py-spy is a measuring tool, never a dependency of the product: install it in a virtualenv
of its own (`python3 -m venv /tmp/spy && /tmp/spy/bin/pip install py-spy`) and name it
with --py-spy (default: `py-spy` on the PATH, else /tmp/spy/bin/py-spy).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    Row,
    arguments,
    checked,
    cpu_seconds,
    gateway,
    gateway_session,
    p50_p90_p99,
    report,
    use_call,
)

SECTION = "6 profile"
DEFAULT_PY_SPY = "/tmp/spy/bin/py-spy"
SAMPLE_RATE = 200  # per second
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^():]*)(?::\d+)?\)$")
# Finer names for the packages that matter on the hot path (first match wins).
DETAIL = (
    ("uvicorn/protocols/http/h11_impl", "uvicorn (h11 protocol)"),
    ("uvicorn/protocols/http/httptools_impl", "uvicorn (httptools protocol)"),
    ("uvicorn/middleware/proxy_headers", "uvicorn (proxy headers)"),
    ("mcp/server/transport_security", "mcp (host/origin check, body limit)"),
    ("mcp/server/streamable_http", "mcp (Streamable HTTP transport)"),
    ("mcp/shared/jsonrpc_dispatcher", "mcp (JSON-RPC dispatcher)"),
    ("mcp/server/runner", "mcp (server runner)"),
    ("mcp/shared/_otel", "opentelemetry (SDK spans)"),
    ("mcp/server/_otel", "opentelemetry (SDK spans)"),
    ("mcp/client", "mcp (client to the downstream)"),
    ("mcp_gateway/ratelimit", "gateway: rate limits"),
    ("mcp_gateway/telemetry", "gateway: telemetry"),
    ("mcp_gateway/", "gateway: other"),
    ("workbench_site/", "gateway: other"),
    ("toolboxes/", "gateway: other"),
)
# Stdlib modules named on their own; the rest of the stdlib is "python stdlib".
STDLIB_NAMED = {"logging", "asyncio", "json", "sqlite3", "typing", "contextlib", "uuid"}
# The frames every sample starts with (the interpreter, uvicorn's start, the event loop's
# run loop): cut, so that a package's inclusive share says what the serving costs.
BOOTSTRAP = (
    "<frozen runpy",
    "click/",
    "uvicorn/__main__",
    "uvicorn/main.py",
    "uvicorn/server.py",
    "uvicorn/_compat.py",
    "asyncio/runners.py",
    "asyncio/base_events.py",
    "asyncio/events.py",
    "uvloop/",
)

# Innermost frames of a thread that waits (py-spy's idle detection lets some through): the
# event loop's poll, an idle worker thread, the child watcher, a lock. Not busy.
IDLE = (
    "EpollSelector.select (",
    "Condition.wait (",
    "_worker (concurrent/futures/thread.py",
    "ThreadedChildWatcher._do_waitpid (",
)


def package_of(path: str) -> str:
    """A frame's file (py-spy names it relative to its sys.path entry), as a package name
    (or a finer name for the hot path's parts)."""
    path = path.split("site-packages/", 1)[-1]
    for needle, name in DETAIL:
        if path.startswith(needle) or f"/{needle}" in path:
            return name
    top = path.split("/", 1)[0].removesuffix(".py")
    if top in sys.stdlib_module_names or top.startswith("<frozen"):
        return top if top in STDLIB_NAMED else "python stdlib"
    return top or "other"


def fold(raw: str) -> tuple[Counter[str], Counter[str], int]:
    """py-spy's raw (collapsed) output: inclusive and self samples per package, and all."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        if stack.rpartition(";")[2].startswith(IDLE):
            continue
        files = [m["file"] for m in map(FRAME.match, stack.split(";")) if m]
        while files and files[0].startswith(BOOTSTRAP):
            files.pop(0)
        if not files:
            continue  # the event loop itself (polling or scheduling)
        packages = [package_of(file) for file in files]
        total += count
        for package in set(packages):
            inclusive[package] += count
        own[packages[-1]] += count
    return inclusive, own, total


def py_spy_path(given: str | None) -> str:
    found = given or shutil.which("py-spy") or DEFAULT_PY_SPY
    if not Path(found).exists() and not shutil.which(found):
        raise SystemExit(f"py-spy not found ({found}): see this script's docstring")
    return found


async def calls(url: str, key: str, count: int, on_start, on_end) -> list[float]:  # type: ignore[no-untyped-def]
    samples: list[float] = []
    async with gateway_session(url, key) as session:
        for _ in range(50):  # warm-up
            checked(await session.call_tool("use_tool", use_call()))
        on_start()
        for _ in range(count):
            start = time.perf_counter()
            checked(await session.call_tool("use_tool", use_call()))
            samples.append((time.perf_counter() - start) * 1000)
        on_end()
    return samples


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--py-spy", help="the py-spy executable (see the docstring)")
    parser.add_argument("--output", type=Path, help="also write py-spy's raw output here")
    parser.add_argument("--top", type=int, default=16, help="packages listed")
    options = parser.parse_args()
    if options.quick:
        options.calls = 20
    spy = py_spy_path(options.py_spy)
    with tempfile.TemporaryDirectory(prefix="wb-bench-profile-") as workdir:
        raw_path = options.output or Path(workdir) / "raw.txt"
        window: dict[str, float] = {}
        recorder: list[subprocess.Popen[bytes]] = []
        with gateway() as running:

            def start() -> None:
                command = [spy, "record", "--pid", str(running.pid), "--format", "raw"]
                command += ["--rate", str(SAMPLE_RATE), "--output", str(raw_path)]
                recorder.append(
                    subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                )
                time.sleep(1.0)  # py-spy attaches (bounded: it samples or it failed)
                window["cpu"] = -cpu_seconds(running.own_pids())

            def end() -> None:
                window["cpu"] += cpu_seconds(running.own_pids())
                recorder[0].send_signal(signal.SIGINT)
                recorder[0].wait(timeout=60)

            samples = anyio.run(calls, running.url, running.key, options.calls, start, end)
        inclusive, own, total = fold(raw_path.read_text() if raw_path.exists() else "")
    cpu_ms = window["cpu"] * 1000 / options.calls
    rows = [
        Row(
            SECTION,
            f"use_tool p50 / p90 / p99 (ms, {options.calls} sequential calls)",
            " / ".join(f"{v:.2f}" for v in p50_p90_p99(samples)),
        ),
        Row(SECTION, "gateway CPU per use_tool, sequential (ms; under py-spy)", f"{cpu_ms:.2f}"),
        Row(SECTION, "busy samples", str(total)),
    ]
    for package, count in inclusive.most_common(options.top):
        rows.append(
            Row(
                SECTION,
                f"{package}: inclusive / self (% of busy samples)",
                f"{100 * count / max(total, 1):.1f} / {100 * own[package] / max(total, 1):.1f}",
            )
        )
    report(rows, options.json, f"Profile: {options.calls} sequential use_tool calls, py-spy")


if __name__ == "__main__":
    main()
