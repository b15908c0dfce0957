"""Why /mcp refuses a credential sent as an API key: the checks and their texts, in one home
for the two places that say them. The gateway's `front.auth` runs them on its cached
snapshot of a key, on every request; the OAuth registration endpoint (`oauth_clients`)
asks `key_refusal`, read straight from the database, for an OAuth client that was given a
refused key (it registers next, and shows that answer). They live here, below the
gateway, because this app knows every form a credential takes (an API key's, from
`toolboxes.keys`; its own API tokens and OAuth access tokens) and when a personal key's
member may no longer use it (`member_refusal`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, TypeVar

from accounts import api_tokens, oauth_callers
from accounts.models.members import member_refusal
from toolboxes import keys
from toolboxes.models import ApiKey

# A member's personal token for the management API is never a credential at /mcp.
API_TOKEN_REFUSED = (
    "This is a management API token (for /api/v1): /mcp takes an API key or an OAuth access token."
)
# A personal API key whose member may no longer use it (`KeyState.owner_refusal`).
OWNER_REFUSALS = {
    "inactive_user": "The API key's owner is not active.",
    "not_a_member": "The API key's owner is no longer a member of its tenant.",
    "viewer_role": "The API key's owner is a viewer of its tenant: only its admins may use /mcp.",
}
INACTIVE_TENANT = "The API key's tenant is not active."


class AuthError(Exception):
    """A refused request: why (`reason`, `message`), and whether signing in would help
    (`invite_sign_in`: no credential was sent, or an OAuth access token was refused)."""

    def __init__(self, reason: str, message: str, *, invite_sign_in: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.invite_sign_in = invite_sign_in


class KeyState(Protocol):
    """What checking a key needs of its record (the gateway's snapshot, or `StoredKey`)."""

    @property
    def key_hash(self) -> str: ...
    @property
    def revoked(self) -> bool: ...
    @property
    def expires_at(self) -> float | None: ...
    @property
    def owner_refusal(self) -> str: ...


K = TypeVar("K", bound=KeyState)


def key_from_headers(headers: dict[bytes, bytes]) -> str:
    authorization = headers.get(b"authorization", b"").decode("latin-1").strip()
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(
                "malformed_authorization", "The Authorization header must be 'Bearer <api key>'."
            )
        return token.strip()
    api_key = headers.get(b"x-api-key", b"").decode("latin-1").strip()
    if api_key:
        return api_key
    raise AuthError(
        "missing_api_key",
        "An API key is required: send 'Authorization: Bearer <api key>' or 'X-API-Key: <api key>'.",
        invite_sign_in=True,
    )


def key_prefix(full_key: str) -> str:
    """The prefix of a key in the API key's form, else why the credential is refused."""
    if api_tokens.API_TOKEN.is_one(full_key):
        raise AuthError("api_token", API_TOKEN_REFUSED)
    prefix = keys.API_KEY.parse_prefix(full_key)
    if prefix is None:
        raise AuthError("malformed_api_key", "The API key is not in the form wb_<prefix>_<secret>.")
    return prefix


def check_key(full_key: str, record: K | None, now: float) -> K:
    """`record`, unless the key is not its key or the record says it may not be used."""
    if record is None or not keys.API_KEY.matches(full_key, record.key_hash):
        raise AuthError("invalid_api_key", "The API key is not valid.")
    # Past this point the caller holds the real key: saying why it fails leaks nothing.
    if record.revoked:
        raise AuthError("revoked_api_key", "The API key has been revoked.")
    if record.expires_at is not None and record.expires_at <= now:
        raise AuthError("expired_api_key", "The API key has expired.")
    if record.owner_refusal:
        raise AuthError(f"owner_{record.owner_refusal}", OWNER_REFUSALS[record.owner_refusal])
    return record


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A key's row as the checks read it, with its tenant's state (`key_refusal`'s)."""

    key_hash: str
    revoked: bool
    expires_at: float | None
    owner_refusal: str
    tenant_active: bool


def stored_key(prefix: str) -> StoredKey | None:
    api_key = ApiKey.objects.filter(prefix=prefix).select_related("tenant", "owner").first()
    if api_key is None:
        return None
    owner = api_key.owner
    return StoredKey(
        key_hash=api_key.key_hash,
        revoked=api_key.revoked_at is not None,
        expires_at=api_key.expires_at.timestamp() if api_key.expires_at else None,
        owner_refusal="" if owner is None else member_refusal(owner, api_key.tenant_id),
        tenant_active=api_key.tenant.is_active,
    )


def key_refusal(authorization: str, api_key: str) -> str:
    """Why /mcp refuses the API key in these header values ("" when it takes it, or they
    carry none, or an OAuth access token): the gateway's checks, read straight from the
    database."""
    values = {b"authorization": authorization, b"x-api-key": api_key}
    headers = {name: value.encode("latin-1", "replace") for name, value in values.items() if value}
    try:
        full_key = key_from_headers(headers)
        if oauth_callers.is_access_token(full_key):
            return ""
        record = check_key(full_key, stored_key(key_prefix(full_key)), time.time())
        if not record.tenant_active:
            raise AuthError("inactive_tenant", INACTIVE_TENANT)
    except AuthError as refused:
        return "" if refused.reason == "missing_api_key" else refused.message
    return ""
