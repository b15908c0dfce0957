"""Tool search speed: a tenant of 10,000 tools in 200 servers, in one process.

    .venv/bin/python bench/search_speed.py [--quick] [--json FILE] [--path index|gateway]

The tenant is made of both datasets' tools in turn (bench/search_data.py: deterministic,
50 tools a server, 20 toolboxes). Measured on `mcp_gateway.search`'s index (`ToolIndex`):

- build: every server's tools tokenized and indexed in one write (`replace_servers`), from
  a cold tokenizer cache; and the same one server at a time (200 writes, a commit each);
- resident memory the index added (the process's RSS after the build, less before it;
  the tokenizer's cache included);
- search: 1,000 queries (half MetaTool's, half Gorilla's, shuffled), 10 hits each, every
  server allowed, then a tenth of them; p50 and p99 after 50 warm-up queries;
- replacing one server's 50 tools with new ones (20 servers in turn): p50 and the slowest,
  and whether the next search finds the new tools.

Then, in a process of its own (so that its memory is its own), the gateway's path
(`KnownTools`, what `search_tools` asks after it has the listings): the tenant as a snapshot
(`TenantConfig`) whose servers' listings are stored ones (`Listing.stored`, as a replica
holding none of the tenant's connections reads them), the first search's `update` (every
server's visible entries and documents, one commit, on a worker thread) with its CPU time
and the memory it added, each search as `search_tools` makes it (`live`, `update`: nothing
changed, `search`: the entries of the best 10), and one server's new listing taken in by
the next search (its `update` and `search`).

--quick: 1,000 tools in 20 servers, 100 queries.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Row, arguments, percentile, report, rss_kib
from bench.search_data import Server, mixed_queries, tenant
from mcp_gateway import (
    Described,
    KnownTools,
    Listing,
    ServerConfig,
    TenantConfig,
    ToolboxConfig,
    ToolIndex,
    server_key,
)

SECTION = "14 search speed"
TOOLS_PER_SERVER = 50
WARM_UP = 50
REPLACED = 20
LIMIT = 10


def entries(servers: list[Server]) -> list[tuple[str, Described, Described, list[dict[str, Any]]]]:
    return [
        (
            server.key,
            Described(server.toolbox),
            Described(server.name, server.description),
            server.tools,
        )
        for server in servers
    ]


def timed_searches(index: ToolIndex, queries: list[str], allowed: list[str]) -> list[float]:
    for query in queries[:WARM_UP]:
        index.search(query, allowed, LIMIT)
    samples = []
    for query in queries:
        started = time.perf_counter()
        index.search(query, allowed, LIMIT)
        samples.append(1000 * (time.perf_counter() - started))
    return samples


def replaced(index: ToolIndex, servers: list[Server]) -> tuple[list[float], bool]:
    """Each of REPLACED servers' tools swapped for renamed ones; found at once?"""
    samples, found = [], True
    step = max(1, len(servers) // REPLACED)
    for server in servers[::step][:REPLACED]:
        tools = [dict(tool, name=f"{tool['name']}_v2") for tool in server.tools]
        toolbox, named = Described(server.toolbox), Described(server.name, server.description)
        started = time.perf_counter()
        index.replace_server(server.key, toolbox, named, tools)
        samples.append(1000 * (time.perf_counter() - started))
        first = tools[0]
        hits = index.search(f"{first['name']} {first['description'][:80]}", [server.key], 50)
        found = found and {hit.tool for hit in hits} <= {tool["name"] for tool in tools}
        found = found and any(hit.tool == first["name"] for hit in hits)
    return samples, found


class NoConnections:
    """The pool as `KnownTools.live` asks it: no live connection in this process."""

    def connections(self) -> list[Any]:
        return []


def snapshot(servers: list[Server]) -> TenantConfig:
    """The tenant's configuration as the gateway holds it: a toolbox per `Server.toolbox`."""
    boxes: dict[str, list[ServerConfig]] = {}
    for number, server in enumerate(servers, 1):
        config = ServerConfig(
            server.name, "stdio", command="x", server_id=number, fingerprint=f"f{number}"
        )
        boxes.setdefault(server.toolbox, []).append(config)
    toolboxes = tuple(
        ToolboxConfig(name, f"{name} tools", tuple(configs)) for name, configs in boxes.items()
    )
    return TenantConfig(1, "bench", True, 1, toolboxes)


def gateway_rows(servers: list[Server], queries: list[str]) -> list[Row]:
    """KnownTools fed and asked as search_tools does (see the module's text)."""
    config = snapshot(servers)
    listings = {(s.toolbox, s.name): Listing.stored(s.tools) for s in servers}
    keys = [server_key(s.toolbox, s.name) for s in servers]
    few = keys[: max(1, len(keys) // 10)]
    known = KnownTools(NoConnections())

    async def search(query: str, allowed: list[str]) -> list[dict[str, Any]]:
        known.live(config)
        await known.update(config, listings)
        return known.search(1, query, allowed, LIMIT)

    async def timed(allowed: list[str]) -> tuple[list[float], list[float]]:
        """Each search's wall and CPU milliseconds (this thread's: a search that changes
        nothing runs on the event loop's), the CPU being what a loaded machine leaves be."""
        for query in queries[:WARM_UP]:
            await search(query, allowed)
        walls, cpus = [], []
        for query in queries:
            started, cpu = time.perf_counter(), time.thread_time()
            await search(query, allowed)
            walls.append(1000 * (time.perf_counter() - started))
            cpus.append(1000 * (time.thread_time() - cpu))
        return walls, cpus

    async def changes() -> tuple[list[float], bool]:
        samples, found = [], True
        step = max(1, len(servers) // REPLACED)
        for server in servers[::step][:REPLACED]:
            tools = [dict(tool, name=f"{tool['name']}_v2") for tool in server.tools]
            listings[(server.toolbox, server.name)] = Listing.stored(tools)
            query = f"{tools[0]['name']} {tools[0]['description'][:80]}"
            started = time.perf_counter()
            hits = await search(query, [server_key(server.toolbox, server.name)])
            samples.append(1000 * (time.perf_counter() - started))
            found = found and any(hit["name"] == tools[0]["name"] for hit in hits)
            found = found and all(hit["name"].endswith("_v2") for hit in hits)
        return samples, found

    Timed = tuple[list[float], list[float]]

    async def run() -> tuple[float, float, float, Timed, Timed, list[float], bool]:
        gc.collect()
        before = rss_kib(os.getpid())
        started, cpu = time.perf_counter(), time.process_time()
        await known.update(config, listings)
        build, build_cpu = time.perf_counter() - started, time.process_time() - cpu
        gc.collect()
        added = (rss_kib(os.getpid()) - before) / 1024
        every, some = await timed(keys), await timed(few)
        swaps, found = await changes()
        return build, build_cpu, added, every, some, swaps, found

    build, build_cpu, added, every, some, swaps, found = anyio.run(run)
    name = f"gateway path (KnownTools), {sum(len(s.tools) for s in servers):,} tools"
    return [
        Row(SECTION, f"{name}: first update, wall / CPU (s)", f"{build:.2f} / {build_cpu:.2f}"),
        Row(SECTION, f"{name}: resident memory added (MiB)", f"{added:.1f}"),
        *(
            Row(
                SECTION,
                f"{name}: search p50 / p99 (ms), {len(queries)} queries, {servers_allowed}, "
                "wall; CPU",
                f"{percentile(walls, 50):.2f} / {percentile(walls, 99):.2f}; "
                f"{percentile(cpus, 50):.2f} / {percentile(cpus, 99):.2f}",
            )
            for servers_allowed, (walls, cpus) in (
                (f"all {len(keys)} servers", every),
                (f"{len(few)} servers", some),
            )
        ),
        Row(
            SECTION,
            f"{name}: one server's new listing, the next search: p50 / slowest of "
            f"{len(swaps)} (ms)",
            f"{percentile(swaps, 50):.1f} / {max(swaps):.1f}",
        ),
        Row(
            SECTION,
            f"{name}: that search finds the new tools, not the old",
            "yes" if found else "NO",
        ),
    ]


def in_own_process(quick: bool) -> list[Row]:
    """The gateway path's rows, measured by this script in a fresh process."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "rows.json"
        command = [sys.executable, __file__, "--path", "gateway", "--json", str(out)]
        subprocess.run([*command, *(["--quick"] if quick else [])], check=True, timeout=600)
        return [Row(**row) for row in json.loads(out.read_text())]


def main() -> None:
    parser = arguments(__doc__ or "")
    parser.add_argument("--path", choices=("index", "gateway"), help="only this one")
    options = parser.parse_args()
    server_count, query_count = (20, 100) if options.quick else (200, 1000)
    servers = tenant(server_count, TOOLS_PER_SERVER)
    queries = mixed_queries(query_count)
    if options.path == "gateway":
        report(gateway_rows(servers, queries), options.json, "Tool search speed, gateway path")
        return
    tools = server_count * TOOLS_PER_SERVER
    allowed = [server.key for server in servers]

    gc.collect()
    before = rss_kib(os.getpid())
    started, cpu = time.perf_counter(), time.process_time()
    index = ToolIndex()
    index.replace_servers(entries(servers))
    build, build_cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.collect()
    added = (rss_kib(os.getpid()) - before) / 1024

    one_by_one = ToolIndex()  # the tokenizer's cache is warm now: the engine's share
    started = time.perf_counter()
    for entry in entries(servers):
        one_by_one.replace_servers([entry])
    each = time.perf_counter() - started
    del one_by_one

    every = timed_searches(index, queries, allowed)
    few = max(1, server_count // 10)
    some = timed_searches(index, queries, allowed[:few])
    swaps, found = replaced(index, servers)
    name = f"{tools:,} tools in {server_count} servers"
    rows = [
        Row(
            SECTION,
            f"{name}: build, one write, cold tokenizer, wall / CPU (s)",
            f"{build:.2f} / {build_cpu:.2f}",
        ),
        Row(SECTION, f"{name}: build, {server_count} writes, warm tokenizer (s)", f"{each:.2f}"),
        Row(SECTION, f"{name}: resident memory added (MiB)", f"{added:.1f}"),
        Row(
            SECTION,
            f"search p50 / p99 (ms), {len(queries)} queries, all {server_count} servers allowed",
            f"{percentile(every, 50):.2f} / {percentile(every, 99):.2f}",
        ),
        Row(
            SECTION,
            f"search p50 / p99 (ms), {len(queries)} queries, {few} servers allowed",
            f"{percentile(some, 50):.2f} / {percentile(some, 99):.2f}",
        ),
        Row(
            SECTION,
            f"replace one server's {TOOLS_PER_SERVER} tools: p50 / slowest of {len(swaps)} (ms)",
            f"{percentile(swaps, 50):.1f} / {max(swaps):.1f}",
        ),
        Row(SECTION, "the next search finds the new tools, not the old", "yes" if found else "NO"),
    ]
    if options.path is None:
        rows += in_own_process(options.quick)
    report(rows, options.json, "Tool search speed")


if __name__ == "__main__":
    main()
