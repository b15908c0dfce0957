"""DOT's request validator, plus the two things Workbench adds: every code and token is tied
to the member's grant (`OAuthGrantToken`), and a code is only issued under one.

The consent view records the grant and passes its id in the authorization credentials
(`GRANT_CREDENTIAL`); the code carries it to the token exchange, each access and refresh
token to the next rotation. The grant also keeps its code's SHA-256: a code used again
(RFC 6749 §4.1.2: someone else holds it) revokes the grant, and with it every token the
code produced.
"""

from __future__ import annotations

import hashlib
from typing import Any

from oauth2_provider.models import get_grant_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from accounts.models import OAuthGrant, OAuthGrantToken

GRANT_CREDENTIAL = "workbench_grant"


def code_checksum(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def _grant_of(**link: Any) -> OAuthGrant | None:
    found = OAuthGrantToken.objects.filter(**link).select_related("grant").first()
    return found.grant if found is not None else None


class GrantValidator(OAuth2Validator):
    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        grant_id = getattr(request, GRANT_CREDENTIAL, None)
        if grant_id is None:  # only the consent view issues codes, always under a grant
            raise errors.AccessDeniedError(request=request)
        created = super()._create_authorization_code(request, code, expires)
        OAuthGrantToken.objects.create(grant_id=grant_id, code=created)
        OAuthGrant.objects.filter(pk=grant_id).update(code_checksum=code_checksum(code["code"]))
        return created

    def validate_code(
        self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        _revoke_if_used(code, client)
        return False

    def invalidate_authorization_code(
        self, client_id: str, code: str, request: Any, *args: Any, **kwargs: Any
    ) -> None:
        """Two exchanges of one code at once both pass `validate_code`; the one that finds
        the code already gone revokes the grant (its own tokens too) before refusing."""
        try:
            super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        except errors.InvalidGrantError:
            _revoke_if_used(code, request.client)
            raise

    def _grant_for(self, request: Any, source_refresh_token: Any) -> OAuthGrant | None:
        if request.grant_type == "authorization_code":
            return _grant_of(code__code=request.code, code__application=request.client)
        if source_refresh_token is not None:
            return _grant_of(refresh_token=source_refresh_token)
        return None

    def _create_access_token(
        self, expires: Any, request: Any, token: Any, source_refresh_token: Any = None
    ) -> Any:
        grant = self._grant_for(request, source_refresh_token)
        if grant is None or grant.refusal():
            raise errors.InvalidGrantError(request=request)
        request.workbench_grant_row = grant
        access_token = super()._create_access_token(expires, request, token, source_refresh_token)
        OAuthGrantToken.objects.create(grant=grant, access_token=access_token)
        return access_token

    def _create_refresh_token(
        self, request: Any, refresh_token_code: Any, access_token: Any, previous_refresh_token: Any
    ) -> Any:
        refresh_token = super()._create_refresh_token(
            request, refresh_token_code, access_token, previous_refresh_token
        )
        grant = getattr(request, "workbench_grant_row", None) or _grant_of(
            access_token=access_token
        )
        OAuthGrantToken.objects.create(grant=grant, refresh_token=refresh_token)
        return refresh_token

    def validate_refresh_token(
        self, refresh_token: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        """A refresh token of a grant that may no longer be used (withdrawn, its member gone
        from the tenant or deactivated) is refused like an unknown one."""
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        grant = _grant_of(refresh_token=request.refresh_token_instance)
        return grant is not None and not grant.refusal()


def _revoke_if_used(code: str, client: Any) -> None:
    """A code of this client that is gone (exchanged already) is being replayed: revoke
    its grant. An expired code never exchanged is still there and revokes nothing."""
    if client is None or get_grant_model().objects.filter(code=code, application=client).exists():
        return
    grant = OAuthGrant.objects.filter(code_checksum=code_checksum(code), application=client).first()
    if grant is not None:
        grant.revoke()
