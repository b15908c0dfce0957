"""A tool's search document: its definition's words, weighted, and its server's and
toolbox's.

The definition is the one `open_toolbox` lists (a downstream server's own: `name`, `title`,
`description`, `inputSchema`'s properties with their descriptions). It comes from a server
the gateway does not control, so every part is read defensively: a part of the wrong type
counts as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mcp_gateway.search.tokens import NAME_WEIGHT, TEXT_WEIGHT, TITLE_WEIGHT, Tokens, tokens


@dataclass(frozen=True)
class Described:
    """A server or toolbox as a document sees it: its name and description."""

    name: str
    description: str = ""


@dataclass(frozen=True)
class ToolDocument:
    """What the index stores of a tool: whose it is, and its three fields' text."""

    tool: str
    words: str  # weighted words, space-separated (tantivy's whitespace tokenizer)
    grams: str
    pairs: str  # neighbouring words of each part, once (weighting them measured no better)


def tool_document(tool: Mapping[str, Any], server: Described, toolbox: Described) -> ToolDocument:
    """The document of one tool definition; its name must be a non-empty string."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a tool definition without a name")
    parts = (
        (tokens(name), NAME_WEIGHT),
        (tokens(_text(tool.get("title"))), TITLE_WEIGHT),
        (tokens(_text(tool.get("description"))), TEXT_WEIGHT),
        (tokens(_parameters(tool.get("inputSchema"))), TEXT_WEIGHT),
        (_context(server, toolbox), TEXT_WEIGHT),
    )
    words = [word for part, weight in parts for _ in range(weight) for word in part.words]
    grams = [gram for part, _ in parts for gram in part.grams]
    pairs = [pair for part, _ in parts for pair in part.pairs]
    return ToolDocument(name, " ".join(words), " ".join(grams), " ".join(pairs))


@lru_cache(maxsize=1024)
def _context(server: Described, toolbox: Described) -> Tokens:
    """The server's and toolbox's tokens: once for all of a server's tools."""
    return tokens(" ".join((server.name, server.description, toolbox.name, toolbox.description)))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _parameters(schema: object) -> str:
    """The input schema's top-level property names and descriptions, as one text."""
    if not isinstance(schema, Mapping):
        return ""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    texts: list[str] = []
    for key, value in properties.items():
        texts.append(_text(key))
        if isinstance(value, Mapping):
            texts.append(_text(value.get("description")))
    return " ".join(texts)
