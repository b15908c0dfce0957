"""Client ID Metadata Documents: a client whose id is an https URL is described by the JSON
document at that URL. DOT resolves and caches such clients; this fetcher makes its request
under the egress policy every outbound request shares (`kernel.egress`: the address is
resolved, checked and pinned, so a client id cannot reach the gateway's loopback ports,
cloud metadata or a private network unless WORKBENCH_EGRESS_ALLOW allows it), with no
redirects, a time bound (CIMD_FETCH_TIMEOUT_SECONDS) and a size bound
(CIMD_MAX_DOCUMENT_SIZE).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
from asgiref.sync import async_to_sync
from oauth2_provider.cimd import (
    CIMDError,
    SafeMetadataFetcher,
    _effective_max_age,
    _validate_client_id_url,
)
from oauth2_provider.settings import oauth2_settings

from accounts.oauth_clients import redirect_uri_refusal
from kernel.classified import ClassifiedFailure
from kernel.egress import EgressPolicy, PinnedTransport


class EgressFetcher(SafeMetadataFetcher):
    inner: httpx2.AsyncBaseTransport | None = None  # tests hand in their own transport

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        _validate_client_id_url(client_id)
        return async_to_sync(self._fetch)(client_id)

    async def _fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        transport = PinnedTransport(EgressPolicy.from_settings(), self.inner)
        limit = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE
        headers = {"Accept": "application/json, application/*+json"}
        try:
            with anyio.fail_after(oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS):
                async with (
                    httpx2.AsyncClient(transport=transport, follow_redirects=False) as http,
                    http.stream("GET", client_id, headers=headers) as response,
                ):
                    body = b""
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > limit:
                            raise CIMDError("client_id document exceeds the maximum allowed size")
        except TimeoutError:
            raise CIMDError("client_id document was not fetched in time") from None
        except ClassifiedFailure as failure:  # refused by the egress policy, or unresolvable
            raise CIMDError(f"could not fetch client_id document: {failure}") from None
        except httpx2.HTTPError as exc:
            raise CIMDError(f"could not fetch client_id document: {exc}") from None
        if response.status_code != 200:
            raise CIMDError(f"client_id document returned HTTP {response.status_code}")
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json" and not (
            media_type.startswith("application/") and media_type.endswith("+json")
        ):
            raise CIMDError(f"client_id document is not JSON (Content-Type: {media_type!r})")
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise CIMDError("client_id document is not valid JSON") from exc
        if not isinstance(data, dict):
            raise CIMDError("client_id document must be a JSON object")
        for uri in data.get("redirect_uris") or []:
            refusal = redirect_uri_refusal(uri) if isinstance(uri, str) else ""
            if refusal:
                raise CIMDError(refusal)
        return data, _effective_max_age(response.headers.get("cache-control"))
