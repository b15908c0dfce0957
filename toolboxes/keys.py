"""API key material: generation, hashing, parsing. Keys are `wb_<prefix>_<secret>`.

Only the SHA-256 of the full key is stored; the prefix finds the row, then the hashes are
compared in constant time. 32 random bytes (256 bits) make the secret.
"""

import hashlib
import hmac
import re
import secrets

KEY_RE = re.compile(r"^wb_([a-z0-9]{8})_([A-Za-z0-9_-]{43})$")
PREFIX_RE = re.compile(r"^[a-z0-9]{8}$")
_PREFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def new_prefix() -> str:
    return "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(8))


def new_key(prefix: str) -> str:
    return f"wb_{prefix}_{secrets.token_urlsafe(32)}"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def parse_prefix(key: str) -> str | None:
    """The prefix of a well-formed key, or None."""
    match = KEY_RE.match(key)
    return match.group(1) if match else None


def hashes_match(key: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key).encode(), stored_hash.encode())
