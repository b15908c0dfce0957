"""API key to tenant: `Authorization: Bearer <key>` or `X-API-Key: <key>`.

The key's prefix finds its record (a per-process snapshot, see `config`), then the hashes
are compared in constant time. Every refusal says why, in a JSON body, with HTTP 401.
`last_used` is written at most once a minute per key, off the request path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from mcp_gateway.config import ConfigStore, KeyRecord, TenantConfig
from toolboxes import keys

logger = logging.getLogger("workbench.auth")

LAST_USED_RESOLUTION_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Caller:
    key: KeyRecord
    tenant: TenantConfig

    @property
    def owner(self) -> str:
        """Whose open toolboxes these are: the credential's, shared by all its sessions."""
        return f"key:{self.key.key_id}"

    def visible_toolboxes(self) -> list[str]:
        return [tb.name for tb in self.tenant.toolboxes if self.key.allows(tb.name)]


class AuthError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


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
    )


class Authenticator:
    def __init__(self, store: ConfigStore) -> None:
        self.store = store
        self._last_touch: dict[int, float] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def authenticate(self, headers: dict[bytes, bytes]) -> Caller:
        full_key = key_from_headers(headers)
        prefix = keys.parse_prefix(full_key)
        if prefix is None:
            raise AuthError(
                "malformed_api_key", "The API key is not in the form wb_<prefix>_<secret>."
            )
        record = await self.store.key(prefix)
        if record is None or not keys.hashes_match(full_key, record.key_hash):
            raise AuthError("invalid_api_key", "The API key is not valid.")
        # Past this point the caller holds the real key: saying why it fails leaks nothing.
        if record.revoked:
            raise AuthError("revoked_api_key", "The API key has been revoked.")
        now = time.time()
        if record.expires_at is not None and record.expires_at <= now:
            raise AuthError("expired_api_key", "The API key has expired.")
        tenant = await self.store.tenant(record.tenant_id, record.version)
        if tenant is None or not tenant.active:
            raise AuthError("inactive_tenant", "The API key's tenant is not active.")
        self._note_use(record.key_id, now)
        return Caller(record, tenant)

    def _note_use(self, key_id: int, now: float) -> None:
        if now - self._last_touch.get(key_id, 0.0) < LAST_USED_RESOLUTION_SECONDS:
            return
        self._last_touch[key_id] = now
        task = asyncio.get_running_loop().create_task(self._touch(key_id, now))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _touch(self, key_id: int, now: float) -> None:
        try:
            await self.store.touch_key(key_id, now)
        except Exception:  # a failed bookkeeping write must not fail anything else
            logger.exception("Could not record last use of API key %s", key_id)
