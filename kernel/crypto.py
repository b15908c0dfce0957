"""Encryption of secrets at rest (server env values and header values).

MultiFernet over `settings.ENCRYPTION_KEYS`: the first key encrypts, all decrypt, so keys
can be rotated without downtime (`manage.py rotate_encryption_keys`).
"""

import base64
import hashlib
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class SecretDecryptionError(Exception):
    """A stored secret could not be decrypted with any configured key."""


@cache
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    if not keys:
        # DEBUG only (settings refuse to start otherwise): a key derived from SECRET_KEY.
        derived = base64.urlsafe_b64encode(hashlib.sha256(secret_key.encode()).digest())
        return MultiFernet([Fernet(derived)])
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(f"ENCRYPTION_KEYS holds an invalid Fernet key: {exc}") from exc


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.ENCRYPTION_KEYS), settings.SECRET_KEY)


def encrypt(plaintext: str) -> str:
    return fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretDecryptionError(
            "A stored secret cannot be decrypted with ENCRYPTION_KEYS "
            "(was a key removed before rotation?)"
        ) from exc
