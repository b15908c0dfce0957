"""Connected accounts: people's (and tenants') OAuth sign-ins to the remote MCP servers that
need one: their encrypted tokens, the one-time links and flows that make them, the
callback, and the admin's page of them. The OAuth protocol itself is the kernel's
(`kernel.oauth_sign_in`, on the SDK's client), shared with the gateway, which refreshes
the tokens."""
