"""The JSON configuration format (spec: "Config export format"), read and written.

Export writes, per tenant, `{"toolboxes": {name: {"description", "mcpServers": {...}}}}`
with servers in order and every field (secrets decrypted: the export is the admin's own
backup). Import reads it back all or nothing; every problem is reported with its JSON path
(`toolboxes.dev.mcpServers.fs.args[1]: must be a string`).

Import without `replace` creates or updates toolboxes and servers by name and removes
nothing: servers of an updated toolbox that the file does not list keep their place after
the listed ones. With `replace`, the tenant's configuration becomes exactly the file's;
toolboxes that stay are updated in place, so API keys limited to them stay limited.

A server made from a catalog entry is written `{"catalog": "<entry name>", "parameters":
{name: value}}` (secret values decrypted, like env values) with its filters, timeout, idle
timeout and enabled; on import the entry must exist.

A tenant's tool policies go beside its toolboxes, under `"policies"`, when it has any
(`config_file.policies`): a document with them sets the rules exactly, one without leaves
them as they are.

Desktop files are read into one named toolbox: `{"mcpServers": {...}}` (Claude Desktop,
Cursor, Windsurf, Gemini CLI) or VS Code's `{"servers": {...}}`; other top-level keys of
such files (settings, VS Code's `inputs`) are ignored. There, as in the export format,
`"type": "http"` is taken for `streamable-http`, a server with a `url` (or Windsurf's
`serverUrl`, Gemini CLI's `httpUrl`) and no `type` is a Streamable HTTP one, and
`"disabled": true` means `"enabled": false`. One toolbox is written back in the plain
desktop form (`export_desktop`): `{"mcpServers": {...}}` alone, stdio servers as
command/args/env, remote ones as `"type": "http"` (or `"sse"`)/url/headers.
"""

from toolboxes.config_file.export import (
    desktop_server,
    export_all,
    export_desktop,
    export_server,
    export_tenant,
)
from toolboxes.config_file.importer import desktop_servers, import_mcp_servers, import_tenant
from toolboxes.config_file.schema import EXPORT_KEY, ConfigError, dumps, json_path, loads

__all__ = [
    "EXPORT_KEY",
    "ConfigError",
    "desktop_server",
    "desktop_servers",
    "dumps",
    "export_all",
    "export_desktop",
    "export_server",
    "export_tenant",
    "import_mcp_servers",
    "import_tenant",
    "json_path",
    "loads",
]
