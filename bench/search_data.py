"""The tool search benchmarks' datasets (bench/data/search/) as a tenant's servers and tools.

Shared by search_quality.py and search_speed.py (not a benchmark itself). A tool is the
definition `open_toolbox` lists (name, title, description, inputSchema's properties); a
server holds tools, in a toolbox. MetaTool's tools are ChatGPT plugins: each is a server of
its own with one tool of its name, in a toolbox `metatool`. Gorilla's APIs are grouped by
hub and domain: the hub (`Hugging Face Transformers`) is the toolbox, the domain the server.
"""

from __future__ import annotations

import csv
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "search"
QUERY_SEED = 0  # the speed benchmark's mix of both datasets' queries


@dataclass
class Server:
    """One server of the benchmark tenant: its key (`toolbox/server`), names, tools."""

    key: str
    toolbox: str
    name: str
    description: str
    tools: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Dataset:
    """Servers, and queries each with the (server key, tool name) pairs that answer it."""

    name: str
    servers: list[Server]
    queries: list[tuple[str, frozenset[tuple[str, str]]]]

    @property
    def tool_count(self) -> int:
        return sum(len(server.tools) for server in self.servers)


def definition(name: str, description: str, title: str = "", **parameters: str) -> dict[str, Any]:
    properties = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    found: dict[str, Any] = {"name": name, "description": description}
    if title:
        found["title"] = title
    found["inputSchema"] = {"type": "object", "properties": properties}
    return found


def metatool(queries: int | None = None) -> Dataset:
    """MetaTool: 199 tools, 2,000 queries (the first `queries` of them if given)."""
    tools: dict[str, str] = json.loads((DATA / "metatool_tools.json").read_text())
    servers = [
        Server(f"metatool/{name}", "metatool", name, "", [definition(name, text)])
        for name, text in tools.items()
    ]
    with (DATA / "metatool_queries.csv").open(newline="") as file:
        rows = list(csv.DictReader(file))[:queries]
    answers = [
        (row["query"], frozenset({(f"metatool/{row['tool']}", row["tool"])})) for row in rows
    ]
    return Dataset("MetaTool", servers, answers)


def gorilla(queries: int | None = None) -> Dataset:
    """Gorilla APIBench: 1,726 APIs, 1,703 queries (the first `queries` if given). Several
    APIs share a name within a server; a hit names a (server, tool name) pair, right when any
    API of that pair makes the expected call."""
    servers: dict[str, Server] = {}
    by_call: dict[int, set[tuple[str, str]]] = {}
    for line in (DATA / "gorilla_tools.jsonl").read_text().splitlines():
        api = json.loads(line)
        key = f"{api['framework']}/{api['domain']}"
        server = servers.setdefault(
            key, Server(key, api["framework"], api["domain"], api["domain"])
        )
        parameters = dict(api["arguments"])
        server.tools.append(definition(api["name"], api["description"], api["title"], **parameters))
        by_call.setdefault(api["call"], set()).add((key, api["name"]))
    lines = (DATA / "gorilla_queries.jsonl").read_text().splitlines()[:queries]
    answers = [(case["query"], frozenset(by_call[case["call"]])) for case in map(json.loads, lines)]
    return Dataset("Gorilla APIBench", list(servers.values()), answers)


def tenant(server_count: int, tools_per_server: int) -> list[Server]:
    """A tenant of server_count x tools_per_server tools made from both datasets' tools, in
    turn (deterministic): server s holds the pool's tools from s * tools_per_server on,
    under its own name and toolbox (one of 20)."""
    pool = [
        (server, tool)
        for dataset in (metatool(0), gorilla(0))
        for server in dataset.servers
        for tool in server.tools
    ]
    made = []
    for number in range(server_count):
        base, _ = pool[number * tools_per_server % len(pool)]
        toolbox = f"box{number % 20}"
        name = f"{base.name[:40]}-{number}"
        server = Server(f"{toolbox}/{name}", toolbox, name, base.description)
        for index in range(tools_per_server):
            server.tools.append(pool[(number * tools_per_server + index) % len(pool)][1])
        made.append(server)
    return made


def mixed_queries(count: int) -> list[str]:
    """`count` queries, half MetaTool's and half Gorilla's, shuffled (seeded)."""
    half = count // 2
    found = [query for query, _ in metatool(half).queries + gorilla(count - half).queries]
    random.Random(QUERY_SEED).shuffle(found)
    return found
