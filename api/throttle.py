"""Requests per API token or OAuth sign-in (WORKBENCH_API_RATE_LIMIT), counted in the
shared cache; over
the limit, a 429 problem with Retry-After (`api.problems`)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja.throttling import SimpleRateThrottle

from api.actor import Actor


class TokenRateThrottle(SimpleRateThrottle):
    scope = "api-token"

    def __init__(self) -> None:
        super().__init__(settings.WORKBENCH_API_RATE_LIMIT)

    def allow_request(self, request: HttpRequest) -> bool:
        # Read at each request, so that a changed setting (or a test's) applies at once.
        self.num_requests, self.duration = self.parse_rate(settings.WORKBENCH_API_RATE_LIMIT)
        return super().allow_request(request)

    def get_cache_key(self, request: HttpRequest) -> str | None:
        actor = getattr(request, "auth", None)
        if not isinstance(actor, Actor):
            return None
        return self.cache_format % {"scope": self.scope, "ident": actor.rate_key}
