"""A downstream's own JSON-RPC error passes through as DOWNSTREAM_ERROR with its own
message, whatever its code: -32001 is also the SDK's local timeout code and -32000 its
"connection closed" code, but what happened decides (the gateway's own deadline passed, the
stream really ended), not the code. A real hang is a TIMEOUT."""

from __future__ import annotations

import pytest

from tests.harness.results import error_of, text_of, use

# Between the gateway and its downstream servers (processes, networks): the same whatever
# the test database, so one pass runs it (the PostgreSQL one under make test: once_pg).
pytestmark = [pytest.mark.anyio, pytest.mark.once_pg]

CODES = [-32001, -32000, -32603, 4242]


async def test_a_servers_own_error_codes_are_its_answer_and_a_hang_is_a_timeout(
    live_gateway, amake_setup
):
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    await setup.afixture_server(dev, "codes", timeout=1)
    async with live_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        answers = []
        for code in CODES:
            message = f"the server's own words for {code}"
            arguments = {"code": code, "message": message}
            answers.append(
                await session.call_tool("use_tool", use("dev", "codes", "raise_code", arguments))
            )
        still_up = await session.call_tool("use_tool", use("dev", "codes", "echo", {"text": "up"}))
        hung = await session.call_tool("use_tool", use("dev", "codes", "slow", {"seconds": 30}))
    for code, result in zip(CODES, answers, strict=True):
        assert error_of(result) == (
            "DOWNSTREAM_ERROR",
            "Error executing tool 'raise_code' in server 'codes' (toolbox 'dev'): "
            f"the server's own words for {code}",
        )
        assert "incident" not in result.structured_content["error"]["details"]
    # -32000 from the server did not count as the connection closing.
    assert text_of(still_up) == "up"
    assert error_of(hung) == (
        "TIMEOUT",
        "Error executing tool 'slow' in server 'codes' (toolbox 'dev'): timed out after 1s",
    )
    assert len(hung.structured_content["error"]["details"]["incident"]) == 12
