"""Every error of the API in one shape: RFC 9457 problem details.

`{"type", "title", "status", "detail"}` and, for invalid input, `errors`: one entry per
invalid field with the message the admin gives for it (a model's `full_clean`), or the
JSON path and message of the configuration file's own checks.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, Throttled
from ninja.errors import ValidationError as NinjaValidationError

CONTENT_TYPE = "application/problem+json"
TYPE_BASE = "urn:workbench:problem:"
# status -> (type name, title)
KINDS = {
    400: ("bad-request", "Bad request"),
    401: ("unauthorized", "Not authenticated"),
    403: ("forbidden", "Forbidden"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    409: ("conflict", "Conflict"),
    422: ("invalid", "Invalid input"),
    429: ("rate-limited", "Too many requests"),
}


class FieldError(Schema):
    field: str
    message: str


class ProblemOut(Schema):
    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None


class Problem(Exception):
    """Raise to answer with a problem: the status picks type and title."""

    def __init__(
        self,
        status: int,
        detail: str,
        errors: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = errors
        self.headers = headers or {}


def invalid(errors: list[dict[str, str]], detail: str = "") -> Problem:
    count = len(errors)
    return Problem(
        422, detail or f"{count} invalid field{'s' if count != 1 else ''}.", errors=errors
    )


def from_validation(exc: ValidationError) -> Problem:
    """A model's `full_clean` errors, field by field, the admin's messages unchanged."""
    if hasattr(exc, "error_dict"):
        errors = [
            {"field": "" if field == "__all__" else field, "message": message}
            for field, messages in exc.message_dict.items()
            for message in messages
        ]
    else:
        errors = [{"field": "", "message": message} for message in exc.messages]
    return invalid(errors)


def response(problem: Problem) -> HttpResponse:
    name, title = KINDS.get(problem.status, ("error", "Error"))
    body: dict[str, Any] = {
        "type": TYPE_BASE + name,
        "title": title,
        "status": problem.status,
        "detail": problem.detail,
    }
    if problem.errors is not None:
        body["errors"] = problem.errors
    answer = HttpResponse(json.dumps(body), status=problem.status, content_type=CONTENT_TYPE)
    for header, value in problem.headers.items():
        answer[header] = value
    return answer


def _location(loc: list[Any]) -> str:
    parts = [str(part) for part in loc if part not in ("body", "payload", "query", "path")]
    return ".".join(parts)


def install(api: NinjaAPI) -> None:
    """Every exception the API raises answered as a problem."""

    def on_problem(request: HttpRequest, exc: Any) -> HttpResponse:  # Problem
        return response(exc)

    def on_invalid(request: HttpRequest, exc: Any) -> HttpResponse:  # NinjaValidationError
        errors = [
            {"field": _location(list(error.get("loc", []))), "message": error.get("msg", "")}
            for error in exc.errors
        ]
        return response(invalid(errors))

    def on_model_invalid(request: HttpRequest, exc: Any) -> HttpResponse:  # ValidationError
        return response(from_validation(exc))

    def on_auth(request: HttpRequest, exc: Any) -> HttpResponse:  # AuthenticationError
        return response(Problem(401, MISSING_TOKEN, headers={"WWW-Authenticate": "Bearer"}))

    def on_throttled(request: HttpRequest, exc: Any) -> HttpResponse:  # Throttled
        wait = max(math.ceil(exc.wait or 1), 1)  # as django-ninja's own Retry-After
        return response(
            Problem(
                429,
                f"This credential made too many requests; retry in {wait} s.",
                headers={"Retry-After": str(wait)},
            )
        )

    def on_http(request: HttpRequest, exc: Any) -> HttpResponse:  # HttpError
        detail = str(exc.message)
        if exc.status_code == 400 and detail.startswith("Cannot parse request body"):
            detail = NOT_JSON  # django-ninja's own words, and in DEBUG the parser's
        return response(Problem(exc.status_code, detail))

    api.add_exception_handler(Problem, on_problem)
    api.add_exception_handler(NinjaValidationError, on_invalid)
    api.add_exception_handler(ValidationError, on_model_invalid)
    api.add_exception_handler(AuthenticationError, on_auth)
    api.add_exception_handler(Throttled, on_throttled)
    api.add_exception_handler(HttpError, on_http)


NOT_JSON = "The request body is not valid JSON."
MISSING_TOKEN = "An API token is required: send 'Authorization: Bearer <api token>'."
