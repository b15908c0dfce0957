"""Finding a tool by a query among a tenant's toolboxes (what `search_tools` answers from).

A room of the gateway that imports no other room and no Django: `tokens` (the one
tokenizer of documents and queries, its word lists and weights), `documents` (a tool's
document from its definition and its server's and toolbox's names), `index` (a tenant's
in-memory tantivy index, one server's tools replaced at a time). `metatools.known_tools`
keeps one per tenant and feeds it.
"""
