"""The operator's catalog beyond its models: the MCP Registry's `server.json` read into
entries, and entries saved, exported and shipped."""
