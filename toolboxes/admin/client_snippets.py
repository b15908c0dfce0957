"""Ready-to-paste configurations of the MCP clients people use, for one gateway URL and key.

Each follows its client's documented format (checked against the clients' own docs):
Claude Code's `claude mcp add --transport http`, VS Code's `.vscode/mcp.json` (`servers`,
`"type": "http"`), Cursor's `mcp.json` (`url`), Windsurf's `mcp_config.json` (`serverUrl`),
Gemini CLI's `settings.json` (`httpUrl`), Claude Desktop through `mcp-remote` (the header
in an env value: `--header Authorization:${AUTH_HEADER}`, no spaces in args), and the
Python and TypeScript SDKs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest

SERVER_NAME = "workbench"
KEY_PLACEHOLDER = "<your API key>"
# The clients that permit and search a server's tools themselves: those a toolbox's own
# endpoint is handed to (README, "One toolbox as an MCP server of its own").
TOOLBOX_CLIENTS = ("claude-code", "vscode", "cursor", "claude-desktop")


@dataclass(frozen=True, slots=True)
class ClientConfig:
    slug: str  # element ids, tests
    client: str
    where: str  # the file to paste it into, or how to run it
    text: str


def public_url(request: HttpRequest) -> str:
    """The gateway's endpoint as clients reach it: WORKBENCH_PUBLIC_URL, else this request's."""
    return settings.WORKBENCH_PUBLIC_URL or request.build_absolute_uri("/mcp")


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def configurations(url: str, key: str, name: str = SERVER_NAME) -> list[ClientConfig]:
    bearer = f"Bearer {key}"
    headers = {"Authorization": bearer}
    return [
        ClientConfig(
            "claude-code",
            "Claude Code",
            "Run in a terminal (add --scope user to use it in every project)",
            f'claude mcp add --transport http {name} {url} --header "Authorization: {bearer}"',
        ),
        ClientConfig(
            "vscode",
            "VS Code",
            ".vscode/mcp.json in the workspace (keep it out of version control), "
            "or MCP: Open User Configuration",
            _json({"servers": {name: {"type": "http", "url": url, "headers": headers}}}),
        ),
        ClientConfig(
            "cursor",
            "Cursor",
            "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
            _json({"mcpServers": {name: {"url": url, "headers": headers}}}),
        ),
        ClientConfig(
            "windsurf",
            "Windsurf",
            "~/.codeium/windsurf/mcp_config.json",
            _json({"mcpServers": {name: {"serverUrl": url, "headers": headers}}}),
        ),
        ClientConfig(
            "gemini-cli",
            "Gemini CLI",
            "~/.gemini/settings.json (or .gemini/settings.json in a project)",
            _json({"mcpServers": {name: {"httpUrl": url, "headers": headers}}}),
        ),
        ClientConfig(
            "claude-desktop",
            "Claude Desktop (through mcp-remote; needs Node.js)",
            "claude_desktop_config.json (Settings > Developer > Edit Config)",
            _json(
                {
                    "mcpServers": {
                        name: {
                            "command": "npx",
                            "args": [
                                "-y",
                                "mcp-remote",
                                url,
                                "--header",
                                "Authorization:${AUTH_HEADER}",
                            ],
                            "env": {"AUTH_HEADER": bearer},
                        }
                    }
                }
            ),
        ),
        ClientConfig("python", "Python (the mcp SDK)", "a script", _python(url, key)),
        ClientConfig(
            "typescript",
            "TypeScript (@modelcontextprotocol/sdk)",
            "an ES module",
            _typescript(url, key),
        ),
    ]


def _python(url: str, key: str) -> str:
    return f'''import asyncio

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    headers = {{"Authorization": "Bearer {key}"}}
    # Opening a toolbox starts its servers: a cold one (npx -y, uvx) takes seconds.
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client("{url}", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        print((await session.initialize()).instructions)  # your toolboxes


asyncio.run(main())'''


def _typescript(url: str, key: str) -> str:
    return f"""import {{ Client }} from "@modelcontextprotocol/sdk/client/index.js";
import {{ StreamableHTTPClientTransport }} from
  "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL("{url}"), {{
  requestInit: {{ headers: {{ Authorization: "Bearer {key}" }} }},
}});
const client = new Client({{ name: "my-agent", version: "1.0.0" }});
await client.connect(transport);
console.log(client.getInstructions()); // your toolboxes
await client.close();"""


def toolbox_configurations(url: str, key: str, toolbox: str) -> list[ClientConfig]:
    """One toolbox's endpoint in the clients that take a server's tools as their own."""
    name = f"{SERVER_NAME}-{toolbox}"
    return [c for c in configurations(url, key, name) if c.slug in TOOLBOX_CLIENTS]
