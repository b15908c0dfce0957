"""Credential to caller: an API key (`Authorization: Bearer <key>` or `X-API-Key: <key>`) or
an OAuth access token of a tenant member's sign-in (`Authorization: Bearer wbo_...`).

The key's prefix finds its record (a per-process snapshot, see `database.reads`), then the hashes
are compared in constant time. An access token is asked about once through
`accounts.oauth_callers` (the gateway's one question to `accounts/`) and the answer kept,
like a key's record, while its tenant's configuration version stays the same. Either way
the caller is the same: a tenant and the toolboxes it may use. Every refusal says why, in a
JSON body, with HTTP 401 and a `WWW-Authenticate: Bearer` challenge. Only a request that
could sign in (no credential, or a refused OAuth access token) is invited to: its challenge
names the protected resource metadata (RFC 9728), from which OAuth clients discover how. A
refused API key is not: signing in does not fix a key. (`mcp-remote` starts a sign-in on any
401 all the same, sending its headers, the key too, to the registration endpoint: that
refuses it with the same reason for the key, `accounts.key_refusals.key_refusal`, which is
what it shows: the key's checks and their texts live there, for both.)
`last_used` is written at most once a minute per key, off the request path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict

from django.conf import settings
from starlette.types import Scope

from accounts import oauth_callers
from accounts.key_refusals import (
    INACTIVE_TENANT,
    AuthError,
    check_key,
    key_from_headers,
    key_prefix,
)
from mcp_gateway.database.reads import Snapshots
from mcp_gateway.database.records import touch_key
from mcp_gateway.database.threads import in_thread
from mcp_gateway.front.hostcheck import HostCheck
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from toolboxes import keys

logger = logging.getLogger("workbench.auth")

LAST_USED_RESOLUTION_SECONDS = 60.0
TOKEN_ANSWERS = 10000  # access tokens whose answer this process keeps (most recent first)
TOKEN_REFUSALS = {
    "invalid_token": "The access token is not valid.",
    "expired_token": "The access token has expired.",
    "revoked_grant": "The sign-in this access token belongs to has been revoked.",
    "inactive_user": "The signed-in user is not active.",
    "not_a_member": "The signed-in user is no longer a member of the access token's tenant.",
    # A viewer reads the configuration in the admin; /mcp runs the tenant's tools.
    "viewer_role": "The signed-in user is a viewer of the access token's tenant: only its "
    "admins may use /mcp.",
    "inactive_tenant": "The access token's tenant is not active.",
    "api_scope": "The access token is for the management API (scope api): /mcp takes an API "
    "key or an access token of scope mcp.",
}


# A request may carry one credential: with two (both headers, or one twice) a header
# mapping would silently pick one, maybe not the client's own (a proxy's, say).
CREDENTIAL_HEADERS = (b"authorization", b"x-api-key")
MULTIPLE_CREDENTIALS = "multiple_credentials"
MULTIPLE_CREDENTIALS_MESSAGE = (
    "The request carries more than one credential: send one 'Authorization: Bearer "
    "<api key>' header or one 'X-API-Key: <api key>' header."
)


def credential_headers(raw: list[tuple[bytes, bytes]]) -> int:
    """How many credential headers the request has (ASGI names are lowercase)."""
    return sum(1 for name, _ in raw if name in CREDENTIAL_HEADERS)


def _token_refused(reason: str) -> AuthError:
    return AuthError(reason, TOKEN_REFUSALS[reason], invite_sign_in=True)


def refused_key_prefix(headers: dict[bytes, bytes]) -> str:
    """The prefix of the key a refused request sent (never the key), for the log."""
    try:
        return keys.API_KEY.parse_prefix(key_from_headers(headers)) or "-"
    except AuthError:
        return "-"


def challenge(scope: Scope, error: AuthError, hosts: HostCheck) -> bytes:
    """The WWW-Authenticate value of a 401: for a credential that was sent, why it was
    refused (RFC 6750); when signing in would help, where the protected resource metadata
    is (RFC 9728). The gateway is named as configured (WORKBENCH_PUBLIC_URL, else an
    allowed Host), never by whatever Host a request sent: a 401 comes before the Host
    check."""
    description = error.message.replace('"', "'")
    refused = f'Bearer error="invalid_token", error_description="{description}"'
    if not error.invite_sign_in:
        return refused.encode()
    base = public_base(scope, hosts)
    metadata = f'resource_metadata="{base}{oauth_callers.RESOURCE_METADATA_PATH}"'
    if error.reason == "missing_api_key":
        return f"Bearer {metadata}".encode()
    return f"{refused}, {metadata}".encode()


def public_base(scope: Scope, hosts: HostCheck) -> str:
    """Where Workbench is: WORKBENCH_PUBLIC_URL (without `/mcp`), else the request's base."""
    public = settings.WORKBENCH_PUBLIC_URL.rstrip("/").removesuffix(oauth_callers.RESOURCE_PATH)
    return public or _request_base(scope, hosts)


