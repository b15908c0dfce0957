"""This process's connected accounts: whose tokens a call to a signed-in server carries,
refreshed near expiry once across processes, and the sign-in a person must make when
there are none.

Tokens are read (through the door the front hands in) when this process has none, or when
the tenant's configuration version moved (every sign-in made, removed or refused moves
it), so a person who has just connected is seen at once by every process. A refresh is
claimed on the row's version first (`records.claim_refresh`): of two processes, one spends
the (maybe one-time) refresh token; the other waits, boundedly, for its new version.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2

from kernel import oauth_sign_in
from mcp_gateway.observe.recorder import Recorder
from mcp_gateway.snapshots.connected import SavedSignIn
from mcp_gateway.snapshots.servers import ServerConfig

logger = logging.getLogger("workbench.connected")

REFRESH_MARGIN_SECONDS = 60.0  # refresh a token this long before it expires (at most)
REFRESH_WAIT_SECONDS = 15.0  # how long to wait for another process's refresh
REFRESH_POLL_SECONDS = 0.1

PERSON_NEEDED = (
    "this server needs each person's own sign-in: call it with a personal API key or "
    "an OAuth sign-in"
)
SHARED_NEEDED = "a tenant admin must connect this server's shared account first"
REFRESH_TIMED_OUT = "the server's sign-in is being refreshed; try again"


class SignInNeeded(Exception):
    """The caller must sign in (again) to the server: not connected, refused, expired."""


class SignInUnavailable(Exception):
    """The sign-in cannot be used now, and signing in again would not help (`phrase`)."""

    def __init__(self, phrase: str) -> None:
        super().__init__(phrase)
        self.phrase = phrase


@dataclass(frozen=True, slots=True)
class SignInDoor:
    """The gateway's door for connected accounts (`database`), handed in by the front."""

    read: Callable[[int, int | None], Awaitable[SavedSignIn | None]]
    claim_refresh: Callable[[int, int], Awaitable[bool]]
    save_refreshed: Callable[[int, int, dict[str, Any]], Awaitable[bool]]
    release_claim: Callable[[int, int], Awaitable[None]]
    needs_reconnect: Callable[[int, int], Awaitable[None]]
    new_link: Callable[[int, int], Awaitable[str]]


Key = tuple[int, int | None]  # (server row, person: None for the tenant's account)


def margin(saved: SavedSignIn) -> float:
    """How early to refresh: a minute, or a third of a short-lived token's life."""
    lifetime = saved.tokens.get("expires_in") or REFRESH_MARGIN_SECONDS * 3
    return min(REFRESH_MARGIN_SECONDS, float(lifetime) / 3)


def near_expiry(saved: SavedSignIn, now: float | None = None) -> bool:
    expires = saved.expires_at
    return expires is not None and expires - (now or time.time()) <= margin(saved)


# Sign-ins this process keeps at hand (the least recently used are read again when needed).
SAVED_ENTRIES = 10_000


