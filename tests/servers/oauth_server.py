"""A remote MCP server protected by OAuth, as the SaaS vendors' are: authorization server
and resource server in one process, built on the SDK's server-side auth.

    python tests/servers/oauth_server.py --port N [--access-seconds S]

Dynamic registration, authorization code with PKCE, access tokens that live
`--access-seconds` (bound to the resource, RFC 8707), one-time refresh tokens (a spent one
is refused), revocation (RFC 7009). Tools: `whoami` (the token's subject).

A login is approved without a browser: `/authorize` sends the person to `/login?pending=P`,
and `/login?pending=P&subject=alice` approves it as `alice` (redirect to the client with
the code). Test-only endpoints: `GET /_stats` (refreshes made, refused, revocations)
`POST /_expire_refresh?on=1|0` (every refresh token refused, as a vendor's expiry),
`POST /_forget?subject=S` (the vendor revokes S's tokens), `GET /_tokens?subject=S`, and
`POST /_step_up?on=1|0` (every MCP request answered 403 insufficient_scope).
Broken sign-ins at `/lying/mcp`, `/refused/mcp`, `/noreg/mcp` and `/nometa/mcp`.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response


class IdentifiedToken(OAuthToken):
    """A token response that says whose account it is, as an OpenID Connect vendor's does
    (Workbench shows it as "connected as"; it trusts it for nothing else)."""

    id_token: str | None = None


def unsigned_id_token(subject: str) -> str:
    def part(data: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'preferred_username': subject})}."


@dataclass
class Provider:
    """The authorization server's state, in memory."""

    base: str
    access_seconds: int
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    pending: dict[str, tuple[str, AuthorizationParams]] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    stats: dict[str, int] = field(
        default_factory=lambda: {"refreshed": 0, "refresh_refused": 0, "revoked": 0, "issued": 0}
    )
    refresh_expired: bool = False
    step_up: bool = False  # every MCP request answered 403 insufficient_scope

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        pending = secrets.token_urlsafe(16)
        self.pending[pending] = (client.client_id or "", params)
        return f"{self.base}/login?pending={pending}"

    def approve(self, pending: str, subject: str) -> str | None:
        """The client's redirect URI with a code for `subject`; None for an unknown login."""
        entry = self.pending.pop(pending, None)
        if entry is None:
            return None
        client_id, params = entry
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["read"],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=subject,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str
    ) -> OAuthToken:
        access = "at_" + secrets.token_urlsafe(24)
        refresh = "rt_" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.access_seconds,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        self.stats["issued"] += 1
        return IdentifiedToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.access_seconds,
            refresh_token=refresh,
            scope=" ".join(scopes),
            id_token=unsigned_id_token(subject),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        return self._issue(
            client.client_id or "",
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject or "",
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        if found is None or self.refresh_expired:
            self.stats["refresh_refused"] += 1
            return None
        return found

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:  # one-time
            self.stats["refresh_refused"] += 1
            raise TokenError("invalid_grant", "refresh token already used")
        self.stats["refreshed"] += 1
        return self._issue(
            client.client_id or "", scopes, refresh_token.resource, refresh_token.subject or ""
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """Both of a sign-in's tokens go (RFC 7009: the SHOULD of the provider protocol)."""
        self.stats["revoked"] += 1
        self.access = {k: v for k, v in self.access.items() if v.subject != token.subject}
        self.refresh = {k: v for k, v in self.refresh.items() if v.subject != token.subject}


def build(port: int, access_seconds: int) -> Any:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(base, access_seconds)
    server = MCPServer(
        "oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["read"], default_scopes=["read"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["read"],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The subject of the access token this call carried."""
        token = get_access_token()
        return token.subject if token and token.subject else "(nobody)"

    @server.custom_route("/login", methods=["GET"])
    async def login(request: Request) -> Response:
        pending = request.query_params.get("pending", "")
        subject = request.query_params.get("subject", "")
        if not subject:
            return HTMLResponse(
                f'<form><input type="hidden" name="pending" value="{pending}">'
                '<input name="subject"><button>Sign in</button></form>'
            )
        target = provider.approve(pending, subject)
        if target is None:
            return JSONResponse({"error": "unknown login"}, status_code=400)
        return RedirectResponse(target, status_code=302)

    # Servers whose sign-in goes wrong, for the flow's failure paths (their MCP endpoints
    # are never reached): metadata naming another resource, an authorization server at a
    # refused address, one that refuses registration.
    documents = {
        "/.well-known/oauth-protected-resource/lying/mcp": {
            "resource": "http://127.0.0.1:1/other",
            "authorization_servers": [base],
        },
        "/.well-known/oauth-protected-resource/refused/mcp": {
            "resource": f"{base}/refused/mcp",
            "authorization_servers": ["http://169.254.169.254"],
        },
        "/.well-known/oauth-protected-resource/noreg/mcp": {
            "resource": f"{base}/noreg/mcp",
            "authorization_servers": [f"{base}/noreg"],
        },
        "/.well-known/oauth-authorization-server/noreg": {
            "issuer": f"{base}/noreg",
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/noreg/register",
            "response_types_supported": ["code"],
        },
    }

    async def document(request: Request) -> Response:
        return JSONResponse(documents[request.url.path])

    for path in documents:
        server.custom_route(path, methods=["GET"])(document)

    @server.custom_route("/noreg/register", methods=["POST"])
    async def no_registration(request: Request) -> Response:
        body = {"error": "invalid_client_metadata", "error_description": "registration is closed"}
        return JSONResponse(body, status_code=400)

    @server.custom_route("/_stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse({**provider.stats, "live_access": len(provider.access)})

    @server.custom_route("/_forget", methods=["POST"])
    async def forget(request: Request) -> Response:
        """The vendor revokes a subject's tokens on its own (its admin, a password change)."""
        subject = request.query_params["subject"]
        provider.access = {k: v for k, v in provider.access.items() if v.subject != subject}
        provider.refresh = {k: v for k, v in provider.refresh.items() if v.subject != subject}
        return JSONResponse({"forgotten": subject})

    @server.custom_route("/_tokens", methods=["GET"])
    async def tokens(request: Request) -> Response:
        """How many live tokens a subject has (0 once revoked)."""
        subject = request.query_params["subject"]
        live = [t for t in [*provider.access.values(), *provider.refresh.values()]]
        return JSONResponse({"live": sum(t.subject == subject for t in live)})

    @server.custom_route("/_step_up", methods=["POST"])
    async def step_up(request: Request) -> Response:
        provider.step_up = request.query_params.get("on", "1") == "1"
        return JSONResponse({"step_up": provider.step_up})

    @server.custom_route("/_expire_refresh", methods=["POST"])
    async def expire_refresh(request: Request) -> Response:
        provider.refresh_expired = request.query_params.get("on", "1") == "1"
        return JSONResponse({"refresh_expired": provider.refresh_expired})

    app = server.streamable_http_app(
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return with_client_credentials(app, provider)


MACHINE_CLIENT = ("machine", "machine-secret")  # the one client allowed client credentials


def with_client_credentials(app: Any, provider: Provider) -> Any:
    """The `client_credentials` grant at `/token` (the SDK's token handler has none): the
    machine client's token, whose subject is `machine:<client id>`."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp" and provider.step_up:
            challenge = 'Bearer error="insufficient_scope", scope="read admin"'
            answer = JSONResponse(
                {"error": "insufficient_scope"},
                status_code=403,
                headers={"WWW-Authenticate": challenge},
            )
            await answer(scope, receive, send)
            return
        if scope["type"] != "http" or scope["path"] != "/token" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        form = {name: values[0] for name, values in parse_qs(body.decode()).items()}
        if form.get("grant_type") == "client_credentials":
            client_id, secret = MACHINE_CLIENT
            if (form.get("client_id"), form.get("client_secret")) != (client_id, secret):
                answer: Response = JSONResponse({"error": "invalid_client"}, status_code=401)
            else:
                token = provider._issue(
                    client_id, ["read"], form.get("resource"), f"machine:{client_id}"
                )
                answer = JSONResponse(token.model_dump(mode="json", exclude_none=True))
            await answer(scope, receive, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--access-seconds", type=int, default=3600)
    args = parser.parse_args()
    uvicorn.run(
        build(args.port, args.access_seconds), host="127.0.0.1", port=args.port, log_level="warning"
    )


if __name__ == "__main__":
    main()
