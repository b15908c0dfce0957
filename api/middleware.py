"""What Django answers under /api/ outside the API's views (a path no route has, a method
a route does not take) in the API's one shape: a problem (RFC 9457)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from api.problems import CONTENT_TYPE, Problem, response

PREFIX = "/api/"
NO_ROUTE = "There is no API operation at this path."
NO_METHOD = "This operation does not take {method}; it takes {allowed}."


class ApiProblemsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        answer = self.get_response(request)
        if not request.path.startswith(PREFIX) or answer.status_code not in (404, 405):
            return answer
        if answer.get("Content-Type", "").startswith((CONTENT_TYPE, "application/json")):
            return answer
        if answer.status_code == 404:
            return response(Problem(404, NO_ROUTE))
        allowed = ", ".join(
            sorted(m.strip() for m in answer.get("Allow", "").split(",") if m.strip())
        )
        detail = NO_METHOD.format(method=request.method, allowed=allowed or "none")
        return response(Problem(405, detail, headers={"Allow": allowed}))
