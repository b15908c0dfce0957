"""Personal access token material for the management API: `wbp_<prefix>_<secret>`.

A token is a member's own credential for `/api/v1` (never for `/mcp`, whose keys are
`wb_...` and whose OAuth tokens are `wbo_...`): its prefix tells both the API and the
gateway what it is before any lookup. Only the SHA-256 of the whole token is stored; the
prefix finds the row, then the hashes are compared in constant time (as API keys).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

TOKEN_PREFIX = "wbp_"
TOKEN_RE = re.compile(r"^wbp_([a-z0-9]{8})_([A-Za-z0-9_-]{43})$")
_PREFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def is_api_token(value: str) -> bool:
    """Whether a bearer value has the form of a management API token."""
    return value.startswith(TOKEN_PREFIX)


def new_prefix() -> str:
    return "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(8))


def new_token(prefix: str) -> str:
    return f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_prefix(token: str) -> str | None:
    match = TOKEN_RE.match(token)
    return match.group(1) if match else None


def hashes_match(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token).encode(), stored_hash.encode())
