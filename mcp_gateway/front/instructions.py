"""The `initialize` (and `server/discover`) instructions: the caller's toolboxes, how to
open one, and `search_tools` for when the right one is not obvious."""

from mcp_gateway.snapshots.callers import Caller

HOW_TO = (
    "To open a toolbox and see available tools:\n"
    "1. Call `open_toolbox` with the desired toolbox name\n"
    "2. Inspect the returned tools array, then call `use_tool`\n"
    "\n"
    "When the right toolbox is not obvious, call `search_tools` with what you want to do: "
    "it returns the best-matching tools of every toolbox, ready for `use_tool`."
)


def render(caller: Caller) -> str:
    lines = ["## Available Toolboxes", ""]
    visible = [tb for tb in caller.tenant.toolboxes if caller.key.allows(tb.name)]
    for toolbox in visible:
        count = len(toolbox.servers)
        servers = f"{count} server" if count == 1 else f"{count} servers"
        lines.append(f"- **{toolbox.name}** ({servers}): {toolbox.description}")
    if not visible:
        lines.append("No toolboxes are available to this API key yet.")
    return "\n".join([*lines, "", HOW_TO])
