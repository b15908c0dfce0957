"""The OAuth client of connected accounts, built on the SDK's (`mcp.client.auth`): in the
kernel because two apps speak it, `connections` (begin, finish, revoke: the person's
sign-in) and the gateway (refresh, the issuer of a client's own credentials). It imports
the SDK: import it where it is used, not at a manage.py command's start.

The SDK's `OAuthClientProvider` runs a whole sign-in inside one HTTP request's auth flow,
waiting in-process for the browser to come back. Here the person is sent to the vendor by
one request (`begin`: discovery, the client's identity, PKCE, the authorization URL) and
comes back in another, maybe to another process (`finish`: the code for tokens), so the
flow's state is handed back to be kept (encrypted, by the caller) in between. Each step is
the SDK's own function; `tests/kernel/test_oauth_sign_in_sdk.py` pins the ones used.

Every request goes through the egress policy (`PinnedTransport`), follows no redirect and
verifies TLS. Failures are `SignInFailed` with a short phrase for people; the vendor's
answer (which may echo a token) is never in it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, PKCEParameters
from mcp.client.auth.oauth2 import OAuthContext, check_registration_usable
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_client_info_from_metadata_url,
    create_client_registration_request,
    create_oauth_metadata_request,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
    handle_token_response_scopes,
    is_valid_client_metadata_url,
    should_use_client_metadata_url,
    validate_authorization_response_iss,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from kernel.classified import ClassifiedFailure
from kernel.egress import EgressPolicy, PinnedTransport

logger = logging.getLogger("workbench.connected")

TIMEOUT_SECONDS = 15.0
CLIENT_NAME = "Workbench"

# What a person (or the operator's log) is told; never the vendor's own text.
UNREACHABLE = "the server's sign-in could not be reached"
NO_METADATA = "the server does not say how to sign in (no OAuth metadata)"
WRONG_RESOURCE = "the server's OAuth metadata names another resource"
REGISTRATION_REFUSED = "the server's authorization server refused to register Workbench"
CODE_REFUSED = "the server's authorization server refused the sign-in"
REFRESH_REFUSED = "the server's authorization server refused to refresh the sign-in"


class SignInFailed(Exception):
    def __init__(self, phrase: str, detail: str = "") -> None:
        super().__init__(phrase)
        self.phrase = phrase
        self.detail = detail  # for the log: never holds a token


@dataclass(frozen=True, slots=True)
class Client:
    """How Workbench identifies itself: `metadata_url` (a Client ID Metadata Document it
    serves), else dynamic registration, else `client_id`/`client_secret` an admin entered."""

    redirect_uri: str
    metadata_url: str = ""
    client_id: str = ""
    client_secret: str = ""
    scopes: str = ""


def _http(policy: EgressPolicy | None) -> httpx2.AsyncClient:
    transport = PinnedTransport(policy or EgressPolicy.from_settings())
    return httpx2.AsyncClient(
        transport=transport, timeout=TIMEOUT_SECONDS, trust_env=False, follow_redirects=False
    )


async def _send(http: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
    try:
        return await http.send(request)
    except ClassifiedFailure as exc:  # the egress policy's refusal: which address, why
        raise SignInFailed(UNREACHABLE, f"{request.method} {request.url}: {exc.detail}") from None
    except (httpx2.HTTPError, OSError) as exc:
        detail = f"{request.method} {request.url}: {type(exc).__name__}"
        raise SignInFailed(UNREACHABLE, detail) from None


async def _discover(http: httpx2.AsyncClient, server_url: str) -> tuple[str, OAuthMetadata, str]:
    """The resource, the authorization server's metadata and its issuer (RFC 9728, 8414)."""
    resource = resource_url_from_server_url(server_url)
    prm = None
    for url in build_protected_resource_metadata_discovery_urls(None, server_url):
        prm = await handle_protected_resource_response(
            await _send(http, create_oauth_metadata_request(url))
        )
        if prm is not None:
            break
    if prm is None or not prm.authorization_servers:
        raise SignInFailed(NO_METADATA, "no protected resource metadata")
    if prm.resource and not check_resource_allowed(resource, str(prm.resource)):
        raise SignInFailed(WRONG_RESOURCE, f"{prm.resource} for {resource}")
    if prm.resource:
        resource = str(prm.resource)
    issuer = str(prm.authorization_servers[0])
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
        ok, asm = await handle_auth_metadata_response(
            await _send(http, create_oauth_metadata_request(url))
        )
        if not ok:
            break
        if asm is not None:
            try:
                validate_metadata_issuer(asm, issuer)
            except OAuthFlowError as exc:
                raise SignInFailed(NO_METADATA, str(exc)) from None
            return resource, asm, issuer
    raise SignInFailed(NO_METADATA, "no authorization server metadata")


