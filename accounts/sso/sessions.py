"""Ending a person's access at once (a back-channel logout, a failed re-check): their
admin sessions opened through the provider, every OAuth grant they gave a connector (its
tokens stop at the connector's next /mcp request: `accounts.oauth_revocation`), and their
personal API tokens (the management API's). Or, for a front-channel logout (unsigned),
only the admin sessions of one provider session."""

from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts.models import ApiToken, OAuthGrant, SsoIdentity, SsoSession

log = logging.getLogger("workbench.sso")

SESSION_KEY = "workbench_sso"  # in a session opened through a provider: its identity


def _store(session_key: str) -> Any:
    return import_module(settings.SESSION_ENGINE).SessionStore(session_key)


def end_sessions(sessions: list[SsoSession]) -> int:
    for session in sessions:
        _store(session.session_key).delete()
        session.delete()
    return len(sessions)


def forget_ended_sessions(identity: SsoIdentity) -> None:
    """Drop the records of this person's sessions that ended on their own (logged out,
    expired), so that the table holds live sessions only."""
    for session in SsoSession.objects.filter(identity=identity):
        if not _store(session.session_key).exists(session.session_key):
            session.delete()


def end_provider_session(issuer: str, sid: str) -> int:
    """End the admin sessions opened in one provider session (that issuer's `sid`): what a
    front-channel logout may do. Grants, API tokens and re-checks are left as they are."""
    sessions = list(SsoSession.objects.filter(identity__issuer=issuer, sid=sid))
    ended = end_sessions(sessions)
    if ended:
        log.info("sso provider session ended", extra={"issuer": issuer, "sessions": ended})
    return ended


def end_access(identity: SsoIdentity, sid: str = "") -> tuple[int, int]:
    """(sessions ended, grants revoked). With a `sid`, only that provider session's admin
    sessions end; the person's grants and API tokens are revoked either way."""
    sessions = SsoSession.objects.filter(identity__user_id=identity.user_id)
    if sid:
        sessions = sessions.filter(sid=sid)
    ended = end_sessions(list(sessions))
    grants = list(OAuthGrant.objects.filter(user_id=identity.user_id, revoked_at__isnull=True))
    for grant in grants:
        grant.revoke()
    tokens = list(ApiToken.objects.filter(user_id=identity.user_id, revoked_at__isnull=True))
    for token in tokens:
        token.revoke()
    identity.logged_out_at = timezone.now()
    identity.save(update_fields=["logged_out_at"])
    log.info(
        "sso access ended",
        extra={
            "provider": identity.provider,
            "user": identity.user_id,
            "sessions": ended,
            "grants": len(grants),
        },
    )
    return ended, len(grants)
