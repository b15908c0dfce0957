"""A connected account as the gateway holds it: one person's (or a tenant's) tokens for one
server, read through `database.reads` and never logged (no token in its repr)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CONNECTED = "connected"
NEEDS_RECONNECT = "needs_reconnect"


@dataclass(frozen=True, slots=True)
class SavedSignIn:
    row_id: int
    version: int  # moves on every change of the tokens (a refresh, a reconnect)
    status: str  # CONNECTED or NEEDS_RECONNECT
    tokens: dict[str, Any] = field(repr=False)  # `kernel.oauth_sign_in.tokens_of`

    @property
    def usable(self) -> bool:
        return self.status == CONNECTED and bool(self.tokens.get("access_token"))

    @property
    def access_token(self) -> str:
        return str(self.tokens.get("access_token", ""))

    @property
    def expires_at(self) -> float | None:
        value = self.tokens.get("expires_at")
        return float(value) if value else None