async def issuer_of(server_url: str, policy: EgressPolicy | None = None) -> str:
    """The issuer of the server's authorization server (its metadata checked)."""
    async with _http(policy) as http:
        _, _, issuer = await _discover(http, server_url)
    return issuer


async def _client_info(
    http: httpx2.AsyncClient,
    client: Client,
    asm: OAuthMetadata,
    issuer: str,
    registered: dict[str, dict[str, Any]] | None,
) -> tuple[OAuthClientInformationFull, bool]:
    """The client for this issuer, and whether it is a new registration (to keep)."""
    redirect_uris: Any = [client.redirect_uri]
    if client.client_id:
        method = "client_secret_post" if client.client_secret else "none"
        info = OAuthClientInformationFull(
            client_id=client.client_id,
            client_secret=client.client_secret or None,
            redirect_uris=redirect_uris,
            token_endpoint_auth_method=method,
        )
        return info, False
    metadata_url = (
        client.metadata_url if is_valid_client_metadata_url(client.metadata_url) else None
    )
    if should_use_client_metadata_url(asm, metadata_url):
        assert metadata_url is not None
        return create_client_info_from_metadata_url(metadata_url, redirect_uris), False
    if registered and issuer in registered:
        return OAuthClientInformationFull.model_validate(registered[issuer]), False
    metadata = OAuthClientMetadata(
        redirect_uris=redirect_uris,
        client_name=CLIENT_NAME,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        application_type="web",
        scope=client.scopes or None,
    )
    request = create_client_registration_request(asm, metadata, issuer)
    try:
        info = await handle_registration_response(await _send(http, request))
        check_registration_usable(info)
    except OAuthRegistrationError as exc:
        raise SignInFailed(REGISTRATION_REFUSED, str(exc)[:200]) from None
    return info, True


async def begin(
    server_url: str,
    client: Client,
    registered: dict[str, dict[str, Any]] | None = None,
    policy: EgressPolicy | None = None,
) -> tuple[str, dict[str, Any]]:
    """The vendor's authorization URL to send the person to, and the flow's state to keep
    until the callback (it holds the PKCE verifier: store it encrypted). `registered`:
    dynamic registrations kept from earlier sign-ins, by issuer."""
    async with _http(policy) as http:
        resource, asm, issuer = await _discover(http, server_url)
        info, new = await _client_info(http, client, asm, issuer, registered)
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    params = {
        "response_type": "code",
        "client_id": info.client_id,
        "redirect_uri": client.redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": resource,
    }
    if client.scopes:
        params["scope"] = client.scopes
    flow = {
        "state": state,
        "code_verifier": pkce.code_verifier,
        "server_url": server_url,
        "resource": resource,
        "issuer": issuer,
        "metadata": asm.model_dump(mode="json", exclude_none=True),
        "client": info.model_dump(mode="json", exclude_none=True),
        "new_registration": new,
        "redirect_uri": client.redirect_uri,
        "scopes": client.scopes,
    }
    return f"{asm.authorization_endpoint}?{urlencode(params)}", flow


def _context(flow: dict[str, Any]) -> OAuthContext:
    """The SDK's flow context, for its client authentication at the token endpoint."""
    info = OAuthClientInformationFull.model_validate(flow["client"])
    context = OAuthContext(
        server_url=flow["server_url"],
        client_metadata=OAuthClientMetadata(redirect_uris=[flow["redirect_uri"]]),
        storage=None,  # type: ignore[arg-type]  # nothing is stored through the SDK here
        redirect_handler=None,
        callback_handler=None,
    )
    context.client_info = info
    return context


def tokens_of(flow: dict[str, Any], token: Any) -> dict[str, Any]:
    """What a connection keeps: the tokens and where to refresh and revoke them."""
    metadata = flow["metadata"]
    expires_in = token.expires_in
    return {
        "access_token": token.access_token,
        "refresh_token": token.refresh_token or "",
        "expires_at": time.time() + expires_in if expires_in else None,
        "expires_in": expires_in,
        "scope": token.scope or "",
        "token_endpoint": metadata.get("token_endpoint", ""),
        "revocation_endpoint": metadata.get("revocation_endpoint", ""),
        "resource": flow["resource"],
        "issuer": flow["issuer"],
        "client": flow["client"],
        "redirect_uri": flow["redirect_uri"],
        "server_url": flow["server_url"],
        "metadata": metadata,
    }


