"""The meta-tools' argument models and their client-facing JSON schemas.

Validation is pydantic's; `parse_open_args`, `parse_use_args` and `parse_search_args` only
translate its errors into the spec's texts, structural problems first (an old-style key
such as `toolbox_name` is reported as unrecognized, not as a missing `toolbox`), then empty
names in the order toolbox, server, name.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from mcp_gateway.metatools import errors
from mcp_gateway.observe.outcome import Named

STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class OpenToolboxArgs(BaseModel):
    model_config = STRICT
    toolbox: str


class ToolRef(BaseModel):
    model_config = STRICT
    toolbox: str
    server: str
    name: str


class UseToolArgs(BaseModel):
    model_config = STRICT
    tool: ToolRef
    arguments: dict[str, Any] = Field(default_factory=dict)


# The contract's bounds of search_tools' `limit`, and its default.
SEARCH_LIMIT_MIN, SEARCH_LIMIT_MAX, SEARCH_LIMIT_DEFAULT = 1, 50, 10


class SearchToolsArgs(BaseModel):
    model_config = STRICT
    query: str
    toolbox: str | None = None  # None: every toolbox the credential may open
    limit: int = SEARCH_LIMIT_DEFAULT


_NAME = {"type": "string", "minLength": 1}

OPEN_TOOLBOX_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"toolbox": {**_NAME, "description": "Name of the toolbox to open."}},
    "required": ["toolbox"],
    "additionalProperties": False,
}

USE_TOOL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool": {
            "type": "object",
            "description": "Which tool to call, as listed by open_toolbox.",
            "properties": {
                "toolbox": {**_NAME, "description": "The open toolbox that holds the tool."},
                "server": {**_NAME, "description": "The tool's `server` from open_toolbox."},
                "name": {**_NAME, "description": "The tool's `name` from open_toolbox."},
            },
            "required": ["toolbox", "server", "name"],
            "additionalProperties": False,
        },
        "arguments": {
            "type": "object",
            "description": "Arguments for the tool, matching its inputSchema. Default {}.",
        },
    },
    "required": ["tool"],
    "additionalProperties": False,
}

SEARCH_TOOLS_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            **_NAME,
            "description": "What you want to do or find, in words (any language).",
        },
        "toolbox": {**_NAME, "description": "Search this toolbox only. Default: all of them."},
        "limit": {
            "type": "integer",
            "minimum": SEARCH_LIMIT_MIN,
            "maximum": SEARCH_LIMIT_MAX,
            "default": SEARCH_LIMIT_DEFAULT,
            "description": "How many tools to return at most, the best match first.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

_JSON_TYPES = {"string": "a string", "dict": "an object", "model": "an object"}


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _describe(error: ErrorDetails) -> str:
    """One readable sentence for a pydantic error, naming the field by its JSON path."""
    loc = error["loc"]
    kind = error["type"]
    if kind == "extra_forbidden":
        key = loc[-1]
        parent = _where(loc[:-1])
        return f"Unrecognized key: '{key}'" + (f" in {parent}" if parent else "")
    if kind == "missing":
        return f"{_where(loc)} is required"
    expected = next((text for name, text in _JSON_TYPES.items() if kind.startswith(name)), None)
    if expected:
        return f"{_where(loc)} must be {expected}"
    return f"{_where(loc)}: {error['msg']}" if loc else error["msg"]


def _first_structural(exc: ValidationError) -> str:
    details = exc.errors(include_url=False, include_input=False, include_context=False)
    details.sort(key=lambda error: error["type"] != "extra_forbidden")
    return _describe(details[0])


def _is_blank(value: str) -> bool:
    return not value.strip()


def parse_open_args(arguments: dict[str, Any] | None) -> OpenToolboxArgs:
    try:
        args = OpenToolboxArgs.model_validate(arguments or {})
    except ValidationError as exc:
        raise errors.open_invalid(_first_structural(exc)) from None
    if _is_blank(args.toolbox):
        raise errors.open_invalid("toolbox cannot be empty")
    return args


def parse_use_args(arguments: dict[str, Any] | None) -> UseToolArgs:
    try:
        args = UseToolArgs.model_validate(arguments or {})
    except ValidationError as exc:
        raise errors.use_invalid(_first_structural(exc)) from None
    for field in ("toolbox", "server", "name"):
        if _is_blank(getattr(args.tool, field)):
            raise errors.use_empty(field)
    return args


def parse_search_args(arguments: dict[str, Any] | None) -> SearchToolsArgs:
    """An unknown key first, then a bad `limit` (one text whatever is wrong with it), then
    the rest; then a blank query, then a blank toolbox."""
    try:
        args = SearchToolsArgs.model_validate(arguments or {})
    except ValidationError as exc:
        details = exc.errors(include_url=False, include_input=False, include_context=False)
        if not any(error["type"] == "extra_forbidden" for error in details) and any(
            error["loc"][:1] == ("limit",) for error in details
        ):
            raise errors.search_bad_limit(SEARCH_LIMIT_MIN, SEARCH_LIMIT_MAX) from None
        raise errors.open_invalid(_first_structural(exc)) from None
    if not SEARCH_LIMIT_MIN <= args.limit <= SEARCH_LIMIT_MAX:
        raise errors.search_bad_limit(SEARCH_LIMIT_MIN, SEARCH_LIMIT_MAX)
    if _is_blank(args.query):
        raise errors.open_invalid("query cannot be empty")
    if args.toolbox is not None and _is_blank(args.toolbox):
        raise errors.open_invalid("toolbox cannot be empty")
    return args


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def named_toolbox(arguments: object) -> Named:
    """The toolbox an open_toolbox names, valid or not (what the call log keeps)."""
    toolbox = arguments.get("toolbox") if isinstance(arguments, dict) else None
    return Named(toolbox=_text(toolbox))


def named_search(arguments: object) -> Named:
    """The toolbox a search_tools names, if any (what the call log keeps; the query is in
    its arguments)."""
    return named_toolbox(arguments)


def named_tool(arguments: object) -> Named:
    """The tool a use_tool names, valid or not: each part that is a string."""
    ref = arguments.get("tool") if isinstance(arguments, dict) else None
    ref = ref if isinstance(ref, dict) else {}
    return Named(_text(ref.get("toolbox")), _text(ref.get("server")), _text(ref.get("name")))
