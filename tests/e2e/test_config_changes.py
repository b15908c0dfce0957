"""Configuration edited while clients are connected, and what a stdio server inherits."""

import json
import os
import uuid

import pytest

from tests.harness.procs import processes_with
from tests.harness.results import error_of, payload, text_of, use
from tests.harness.waits import wait_until

pytestmark = pytest.mark.anyio


async def test_edited_server_gets_a_new_connection_and_the_old_one_closes(
    live_gateway, amake_setup
):
    old_marker, new_marker = uuid.uuid4().hex, uuid.uuid4().hex
    setup = await amake_setup()
    dev = await setup.atoolbox("dev")
    server = await setup.afixture_server(dev, "fixture", "--prefix", old_marker)
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        before = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "1"}))
        assert text_of(before) == f"{old_marker}1"
        # An admin edits the server while the client is connected.
        server.args = [server.args[0], "--prefix", new_marker]
        await server.asave()
        after = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "2"}))
        assert text_of(after) == f"{new_marker}2"
    wait_until(lambda: processes_with(old_marker) == [], 15, "the old server process to exit")
    assert len(processes_with(new_marker)) == 1


async def test_filter_edit_applies_without_reconnecting(live_gateway, amake_setup):
    marker = uuid.uuid4().hex
    setup = await amake_setup()
    server = await setup.afixture_server(await setup.atoolbox("dev"), "fixture", "--prefix", marker)
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        pids = processes_with(marker)
        server.tool_filters = ["add"]
        await server.asave()
        result = await session.call_tool("use_tool", use("dev", "fixture", "echo", {"text": "x"}))
        assert error_of(result)[0] == "TOOL_NOT_FOUND"
        assert processes_with(marker) == pids


async def test_removed_server_is_not_found(live_gateway, amake_setup):
    setup = await amake_setup()
    server = await setup.afixture_server(await setup.atoolbox("dev"), "fixture")
    async with live_gateway.session(setup.key) as session:
        payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
        await server.adelete()
        result = await session.call_tool("use_tool", use("dev", "fixture", "echo"))
    assert error_of(result)[0] == "SERVER_NOT_FOUND"


async def test_stdio_server_gets_only_its_env_and_a_minimal_base(live_gateway, amake_setup):
    os.environ["WORKBENCH_TEST_GATEWAY_SECRET"] = "must-not-leak"
    os.environ["WORKBENCH_TEST_TOKEN"] = "expanded-token"
    try:
        setup = await amake_setup()
        await setup.afixture_server(
            await setup.atoolbox("dev"),
            "fixture",
            env={
                "GIVEN": "plain",
                "TOKEN": "${WORKBENCH_TEST_TOKEN}",
                "WITH_DEFAULT": "${WORKBENCH_TEST_UNSET:-fallback}",
                "LOWER": "${lowercase}",
            },
        )
        async with live_gateway.session(setup.key) as session:
            payload(await session.call_tool("open_toolbox", {"toolbox": "dev"}))
            result = await session.call_tool("use_tool", use("dev", "fixture", "env"))
    finally:
        del os.environ["WORKBENCH_TEST_GATEWAY_SECRET"], os.environ["WORKBENCH_TEST_TOKEN"]
    env = json.loads(text_of(result))
    env.pop("LC_CTYPE", None)  # Python's own locale coercion may add it in the child
    base = {name for name in ("PATH", "HOME", "LANG") if name in os.environ}
    assert set(env) == {"GIVEN", "TOKEN", "WITH_DEFAULT", "LOWER"} | base
    assert env["TOKEN"] == "expanded-token"
    assert env["WITH_DEFAULT"] == "fallback"
    assert env["LOWER"] == "${lowercase}"
    assert "must-not-leak" not in json.dumps(env)