# Where a token response may say whose account it is (display only, never trusted for
# anything else): an OpenID Connect `id_token`'s claims, then the response's own fields.
ACCOUNT_FIELDS = ("preferred_username", "email", "login", "username", "name")


def account_of(body: Any) -> str:
    """The account a vendor's token response names, for the person's own eyes ("connected
    as"); empty when it names none (the MCP authorization spec asks for none)."""
    if not isinstance(body, dict):
        return ""
    sources: list[Any] = []
    id_token = body.get("id_token")
    if isinstance(id_token, str) and id_token.count(".") == 2:
        payload = id_token.split(".")[1]
        padded = payload + "=" * (-len(payload) % 4)
        with contextlib.suppress(ValueError, binascii.Error):
            sources.append(json.loads(base64.urlsafe_b64decode(padded)))
    sources.append(body)
    for source in sources:
        for name in ACCOUNT_FIELDS:
            value = source.get(name) if isinstance(source, dict) else None
            if isinstance(value, str) and value.strip():
                return value.strip()[:200]
    return ""


async def _token_request(
    flow: dict[str, Any], data: dict[str, str], policy: EgressPolicy | None, refused: str
) -> tuple[Any, str]:
    """The SDK's reading of the token response, and the account it names (`account_of`)."""
    context = _context(flow)
    data = {**data, "client_id": context.client_info.client_id}  # type: ignore[union-attr]
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    data, headers = context.prepare_token_auth(data, headers)
    request = httpx2.Request("POST", flow["metadata"]["token_endpoint"], data=data, headers=headers)
    async with _http(policy) as http:
        response = await _send(http, request)
        if response.status_code >= 500:
            raise SignInFailed(UNREACHABLE, f"token endpoint: HTTP {response.status_code}")
        if response.status_code != 200:
            raise SignInFailed(refused, f"token endpoint: HTTP {response.status_code}")
        token = await handle_token_response_scopes(response)
        try:  # the SDK read it; what its model does not keep is ours to read
            return token, account_of(response.json())
        except ValueError:
            return token, ""


async def finish(
    flow: dict[str, Any], code: str, iss: str | None, policy: EgressPolicy | None = None
) -> dict[str, Any]:
    """The code the person came back with, exchanged for tokens (PKCE, RFC 8707)."""
    try:
        validate_authorization_response_iss(iss, OAuthMetadata.model_validate(flow["metadata"]))
    except OAuthFlowError as exc:
        raise SignInFailed(CODE_REFUSED, str(exc)) from None
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": flow["redirect_uri"],
        "code_verifier": flow["code_verifier"],
        "resource": flow["resource"],
    }
    token, account = await _token_request(flow, data, policy, CODE_REFUSED)
    return {**tokens_of(flow, token), "account": account}


async def refresh(saved: dict[str, Any], policy: EgressPolicy | None = None) -> dict[str, Any]:
    """New tokens for a connection's refresh token (spent: the vendor may allow it once)."""
    if not saved.get("refresh_token"):
        raise SignInFailed(REFRESH_REFUSED, "no refresh token")
    data = {
        "grant_type": "refresh_token",
        "refresh_token": saved["refresh_token"],
        "resource": saved["resource"],
    }
    token, _ = await _token_request(saved, data, policy, REFRESH_REFUSED)
    renewed = tokens_of(saved, token)
    if not renewed["refresh_token"]:  # RFC 6749 §6: not rotated, the old one stays
        renewed["refresh_token"] = saved["refresh_token"]
    return renewed


async def revoke(saved: dict[str, Any], policy: EgressPolicy | None = None) -> bool:
    """Revoke a connection's tokens at the vendor (RFC 7009), where it says it can; False
    when it cannot or did not answer (the tokens are deleted here anyway)."""
    endpoint = saved.get("revocation_endpoint")
    if not endpoint:
        return False
    context = _context(saved)
    revoked = True
    async with _http(policy) as http:
        for kind in ("refresh_token", "access_token"):
            if not saved.get(kind):
                continue
            data = {"token": saved[kind], "token_type_hint": kind}
            data = {**data, "client_id": context.client_info.client_id}  # type: ignore[union-attr]
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            data, headers = context.prepare_token_auth(data, headers)
            try:
                response = await _send(
                    http, httpx2.Request("POST", endpoint, data=data, headers=headers)
                )
            except SignInFailed:
                revoked = False
                continue
            revoked = revoked and response.status_code == 200
    return revoked
