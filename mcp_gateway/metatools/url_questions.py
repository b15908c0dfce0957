"""A sign-in or an approval the gateway needs, asked of a 2026-07-28 client as a URL
elicitation (the contract: "a URL elicitation where the client declared it").

A 2025-11-25 client that declared URL elicitation gets `AUTH_REQUIRED` or
`APPROVAL_REQUIRED` as the -32042 error (`front.server.url_elicitation`); 2026-07-28 has
no such error, and asks for input with an input-required result instead: the link as a
URL-mode `inputRequests` entry, with the gateway's own sealed state (`QUESTION`, no
server's). The client opens the link for its person, then calls again with that state;
the retry takes the call's whole path again (an approved call runs; a sign-in made lets
it connect) and is not asked again: a link still not used answers the contract's error
result, so a client never loops on a question nobody answered.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from mcp_gateway.metatools import errors, input_state
from mcp_gateway.metatools.errors import ErrorCode, GatewayError

# The sealed state's server part when the question was the gateway's own.
QUESTION = "workbench:url-question"
KEY = "workbench"  # the question's key in `inputRequests`


def declares_url(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether the client's declared capabilities (as relayed) name URL elicitation."""
    elicitation = (capabilities or {}).get("elicitation")
    return isinstance(elicitation, Mapping) and isinstance(elicitation.get("url"), Mapping)


def as_question(error: GatewayError, bound: input_state.Bound) -> types.InputRequiredResult | None:
    """`error` as a URL elicitation (None: not a link the client can open for a person)."""
    field = errors.ELICITED_URLS.get(ErrorCode(error.code))
    if field is None or not error.details.get(field):
        return None
    link = types.ElicitRequest(
        params=types.ElicitRequestURLParams(
            mode="url",
            message=error.message,
            url=str(error.details[field]),
            elicitation_id=uuid.uuid4().hex,
        )
    )
    return types.InputRequiredResult(
        input_requests={KEY: link}, request_state=input_state.seal(bound, QUESTION)
    )
