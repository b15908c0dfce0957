"""Liveness and readiness probes: unauthenticated, cheap, and free of secrets."""

import shutil

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from workbench_site import drain

PROBE_KEY = "wb:readyz"


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    from mcp_gateway import warming  # the SDK: imported when served, not at every command

    checks = {"database": _database_ok(), "cache": _cache_ok()}
    ready = all(checks.values()) and not drain.draining.is_set() and not warming.is_set()
    status = (
        "draining"
        if drain.draining.is_set()
        else "warming"
        if warming.is_set()
        else "ok"
        if ready
        else "unavailable"
    )
    body = {"status": status, "checks": checks, "details": _details()}
    return JsonResponse(body, status=200 if ready else 503)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:
        return False


def _cache_ok() -> bool:
    try:
        cache.set(PROBE_KEY, 1, 10)
        return cache.get(PROBE_KEY) == 1
    except Exception:
        return False


def _details() -> dict[str, str]:
    """Not checks (they never make the gateway unready): how stdio servers are started."""
    if settings.WORKBENCH_SANDBOX == "none":
        sandbox = "none: stdio servers run unsandboxed, as the gateway's own user"
    elif shutil.which("bwrap") is None:
        sandbox = "bwrap: bubblewrap is not installed, stdio servers cannot start"
    else:
        sandbox = "bwrap"
    return {"sandbox": sandbox}
