"""Tool search speed: a tenant of 10,000 tools in 200 servers, in one process.

    .venv/bin/python bench/search_speed.py [--quick] [--json FILE]

The tenant is made of both datasets' tools in turn (bench/search_data.py: deterministic,
50 tools a server, 20 toolboxes). Measured on `mcp_gateway.search`'s index:

- build: every server's tools tokenized and indexed in one write (`replace_servers`), from
  a cold tokenizer cache; and the same one server at a time (200 writes, a commit each);
- resident memory the index added (the process's RSS after the build, less before it;
  the tokenizer's cache included);
- search: 1,000 queries (half MetaTool's, half Gorilla's, shuffled), 10 hits each, every
  server allowed, then a tenth of them; p50 and p99 after 50 warm-up queries;
- replacing one server's 50 tools with new ones (20 servers in turn): p50 and the slowest,
  and whether the next search finds the new tools.

--quick: 1,000 tools in 20 servers, 100 queries.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Row, arguments, percentile, report, rss_kib
from bench.search_data import Server, mixed_queries, tenant
from mcp_gateway import Described, ToolIndex

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


def main() -> None:
    options = arguments(__doc__ or "").parse_args()
    server_count, query_count = (20, 100) if options.quick else (200, 1000)
    servers = tenant(server_count, TOOLS_PER_SERVER)
    queries = mixed_queries(query_count)
    tools = server_count * TOOLS_PER_SERVER
    allowed = [server.key for server in servers]

    gc.collect()
    before = rss_kib(os.getpid())
    started = time.perf_counter()
    index = ToolIndex()
    index.replace_servers(entries(servers))
    build = time.perf_counter() - started
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
        Row(SECTION, f"{name}: build, one write, cold tokenizer (s)", f"{build:.2f}"),
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
    report(rows, options.json, "Tool search speed")


if __name__ == "__main__":
    main()
