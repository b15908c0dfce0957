"""A provider's metadata (`.well-known/openid-configuration`) and signing keys (JWKS),
cached in the process; the keys are fetched again when a token names a key id the cache
lacks (the provider rotated its keys), at most once per `REFETCH_SECONDS`."""

from __future__ import annotations

import threading
import time
from typing import Any

from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from accounts.sso.http import ProviderUnreachable, get_json
from accounts.sso.providers import Provider

METADATA_SECONDS = 3600
KEYS_SECONDS = 3600
REFETCH_SECONDS = 10

_lock = threading.Lock()
_metadata: dict[str, tuple[float, dict[str, Any]]] = {}
_keys: dict[str, tuple[float, KeySet]] = {}
_refetched: dict[str, float] = {}  # when an unknown key id last made us fetch the keys


def metadata(provider: Provider) -> dict[str, Any]:
    now = time.monotonic()
    with _lock:
        cached = _metadata.get(provider.issuer)
    if cached and now - cached[0] < METADATA_SECONDS:
        return cached[1]
    found = get_json(provider.discovery_url)
    for field in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(found.get(field), str):
            raise ProviderUnreachable(f"{provider.discovery_url}: no {field}")
    if found["issuer"].rstrip("/") != provider.issuer:
        raise ProviderUnreachable(f"{provider.discovery_url}: issuer {found['issuer']!r}")
    with _lock:
        _metadata[provider.issuer] = (now, found)
    return found


def keys(provider: Provider, kid: str | None = None) -> KeySet:
    """The provider's keys; fetched afresh when `kid` is not among the cached ones."""
    uri = metadata(provider)["jwks_uri"]
    now = time.monotonic()
    with _lock:
        cached = _keys.get(uri)
    if cached is not None and now - cached[0] < KEYS_SECONDS:
        known = kid is None or any(key.kid == kid for key in cached[1].keys)
        if known or now - _refetched.get(uri, -REFETCH_SECONDS) < REFETCH_SECONDS:
            return cached[1]
        _refetched[uri] = now
    try:
        key_set = KeySet.import_key_set(get_json(uri))
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise ProviderUnreachable(f"{uri}: not a key set ({type(exc).__name__})") from None
    with _lock:
        _keys[uri] = (now, key_set)
    return key_set


def forget() -> None:
    """Drop every cached answer (tests; an operator's reload)."""
    with _lock:
        _metadata.clear()
        _keys.clear()
        _refetched.clear()
