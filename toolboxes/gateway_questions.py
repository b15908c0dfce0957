"""What the admins' world asks the gateway, declared here so that it imports nothing of it.

The admin's pages ask the gateway four things: to check servers as it would connect them
(`check_servers`), what a key's client would be told and could open (`key_sees`, with
`estimated_tokens` for its sizes), what a model would find for a query (`find_tools`), and
a tenant's own endpoint (`tenant_endpoint`). The
answers are the gateway's; the top of the house (`workbench_site`, the composition root)
registers them when the apps are ready (`answer_with`). Asked before that: `NotAnswered`.

What an answer holds is typed here by Protocols the gateway's results satisfy (mypy checks
it where the site registers them); a check's result is the kernel's `CheckResult`, which
the admin also rebuilds from a server's row and the shared store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kernel.check_results import CheckResult

if TYPE_CHECKING:
    from toolboxes.models import Server


class SeenServer(Protocol):
    """One server of a toolbox, as a key's client would see it."""

    @property
    def name(self) -> str: ...
    @property
    def server_id(self) -> int: ...
    @property
    def discovered(self) -> bool: ...
    @property
    def tools(self) -> tuple[str, ...]: ...
    @property
    def held(self) -> tuple[str, ...]: ...
    @property
    def filtered_out(self) -> tuple[str, ...]: ...
    @property
    def size(self) -> int: ...


class SeenToolbox(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def servers(self) -> Sequence[SeenServer]: ...
    @property
    def size(self) -> int: ...
    @property
    def tool_count(self) -> int: ...


class KeySees(Protocol):
    """What a key's client is told (`instructions`) and can open, with sizes in bytes."""

    @property
    def instructions(self) -> str: ...
    @property
    def toolboxes(self) -> Sequence[SeenToolbox]: ...
    @property
    def meta_tools_size(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def tool_count(self) -> int: ...


class FoundTool(Protocol):
    """One tool a search found: `entry` is its tool entry as `open_toolbox` lists it."""

    @property
    def rank(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def server_id(self) -> int: ...
    @property
    def entry(self) -> Mapping[str, Any]: ...
    @property
    def name(self) -> str: ...
    @property
    def server(self) -> str: ...
    @property
    def toolbox(self) -> str: ...
    @property
    def description(self) -> str: ...


class NotSearched(Protocol):
    """An enabled server whose tools are not known (never listed, or its check failed)."""

    @property
    def toolbox(self) -> str: ...
    @property
    def server(self) -> str: ...
    @property
    def server_id(self) -> int: ...
    @property
    def reason(self) -> str: ...


class ToolSearch(Protocol):
    """What a model with every toolbox of the tenant (or one) would find, best first."""

    @property
    def query(self) -> str: ...
    @property
    def tools(self) -> Sequence[FoundTool]: ...
    @property
    def not_searched(self) -> Sequence[NotSearched]: ...


@dataclass(frozen=True)
class Answers:
    """The gateway's answers to this app's questions, as the site registers them."""

    check_servers: Callable[[Sequence[Server]], list[CheckResult]]
    key_sees: Callable[[str, dict[int, list[dict[str, Any]]]], KeySees | None]
    estimated_tokens: Callable[[int], int]
    find_tools: Callable[[int, str, str | None, int], ToolSearch | None]
    tenant_endpoint: Callable[[str, str], str]
    toolbox_endpoint: Callable[[str, str, str], str]
    endpoint_left_out: Callable[[int, str], list[str]]


class NotAnswered(RuntimeError):
    """The admin asked the gateway before the site registered its answers."""


_answers: list[Answers] = []


def answer_with(answers: Answers) -> None:
    """Register the gateway's answers (the site's AppConfig.ready); a second replaces."""
    _answers[:] = [answers]


def _asked() -> Answers:
    if not _answers:
        raise NotAnswered(
            "toolboxes asked the gateway a question before any answers were registered: "
            "the site registers them in WorkbenchSiteConfig.ready (is 'workbench_site' in "
            "INSTALLED_APPS?)"
        )
    return _answers[0]


def check_servers(servers: Sequence[Server]) -> list[CheckResult]:
    """Check configured servers (rows with `toolbox__tenant` loaded) as the gateway
    connects them; it records each status and offer for pinning."""
    return _asked().check_servers(servers)


def key_sees(prefix: str, offered: dict[int, list[dict[str, Any]]]) -> KeySees | None:
    """What a client of the key `prefix` is told and can open; None for no such key.
    `offered`: per server id, the tool definitions it offered last."""
    return _asked().key_sees(prefix, offered)


def estimated_tokens(size: int) -> int:
    """About how many tokens `size` bytes of definitions take in a model's context."""
    return _asked().estimated_tokens(size)


def find_tools(
    tenant_id: int, query: str, toolbox: str | None = None, limit: int = 10
) -> ToolSearch | None:
    """What a model with every toolbox of the tenant (or the one named) would find for
    `query`, from the servers' last listings; None for no such tenant or toolbox."""
    return _asked().find_tools(tenant_id, query, toolbox, limit)


def tenant_endpoint(mcp_url: str, slug: str) -> str:
    """A tenant's own endpoint, given the gateway's."""
    return _asked().tenant_endpoint(mcp_url, slug)


def toolbox_endpoint(mcp_url: str, slug: str, toolbox: str) -> str:
    """One toolbox's endpoint as an MCP server of its own, given the gateway's."""
    return _asked().toolbox_endpoint(mcp_url, slug, toolbox)


def endpoint_left_out(tenant_id: int, toolbox: str) -> list[str]:
    """The tools of a toolbox its own endpoint does not offer, one line each with why."""
    return _asked().endpoint_left_out(tenant_id, toolbox)
