"""Encryption of secrets at rest (server env values and header values), and of values the
installation hands out and must read back unaltered (`sealer`).

MultiFernet over `settings.ENCRYPTION_KEYS`: the first key encrypts, all decrypt, so keys
can be rotated without downtime (`manage.py rotate_encryption_keys`). Every process and
replica of an installation shares them, so what one seals any other opens.
"""

import base64
import hashlib
import hmac
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


@cache
def _sealer(keys: tuple[str, ...], secret_key: str, purpose: str) -> MultiFernet:
    # A key per purpose, derived from each configured key: a value sealed for one purpose
    # never opens as another's, nor as a secret at rest.
    sources = [key.encode() for key in keys] or [secret_key.encode()]
    derived = [hmac.new(source, purpose.encode(), hashlib.sha256).digest() for source in sources]
    return MultiFernet([Fernet(base64.urlsafe_b64encode(key)) for key in derived])


def sealer(purpose: str) -> MultiFernet:
    """Authenticated encryption for one `purpose` (a fixed name), with the installation's
    keys (rotated as `fernet`'s are). `decrypt` raises `InvalidToken` for anything it did
    not seal unaltered."""
    return _sealer(tuple(settings.ENCRYPTION_KEYS), settings.SECRET_KEY, purpose)
