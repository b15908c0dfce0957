"""Who may call which tool, as the meta-tools apply it: the caller's subject (a tenant
key, or a person with their role and groups), the decision for one call
(`kernel.tool_policy`, read from the tenant's snapshot) and a tool list cut to what the
caller may call.

`use_tool` asks twice at most: before connecting, with the admins' rules alone
(`decision`: a tool they deny is refused without starting anything), and, where the
tenant's defaults from annotations could refuse this caller or ask for a person's
approval, once the server's tool list is known (`with_annotations`). A decision that asks
holds the call (`metatools.approvals`). A list
of tool entries (`open_toolbox`'s) goes through `callable_entries`, after any cache: one
caller's view never reaches another; `search_tools` fills its limit through
`entry_filter`, the toolbox endpoint's list through `may_call_tool`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kernel.tool_policy import Decision, Subject, is_destructive
from mcp_gateway.snapshots.callers import Caller

if TYPE_CHECKING:  # the admin's key view imports this module: no SDK at a command's start
    import mcp_types as types


def subject_of(caller: Caller) -> Subject:
    """A key's calls as that key (and as its owner, for a personal key); an OAuth sign-in's
    as its member only."""
    key_id = caller.key.key_id if caller.grant_id is None else None
    return caller.tenant.policy.subject(key_id, caller.person_id)


def annotated_destructive(tool: types.Tool | None) -> bool:
    if tool is None or tool.annotations is None:
        return False
    return is_destructive(tool.annotations.model_dump(by_alias=True, exclude_none=True))


def decide(caller: Caller, toolbox: str, server: str, tool: str, destructive: bool) -> Decision:
    return caller.tenant.policy.decide(subject_of(caller), toolbox, server, tool, destructive)


def decision(caller: Caller, toolbox: str, server: str, tool: str) -> Decision | None:
    """The admins' rules' decision of a call, before anything connects (None: the tenant
    has no rules nor defaults, so nothing to decide)."""
    if caller.tenant.policy.empty:
        return None
    return decide(caller, toolbox, server, tool, destructive=False)


def needs_annotations(caller: Caller) -> bool:
    """Whether the tenant's defaults could refuse this caller a tool, or ask a person's
    approval of its calls, for the tool's annotations."""
    defaults = caller.tenant.policy.defaults
    if defaults.ask_destructive:  # for every caller: a person's key and sign-in too
        return True
    return defaults.deny_destructive_to_keys and subject_of(caller).is_tenant_key


def with_annotations(
    caller: Caller,
    toolbox: str,
    server: str,
    tool: types.Tool | None,
    name: str,
    before: Decision | None,
) -> Decision | None:
    """The decision of a call once the server's tool list is known: `before` (the rules'
    alone, or None) unless the tenant's defaults read the tool's annotations."""
    if not needs_annotations(caller):
        return before
    return decide(caller, toolbox, server, name, annotated_destructive(tool))


def callable_entries(
    caller: Caller, entries: Iterable[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """The entries (`tools.tool_entry`'s shape: name, server, toolbox, annotations) this
    caller may call; None when the policy denies none of them (the list may be used as
    it is)."""
    may_call = entry_filter(caller)
    if may_call is None:
        return None
    entries = list(entries)
    kept = [entry for entry in entries if may_call(entry)]
    return None if len(kept) == len(entries) else kept


def left_out(entries: list[dict[str, Any]], kept: list[dict[str, Any]]) -> str:
    """The call log's words for the tools a policy left out of a list."""
    kept_ids = {id(entry) for entry in kept}
    names = [f"{e['server']}/{e['name']}" for e in entries if id(e) not in kept_ids]
    return "left out by tool policies: " + ", ".join(names)


def entry_filter(caller: Caller) -> Callable[[dict[str, Any]], bool] | None:
    """Whether this caller may call a listed entry (`tools.tool_entry`'s shape), for a
    search that must fill its limit with callable tools; None: every entry is."""
    if caller.tenant.policy.empty:
        return None
    subject, policy = subject_of(caller), caller.tenant.policy

    def may_call(entry: dict[str, Any]) -> bool:
        destructive = is_destructive(entry.get("annotations"))
        where = (entry["toolbox"], entry["server"], entry["name"])
        return policy.decide(subject, *where, destructive).allowed

    return may_call


def may_call_tool(caller: Caller, toolbox: str, server: str, tool: types.Tool) -> bool:
    """Whether this caller may call a tool as its server lists it (the toolbox endpoint)."""
    if caller.tenant.policy.empty:
        return True
    return decide(caller, toolbox, server, tool.name, annotated_destructive(tool)).allowed
