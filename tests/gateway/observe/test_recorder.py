"""The recording side receives each meta-tool's outcome as data: the labels come from what
the configuration knows, the call log keeps what the client named, and a cancelled call is
recorded as such."""

from __future__ import annotations

import time

import mcp_types as types

from mcp_gateway.observe.calllog import CallLog
from mcp_gateway.observe.metrics import metrics
from mcp_gateway.observe.outcome import Named, Outcome
from mcp_gateway.observe.recorder import Recorder, outcome_label
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import ServerConfig, TenantConfig, ToolboxConfig

SERVER = ServerConfig("files", "stdio", command="true")
TOOLBOX = ToolboxConfig("rec", "recorded", (SERVER,))
CALLER = Caller(
    KeyRecord(5, "pre", "", 1, False, None, None, 1), TenantConfig(1, "rec-t", True, 1, (TOOLBOX,))
)
OK = types.CallToolResult(content=[types.TextContent(type="text", text="fine")])


def count(*labels: str) -> float:
    return metrics().calls.labels(*labels)._value.get()


def test_an_outcome_is_labelled_by_what_it_came_to():
    assert outcome_label(Outcome(None)) == "cancelled"
    assert outcome_label(Outcome(OK)) == "ok"
    assert outcome_label(Outcome(OK.model_copy(update={"is_error": True}))) == "tool_error"
    assert outcome_label(Outcome(OK, error_code="TOOL_NOT_FOUND")) == "TOOL_NOT_FOUND"
    # A tool the server's filter leaves out: the client is told TOOL_NOT_FOUND, the log more.
    filtered = Outcome(OK, error_code="TOOL_NOT_FOUND", recorded_as="filtered")
    assert outcome_label(filtered) == "filtered"


def test_labels_come_from_the_configuration_and_the_call_log_keeps_the_names_sent():
    entries = []
    log = CallLog(entries.extend, 10, 10)
    log.put = entries.append  # what would go to the writer
    named = Named("rec", "files", "read")
    before = count("rec-t", "rec", "files", "read", "ok")
    Recorder(log).use_tool(CALLER, {"tool": {}}, Outcome(OK, named, TOOLBOX, SERVER), 0.0)
    assert count("rec-t", "rec", "files", "read", "ok") == before + 1
    [entry] = entries
    assert (entry.toolbox, entry.server, entry.tool, entry.outcome) == (
        "rec",
        "files",
        "read",
        "ok",
    )
    assert (entry.key_id, entry.key_prefix, entry.result) == (5, "pre", OK)


def test_an_unknown_server_leaves_its_labels_empty_but_the_log_says_what_was_named():
    entries = []
    log = CallLog(entries.extend, 10, 10)
    log.put = entries.append
    named = Named("rec", "nope", "read")
    failed = Outcome(OK, named, TOOLBOX, None, error_code="SERVER_NOT_FOUND")
    before = count("rec-t", "rec", "", "", "SERVER_NOT_FOUND")
    Recorder(log).use_tool(CALLER, {}, failed, time.perf_counter())
    assert count("rec-t", "rec", "", "", "SERVER_NOT_FOUND") == before + 1
    assert (entries[0].server, entries[0].error_code) == ("nope", "SERVER_NOT_FOUND")


def test_a_cancelled_call_is_recorded_without_a_result():
    before = count("rec-t", "rec", "files", "read", "cancelled")
    Recorder().use_tool(
        CALLER, {}, Outcome(None, Named("rec", "files", "read"), TOOLBOX, SERVER), 0
    )
    assert count("rec-t", "rec", "files", "read", "cancelled") == before + 1


def test_what_the_secrets_guard_removed_is_counted_and_marked_beside_the_policy():
    entries = []
    log = CallLog(entries.extend, 10, 10)
    log.put = entries.append
    removed = metrics().secrets_removed
    before = removed.labels("rec-t", "Private Key")._value.get()
    outcome = Outcome(
        OK,
        Named("rec", "files", "read"),
        TOOLBOX,
        SERVER,
        decision="allowed by: tool 'read', everyone",
        secrets_removed=(("Private Key", 1), ("stored secret", 2)),
    )
    Recorder(log).use_tool(CALLER, {"tool": {}}, outcome, 0.0)
    assert removed.labels("rec-t", "Private Key")._value.get() == before + 1
    [entry] = entries
    assert entry.decision == (
        "allowed by: tool 'read', everyone; secrets removed: Private Key (1), stored secret (2)"
    )
