"""What a model reads: a `search_tools` answer of 5 tools against `open_toolbox` of every
toolbox, for the stored tool sets loaded in one tenant.

    .venv/bin/python bench/search_tokens.py [--quick] [--json FILE]

The issue's figure is for a public set of real MCP servers' definitions (70 servers, 527
tools); that set is not stored in bench/data/search/, so the two stored sets stand in
(bench/search_data.py): Gorilla APIBench (1,726 APIs with their parameters, a toolbox per
framework, a server per domain: the nearest to MCP tool definitions) and MetaTool (199 ChatGPT
plugins, name and description only, one toolbox). Each answer is the JSON the gateway
sends, as its text content (`json.dumps(..., ensure_ascii=False)`; the client gets the
same object again as `structuredContent`, counted once here): `open_toolbox`'s
`{"toolbox", "description", "servers_connected", "tools"}` per toolbox, summed over the
toolboxes, and of the one toolbox that holds a query's right tool (what a model that knows
where to look opens; median over the queries); `search_tools`' `{"query", "tools"}` with
the 5 best tools of the tenant's index (`mcp_gateway.search`, as the gateway searches it)
for each of the dataset's first 200 queries (--quick: 50), median and largest. Tokens are
estimated as characters / 4.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Row, arguments, median, report
from bench.search_data import Dataset, gorilla, metatool
from mcp_gateway import Described, ToolIndex

SECTION = "15 search tokens"
LIMIT = 5
CHARS_PER_TOKEN = 4


def entry(tool: dict[str, Any], server: str, toolbox: str) -> dict[str, Any]:
    """A tool as open_toolbox and search_tools list it."""
    return {**tool, "server": server, "toolbox": toolbox}


def open_answers(dataset: Dataset) -> dict[str, int]:
    """Characters of each toolbox's open_toolbox answer, by toolbox."""
    toolboxes: dict[str, list[Any]] = {}
    for server in dataset.servers:
        toolboxes.setdefault(server.toolbox, []).append(server)
    sizes = {}
    for name, servers in toolboxes.items():
        answer = {
            "toolbox": name,
            "description": f"{name} tools",
            "servers_connected": len(servers),
            "tools": [entry(tool, s.name, name) for s in servers for tool in s.tools],
        }
        sizes[name] = len(json.dumps(answer, ensure_ascii=False))
    return sizes


def right_toolboxes(dataset: Dataset, queries: int, opens: dict[str, int]) -> list[int]:
    """Characters of the open_toolbox answer of the toolbox holding each query's answer."""
    toolbox_of = {s.key: s.toolbox for s in dataset.servers}
    return [
        opens[toolbox_of[min(answers)[0]]] for _, answers in dataset.queries[:queries] if answers
    ]


def search_answers(dataset: Dataset, queries: int) -> list[int]:
    """Characters of each search_tools answer of LIMIT tools, for the first queries."""
    index = ToolIndex()
    index.replace_servers(
        (s.key, Described(s.toolbox), Described(s.name, s.description), s.tools)
        for s in dataset.servers
    )
    by_key = {s.key: s for s in dataset.servers}
    keys = list(by_key)
    sizes = []
    for query, _ in dataset.queries[:queries]:
        tools = []
        for hit in index.search(query, keys, LIMIT):
            server = by_key[hit.server_key]
            tool = next(t for t in server.tools if t["name"] == hit.tool)
            tools.append(entry(tool, server.name, server.toolbox))
        sizes.append(len(json.dumps({"query": query, "tools": tools}, ensure_ascii=False)))
    return sizes


def main() -> None:
    options = arguments(__doc__ or "").parse_args()
    queries = 50 if options.quick else 200
    rows = []
    for dataset in (gorilla(queries), metatool(queries)):
        opens = open_answers(dataset)
        opened = sum(opens.values())
        right = median(right_toolboxes(dataset, queries, opens))
        sizes = search_answers(dataset, queries)
        typical = median(sizes)
        boxes = f"{len(opens)} toolbox" + ("es" if len(opens) > 1 else "")
        name = f"{dataset.name} ({dataset.tool_count:,} tools, {boxes})"
        rows += [
            Row(
                SECTION,
                f"{name}: open_toolbox of every toolbox, characters (~tokens)",
                f"{opened:,} (~{opened // CHARS_PER_TOKEN:,})",
            ),
            Row(
                SECTION,
                f"{name}: open_toolbox of the toolbox holding the answer, median, "
                "characters (~tokens)",
                f"{right:,.0f} (~{right / CHARS_PER_TOKEN:,.0f})",
            ),
            Row(
                SECTION,
                f"{name}: search_tools of {LIMIT} tools, median / largest of {len(sizes)} "
                "queries, characters (~tokens)",
                f"{typical:,.0f} / {max(sizes):,} (~{typical / CHARS_PER_TOKEN:,.0f})",
            ),
            Row(
                SECTION,
                f"{name}: open every toolbox / one search (median), ratio",
                f"{opened / typical:,.0f}x",
            ),
        ]
    report(rows, options.json, "What a model reads: search_tools against open_toolbox")


if __name__ == "__main__":
    main()