class ConnectedAccounts:
    def __init__(self, door: SignInDoor | None, recorder: Recorder | None = None) -> None:
        self.door = door
        self.recorder = recorder or Recorder()  # the gateway's (its refreshes' metrics)
        # Key -> the sign-in and the tenant version it was read at; bounded (SAVED_ENTRIES).
        self._saved: OrderedDict[Key, tuple[SavedSignIn | None, int]] = OrderedDict()
        self._locks: dict[Key, anyio.Lock] = {}  # only while a refresh runs or waits

    @staticmethod
    def person_of(server: ServerConfig, person_id: int | None) -> int | None:
        """Whose account a call to `server` uses: the caller's, or the tenant's (None)."""
        if server.per_person:
            if person_id is None:
                raise SignInUnavailable(PERSON_NEEDED)
            return person_id
        return None

    async def ensure(self, server: ServerConfig, person: int | None, version: int) -> None:
        """Raise SignInNeeded unless the account is connected (refreshed if due)."""
        key = (server.server_id, person)
        cached = self._saved.get(key)
        if cached is None or cached[1] != version or cached[0] is None or not cached[0].usable:
            self._store(key, await self._read(key), version)
        await self.bearer(server, person)

    async def bearer(self, server: ServerConfig, person: int | None) -> str:
        """The access token to send now (SignInNeeded, SignInUnavailable)."""
        key = (server.server_id, person)
        saved, version = self._saved.get(key) or (None, -1)
        if saved is None:
            saved = await self._read(key)
            self._store(key, saved, version)
        if saved is None or not saved.usable:
            if person is None:
                raise SignInUnavailable(SHARED_NEEDED)
            raise SignInNeeded()
        if near_expiry(saved):
            saved = await self._refresh(server, key)
        return saved.access_token

    async def refused(self, server: ServerConfig, person: int | None) -> None:
        """The server refused the token (401, or 403 insufficient_scope): reconnect."""
        key = (server.server_id, person)
        saved, _ = self._saved.pop(key, (None, -1))
        if saved is not None and self.door is not None:
            await self.door.needs_reconnect(saved.row_id, saved.version)
        logger.info("[%s] sign-in refused by the server", server.name)

    async def connect_url(self, server: ServerConfig, person: int, base: str) -> str:
        """A one-time link that signs `person` in to `server`, bound to both."""
        assert self.door is not None
        token = await self.door.new_link(person, server.server_id)
        return f"{base.rstrip('/')}/connections/connect/{token}/"

    async def _read(self, key: Key) -> SavedSignIn | None:
        if self.door is None:
            return None
        return await self.door.read(*key)

    async def _refresh(self, server: ServerConfig, key: Key) -> SavedSignIn:
        lock = self._locks.setdefault(key, anyio.Lock())
        try:
            async with lock:  # one refresh per process; the row's claim for the others
                return await self._refresh_locked(server, key)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)

    async def _refresh_locked(self, server: ServerConfig, key: Key) -> SavedSignIn:
        assert self.door is not None
        current = await self._read(key)
        deadline = time.monotonic() + REFRESH_WAIT_SECONDS
        while True:
            if current is None or not current.usable:
                self._saved.pop(key, None)
                raise SignInNeeded()
            if not near_expiry(current):  # refreshed meanwhile (here or elsewhere)
                self._keep(key, current)
                return current
            if await self.door.claim_refresh(current.row_id, current.version):
                break
            if time.monotonic() > deadline:
                raise SignInUnavailable(REFRESH_TIMED_OUT)
            await anyio.sleep(REFRESH_POLL_SECONDS)  # another process is refreshing
            current = await self._read(key)
        try:
            tokens = await oauth_sign_in.refresh(current.tokens)
        except oauth_sign_in.SignInFailed as exc:
            self.recorder.sign_in_refreshed(server.server_id, ok=False)
            logger.warning("[%s] refresh failed: %s (%s)", server.name, exc.phrase, exc.detail)
            if exc.phrase == oauth_sign_in.UNREACHABLE:
                await self.door.release_claim(current.row_id, current.version)
                raise SignInUnavailable(oauth_sign_in.UNREACHABLE) from None
            await self.door.needs_reconnect(current.row_id, current.version)
            self._saved.pop(key, None)
            raise SignInNeeded() from None
        await self.door.save_refreshed(current.row_id, current.version, tokens)
        self.recorder.sign_in_refreshed(server.server_id, ok=True)
        renewed = SavedSignIn(current.row_id, current.version + 1, current.status, tokens)
        self._keep(key, renewed)
        return renewed

    def _keep(self, key: Key, saved: SavedSignIn) -> None:
        _, version = self._saved.get(key) or (None, -1)
        self._store(key, saved, version)

    def _store(self, key: Key, saved: SavedSignIn | None, version: int) -> None:
        self._saved[key] = (saved, version)
        self._saved.move_to_end(key)
        while len(self._saved) > SAVED_ENTRIES:
            self._saved.popitem(last=False)


class BearerAuth(httpx2.Auth):
    """Every request to a signed-in server carries the account's current access token; a
    refusal (401, 403 insufficient_scope) marks the account for a reconnect, no retry."""

    def __init__(self, accounts: ConnectedAccounts, server: ServerConfig, person: int | None):
        self.accounts = accounts
        self.server = server
        self.person = person
        self.rejected = False  # the server refused the token: the caller must sign in again

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        try:
            token = await self.accounts.bearer(self.server, self.person)
        except SignInNeeded:
            self.rejected = True
            raise
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        insufficient = response.status_code == 403 and "insufficient_scope" in response.headers.get(
            "www-authenticate", ""
        )
        if response.status_code == 401 or insufficient:
            self.rejected = True
            await self.accounts.refused(self.server, self.person)
