"""/favicon.ico: browsers ask for it on every admin page; a 404 there logged
`Not Found: /favicon.ico` each time. No content (the browser's own icon), cached a day."""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

MAX_AGE = 86400


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(status=204)
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    return response
