"""Client credentials: a server signed in as Workbench itself (machine to machine, no
person), with the client an admin entered, through the SDK's extension for it.

The SDK's provider signs in on the server's first 401 (discovery, then the
`client_credentials` grant) and again when a token is refused; its token lives in this
connection's memory. The issuer is discovered first (the SDK asks for it, so that the
credentials are only ever sent to the server's own authorization server)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx2
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from kernel import oauth_sign_in
from mcp_gateway.snapshots.servers import ServerConfig


class _Memory:
    """The SDK's TokenStorage, in this connection's memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class ClientCredentialsAuth(httpx2.Auth):
    requires_response_body = True

    def __init__(self, server: ServerConfig) -> None:
        self.server = server
        self._provider: ClientCredentialsOAuthProvider | None = None

    async def _provider_for(self, url: str) -> ClientCredentialsOAuthProvider:
        if self._provider is None:
            issuer = await oauth_sign_in.issuer_of(url)
            self._provider = ClientCredentialsOAuthProvider(
                server_url=url,
                storage=_Memory(),
                client_id=self.server.oauth_client_id,
                client_secret=self.server.oauth_client_secret,
                token_endpoint_auth_method="client_secret_post",
                scope=self.server.oauth_scopes or None,
                issuer=issuer,
            )
        return self._provider

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK provider's own flow, for the server's URL (the first request's)."""
        provider = await self._provider_for(str(request.url))
        flow = provider.async_auth_flow(request)
        outgoing = await flow.__anext__()
        while True:
            response = yield outgoing
            try:
                outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
