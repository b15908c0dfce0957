"""Tool search quality: recall@5, recall@10 and MRR on MetaTool and Gorilla APIBench.

    .venv/bin/python bench/search_quality.py [--quick] [--json FILE]

Two searches over the same tools and queries, measured in one run, side by side:

- plain BM25: tantivy over two fields, the tool's name and description, with tantivy's
  default tokenizer (split on non-alphanumerics, lowercase, no stemming), the query's words
  any of them (what a search box over the tool list would do);
- Workbench: `mcp_gateway.search` (its own tokenizer, one weighted field of name, title,
  description, parameters, server and toolbox, a low-boost field of grams), every server
  allowed.

Recall@k is the share of queries with a right tool among the first k; MRR is the mean of
1/rank of the first right tool in the first 10 (0 when none). The datasets and how they
are made: bench/data/search/README.md. --quick: 100 queries of each.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import tantivy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Row, arguments, report
from bench.search_data import Dataset, Server, gorilla, metatool
from mcp_gateway import Described, ToolIndex

SECTION = "13 search quality"
DEPTH = 10
QUICK_QUERIES = 100
Hit = tuple[str, str]  # (server key, tool name)


class PlainBM25:
    """tantivy's BM25 over name and description with its default tokenizer."""

    def __init__(self, servers: Sequence[Server]) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("server", stored=True, tokenizer_name="raw")
        builder.add_text_field("tool", stored=True, tokenizer_name="raw")
        builder.add_text_field("name", tokenizer_name="default")
        builder.add_text_field("description", tokenizer_name="default")
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema)
        # What the "default" tokenizer is: the simple one, long tokens dropped, lowercase.
        self.analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .build()
        )
        writer = self.index.writer(heap_size=15_000_000, num_threads=1)
        for server in servers:
            for tool in server.tools:
                writer.add_document(
                    tantivy.Document(
                        server=server.key,
                        tool=tool["name"],
                        name=tool["name"],
                        description=tool.get("description") or "",
                    )
                )
        writer.commit()
        self.index.reload()

    def search(self, query: str, limit: int) -> list[Hit]:
        words = dict.fromkeys(self.analyzer.analyze(query))
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, field, word))
            for word in words
            for field in ("name", "description")
        ]
        if not clauses:
            return []
        searcher = self.index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(clauses), limit).hits
        found = [searcher.doc(address) for _, address in hits]
        return [(doc.get_first("server"), doc.get_first("tool")) for doc in found]


class Workbench:
    """mcp_gateway.search's index, one server at a time, every server allowed."""

    def __init__(self, servers: Sequence[Server]) -> None:
        self.index = ToolIndex()
        for server in servers:
            self.index.replace_server(
                server.key,
                Described(server.toolbox),
                Described(server.name, server.description),
                server.tools,
            )
        self.allowed = [server.key for server in servers]

    def search(self, query: str, limit: int) -> list[Hit]:
        hits = self.index.search(query, self.allowed, limit)
        return [(hit.server_key, hit.tool) for hit in hits]


def scores(engine: PlainBM25 | Workbench, dataset: Dataset) -> tuple[float, float, float, float]:
    """Recall@5 and @10 (%), MRR@10, and ms per query."""
    at5 = at10 = reciprocal = 0.0
    started = time.perf_counter()
    for query, right in dataset.queries:
        ranked = engine.search(query, DEPTH)
        first = next((rank for rank, hit in enumerate(ranked, 1) if hit in right), None)
        if first is not None:
            at5 += first <= 5
            at10 += 1
            reciprocal += 1 / first
    elapsed = time.perf_counter() - started
    count = len(dataset.queries)
    return 100 * at5 / count, 100 * at10 / count, reciprocal / count, 1000 * elapsed / count


def dataset_rows(dataset: Dataset) -> list[Row]:
    plain = scores(PlainBM25(dataset.servers), dataset)
    ours = scores(Workbench(dataset.servers), dataset)
    name = f"{dataset.name} ({dataset.tool_count} tools, {len(dataset.queries)} queries)"
    rows = [
        Row(SECTION, f"{name}: {figure}, plain BM25 / Workbench", f"{a:{form}} / {b:{form}}")
        for figure, a, b, form in (
            ("recall@5 (%)", plain[0], ours[0], ".1f"),
            ("recall@10 (%)", plain[1], ours[1], ".1f"),
            ("MRR", plain[2], ours[2], ".3f"),
            ("ms per query", plain[3], ours[3], ".2f"),
        )
    ]
    return rows


def main() -> None:
    options = arguments(__doc__ or "").parse_args()
    queries = QUICK_QUERIES if options.quick else None
    rows = dataset_rows(metatool(queries)) + dataset_rows(gorilla(queries))
    report(rows, options.json, "Tool search quality: plain BM25 beside Workbench's search")


if __name__ == "__main__":
    main()
