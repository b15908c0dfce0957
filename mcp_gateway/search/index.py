"""A tenant's tools, searchable: one tantivy index in memory, one server's tools at a time.

Each tool is a document holding its server's key, its name, its weighted words, its grams
and its pairs of neighbouring words (tokens.py). A server's tools are replaced by deleting
its key's documents and adding the new ones in one commit, so a change of one server costs
milliseconds whatever the tenant's size. A search is a required clause on the caller's
servers (the permission filter: a server not in `allowed_servers` is never returned) and
BM25 over the query's words, plus its grams and its pairs of neighbouring words, each at a
boost of its own.

Threads: writes (`replace_server`, `replace_servers`, `remove_server`) hold a lock, so they
apply one after another; each is one commit, after which the next search sees it (the
write returns once its search reader is reloaded). A search takes no lock: it reads the
last commit's segments, so it sees each server's tools all old or all new, never a mix.
For one process; another process has its own index.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import tantivy

from mcp_gateway.search.documents import Described, ToolDocument, tool_document
from mcp_gateway.search.tokens import GRAMS_BOOST, PAIRS_BOOST, tokens

# tantivy's writer needs at least 15 MB of indexing arena; one thread is enough for the
# few hundred tools of a server.
_WRITER_HEAP = 15_000_000
_SERVER, _TOOL, _WORDS, _GRAMS, _PAIRS = "server", "tool", "words", "grams", "pairs"
# (server key, its toolbox, the server, its tool definitions): what replace_servers takes.
ServerTools = tuple[str, Described, Described, Iterable[Mapping[str, Any]]]


@dataclass(frozen=True)
class SearchHit:
    """One found tool: its server's key (as given to `replace_server`), name and score."""

    server_key: str
    tool: str
    score: float


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(_SERVER, stored=True, tokenizer_name="raw")
    builder.add_text_field(_TOOL, stored=True, tokenizer_name="raw", index_option="basic")
    # Frequencies, no positions: BM25 needs no more (the pairs do a phrase's work), and
    # positions were a tenth of the index's memory.
    for field in (_WORDS, _GRAMS, _PAIRS):
        builder.add_text_field(field, tokenizer_name="whitespace", index_option="freq")
    return builder.build()


class ToolIndex:
    """One tenant's tools across its toolboxes, in memory."""

    def __init__(self) -> None:
        self._schema = _schema()
        self._index = tantivy.Index(self._schema)
        # Reloaded by each write itself, at once: tantivy's own policy reloads on a thread of
        # its own, which holds the index's lock and makes an explicit reload wait 100 ms.
        self._index.config_reader(reload_policy="manual")
        self._writer = self._index.writer(heap_size=_WRITER_HEAP, num_threads=1)
        self._lock = threading.Lock()

    def replace_server(
        self,
        server_key: str,
        toolbox: Described,
        server: Described,
        tools: Iterable[Mapping[str, Any]],
    ) -> None:
        """Make `tools` the server's only tools in the index (none: the server is gone).

        A definition without a name is skipped: it cannot be called either."""
        self.replace_servers([(server_key, toolbox, server, tools)])

    def replace_servers(self, servers: Iterable[ServerTools]) -> None:
        """`replace_server` for many servers in one commit (a tenant's first build: a
        commit costs milliseconds).

        Each document is made and handed to the writer in turn, under the lock: a tenant's
        10,000 documents all made first, then added, left their text's memory resident
        (freed, but kept by the allocator): 67 MiB added against 36 made in turn. The
        tenant's writes are one after another anyway (`known_tools` holds its lock)."""
        entries = list(servers)
        with self._lock:
            try:
                for key, *_ in entries:
                    self._writer.delete_documents_by_term(_SERVER, key)
                for key, toolbox, server, tools in entries:
                    for tool in tools:
                        if _named(tool):
                            document = tool_document(tool, server, toolbox)
                            self._writer.add_document(self._document(key, document))
            except BaseException:
                self._writer.rollback()  # none of this write, not half of it
                raise
            self._commit()

    def remove_server(self, server_key: str) -> None:
        """The server's tools leave the index."""
        with self._lock:
            self._writer.delete_documents_by_term(_SERVER, server_key)
            self._commit()

    def _commit(self) -> None:
        self._writer.commit()
        self._index.reload()

    def search(self, query: str, allowed_servers: Collection[str], limit: int) -> list[SearchHit]:
        """The best `limit` tools of the allowed servers for `query`, best first."""
        found = tokens(query, query=True)
        words, grams = dict.fromkeys(found.words), dict.fromkeys(found.grams)
        pairs = dict.fromkeys(found.pairs)
        if limit <= 0 or not allowed_servers or not (words or grams):
            return []
        should = tantivy.Occur.Should
        clauses = [(should, self._term(_WORDS, word)) for word in words]
        clauses += [
            (should, tantivy.Query.boost_query(self._term(_GRAMS, gram), GRAMS_BOOST))
            for gram in grams
        ]
        clauses += [
            (should, tantivy.Query.boost_query(self._term(_PAIRS, pair), PAIRS_BOOST))
            for pair in pairs
        ]
        allowed = tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(self._schema, _SERVER, list(allowed_servers)), 0.0
        )
        query_of = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.boolean_query(clauses)),
                (tantivy.Occur.Must, allowed),
            ]
        )
        searcher = self._index.searcher()
        hits = []
        for score, address in searcher.search(query_of, limit).hits:
            document = searcher.doc(address)
            hits.append(
                SearchHit(str(document.get_first(_SERVER)), str(document.get_first(_TOOL)), score)
            )
        return hits

    def _term(self, field: str, value: str) -> tantivy.Query:
        return tantivy.Query.term_query(self._schema, field, value)

    def _document(self, server_key: str, document: ToolDocument) -> tantivy.Document:
        return tantivy.Document(
            **{
                _SERVER: server_key,
                _TOOL: document.tool,
                _WORDS: document.words,
                _GRAMS: document.grams,
                _PAIRS: document.pairs,
            }
        )


def _named(tool: Mapping[str, Any]) -> bool:
    name = tool.get("name")
    return isinstance(name, str) and bool(name)
