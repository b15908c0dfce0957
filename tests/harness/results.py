"""Readers of meta-tool results, and raw JSON-RPC for what the SDK client would not send."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def text_of(result: types.CallToolResult) -> str:
    assert result.content, f"result has no content: {result}"
    first = result.content[0]
    assert isinstance(first, types.TextContent), f"first content is not text: {first}"
    return first.text


def payload(result: types.CallToolResult) -> dict[str, Any]:
    """A successful meta-tool result's JSON, checked to match its structuredContent."""
    assert not result.is_error, f"unexpected error result: {text_of(result)}"
    data = json.loads(text_of(result))
    assert result.structured_content == data
    return data


def error_of(result: types.CallToolResult) -> tuple[str, str]:
    """(code, text) of an error result, checked for the spec's shape."""
    assert result.is_error, f"expected an error result, got: {result}"
    text = text_of(result)
    assert result.structured_content is not None
    error = result.structured_content["error"]
    assert error["message"] == text
    assert isinstance(error["details"], dict)
    return error["code"], text


def refusal_json(status: int, reason: str, message: str, **data: Any) -> dict[str, Any]:
    """The body of a request /mcp refused before MCP: a JSON-RPC error (id null), which the
    SDK's client hands to its user; the reason in `data.reason`."""
    code = -32600 if status == 400 else -32010
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": message, "data": {"reason": reason, **data}},
    }


def refusal_reason(response: Any, status: int) -> str:
    """The reason of a request refused with `status`, checked for the refusals' shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert (body["jsonrpc"], body["id"]) == ("2.0", None), body
    return body["error"]["data"]["reason"]


def use(toolbox: str, server: str, name: str, arguments: dict[str, Any] | None = None) -> dict:
    call: dict[str, Any] = {"tool": {"toolbox": toolbox, "server": server, "name": name}}
    if arguments is not None:
        call["arguments"] = arguments
    return call


INITIALIZE_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"},
}


async def raw_rpc(
    http: Any,
    url: str,
    method: str,
    params: dict[str, Any],
    *,
    key: str | None = None,
    session_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """POST one JSON-RPC request; a session id comes with the protocol version header."""
    sent = {"Accept": "application/json, text/event-stream"}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    if session_id:
        sent |= {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
    sent |= headers or {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return await http.post(url, json=body, headers=sent)


def rpc_json(response: Any) -> Any:
    """A POST's JSON-RPC answer, as one JSON body or as the last message of an SSE stream
    (a tools/call of a session that declared elicitation, sampling or roots is served as
    a stream: a server's question may come on it)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads([line for line in data if line][-1])
    return response.json()
