"""A secret credential's form, `<marker><prefix>_<secret>`, and its issue: one rule for
API keys (`wb_`) and personal API tokens (`wbp_`).

The marker says what a credential is before any lookup; the prefix (8 characters) finds
its row; only the SHA-256 of the whole credential is stored, compared in constant time. 32
random bytes (256 bits) make the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

PREFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
PREFIX_LENGTH = 8
ISSUE_ATTEMPTS = 10  # prefixes drawn before giving up: a collision is 1 in 36**8 per row


@dataclass(frozen=True)
class CredentialForm:
    marker: str  # "wb_": an API key; "wbp_": a personal API token
    pattern: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        regex = rf"^{re.escape(self.marker)}([a-z0-9]{{{PREFIX_LENGTH}}})_([A-Za-z0-9_-]{{43}})$"
        object.__setattr__(self, "pattern", re.compile(regex))

    def is_one(self, value: str) -> bool:
        """Whether `value` claims to be of this form (its marker), well-formed or not."""
        return value.startswith(self.marker)

    def new(self, prefix: str) -> str:
        return f"{self.marker}{prefix}_{secrets.token_urlsafe(32)}"

    def parse_prefix(self, value: str) -> str | None:
        """The prefix of a well-formed credential, or None."""
        match = self.pattern.match(value)
        return match.group(1) if match else None

    def matches(self, value: str, stored_hash: str) -> bool:
        return hmac.compare_digest(hash_of(value).encode(), stored_hash.encode())

    def issue(self, row: Any, hash_field: str) -> str:
        """Give `row` (a model with a unique `prefix`) a new credential: pick a free prefix,
        store the hash in `hash_field`, save; return the credential, shown this once."""
        for _ in range(ISSUE_ATTEMPTS):
            row.prefix = new_prefix()
            full = self.new(row.prefix)
            setattr(row, hash_field, hash_of(full))
            try:
                with transaction.atomic():
                    row.save()
            except IntegrityError:
                if type(row)._default_manager.filter(prefix=row.prefix).exists():
                    continue  # a prefix collision: draw again
                raise
            return full
        raise RuntimeError(f"Could not find a free prefix for a {self.marker}... credential")


def new_prefix() -> str:
    return "".join(secrets.choice(PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))


def hash_of(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
