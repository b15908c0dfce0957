"""Repeats of one log message are bounded per minute and counted."""

import logging

from mcp_gateway.logfilter import RepeatLimit


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("mcp.client.stdio", logging.ERROR, __file__, 1, message, None, None)


def test_repeats_are_bounded_and_counted(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("mcp_gateway.logfilter.time.monotonic", lambda: clock[0])
    limit = RepeatLimit(per_minute=5)
    kept = [limit.filter(record("Failed to parse JSONRPC message")) for _ in range(1000)]
    assert sum(kept) == 5
    assert limit.filter(record("another message"))
    clock[0] += 61
    later = record("Failed to parse JSONRPC message")
    assert limit.filter(later)
    assert later.msg.endswith("[995 similar messages dropped]")