def _request_base(scope: Scope, hosts: HostCheck) -> str:
    """The request's Host when ALLOWED_HOSTS has it, else the address the request reached."""
    host = hosts.vouched_host(dict(scope["headers"]).get(b"host", b"").decode("latin-1"))
    if host is None:
        name, port = scope.get("server") or ("localhost", None)
        name = f"[{name}]" if ":" in str(name) else str(name)
        host = f"{name}:{port}" if port else name
    return f"{scope.get('scheme', 'http')}://{host}"


class Authenticator:
    def __init__(self, store: Snapshots) -> None:
        self.store = store
        self._last_touch: dict[int, float] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._tokens: OrderedDict[str, oauth_callers.TokenCaller] = OrderedDict()

    async def authenticate(self, headers: dict[bytes, bytes]) -> Caller:
        full_key = key_from_headers(headers)
        if oauth_callers.is_access_token(full_key):
            return await self._token_caller(full_key)
        now = time.time()
        record = check_key(full_key, await self.store.key(key_prefix(full_key)), now)
        tenant = await self.store.tenant(record.tenant_id, record.version)
        if tenant is None or not tenant.active:
            raise AuthError("inactive_tenant", INACTIVE_TENANT)
        self._note_use(record.key_id, now)
        return Caller(record, tenant, person_id=record.owner_id)

    async def _token_caller(self, token: str) -> Caller:
        checksum = oauth_callers.token_checksum(token)  # the token itself is never kept
        answer = self._tokens.get(checksum)
        if answer is None or answer.version != await self.store.version(answer.tenant_id):
            answer = await in_thread(oauth_callers.token_caller)(checksum)
            self._remember(checksum, answer)
        if answer is None:
            raise _token_refused("invalid_token")
        if answer.refusal:
            raise _token_refused(answer.refusal)
        if answer.expires_at <= time.time():
            raise _token_refused("expired_token")
        tenant = await self.store.tenant(answer.tenant_id, answer.version)
        if tenant is None or not tenant.active:
            raise _token_refused("inactive_tenant")
        record = KeyRecord(
            key_id=-answer.grant_id,  # its own rate buckets and in-flight count, never a key's
            prefix=f"grant:{answer.grant_id}",
            key_hash="",
            tenant_id=answer.tenant_id,
            revoked=False,
            expires_at=answer.expires_at,
            toolboxes=answer.toolboxes,
            version=answer.version,
        )
        return Caller(record, tenant, grant_id=answer.grant_id, person_id=answer.user_id or None)

    def _remember(self, checksum: str, answer: oauth_callers.TokenCaller | None) -> None:
        if answer is None:
            self._tokens.pop(checksum, None)
            return
        self._tokens[checksum] = answer
        self._tokens.move_to_end(checksum)
        while len(self._tokens) > TOKEN_ANSWERS:
            self._tokens.popitem(last=False)

    def _note_use(self, key_id: int, now: float) -> None:
        if now - self._last_touch.get(key_id, 0.0) < LAST_USED_RESOLUTION_SECONDS:
            return
        self._last_touch[key_id] = now
        task = asyncio.get_running_loop().create_task(self._touch(key_id, now))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _touch(self, key_id: int, now: float) -> None:
        try:
            await touch_key(key_id, now)
        except Exception:  # a failed bookkeeping write must not fail anything else
            logger.exception("Could not record last use of API key %s", key_id)
