"""The log filter bounds repeats and volume per source; distinct messages and other
sources are never silenced by one chatty source."""

import logging

import pytest

from mcp_gateway.observe.logfilter import RepeatLimit


def record(message: str, *args: object, source: str | None = None) -> logging.LogRecord:
    rec = logging.LogRecord(
        "workbench.downstream.stderr", logging.INFO, __file__, 1, message, args, None
    )
    if source is not None:
        rec.source = source
    return rec


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("mcp_gateway.observe.logfilter.time.monotonic", lambda: now[0])
    return now


def test_repeats_are_bounded_and_counted(clock):
    limit = RepeatLimit(per_minute=5)
    kept = [limit.filter(record("Failed to parse JSONRPC message")) for _ in range(1000)]
    assert sum(kept) == 5
    assert limit.filter(record("another message"))
    clock[0] += 61
    later = record("Failed to parse JSONRPC message")
    assert limit.filter(later)
    assert later.msg.endswith("[995 similar messages dropped]")


def test_distinct_lines_of_one_format_are_not_repeats(clock):
    """Every stderr line has the format "[%s] %s": what counts is the text as formatted."""
    limit = RepeatLimit(per_minute=20)
    kept = [
        limit.filter(record("[%s] %s", f"t{server}/dev/s", f"line {n}", source=f"t{server}/dev/s"))
        for server in range(5)
        for n in range(10)
    ]
    assert sum(kept) == 50


def test_one_chatty_source_does_not_use_up_another_sources_budget(clock):
    limit = RepeatLimit(per_minute=20, budget_per_minute=100)
    chatty = [
        limit.filter(record("[%s] %s", "a/dev/noisy", f"line {n}", source="a/dev/noisy"))
        for n in range(1000)
    ]
    assert sum(chatty) == 100
    quiet = [
        limit.filter(record("[%s] %s", "b/dev/quiet", f"hello {n}", source="b/dev/quiet"))
        for n in range(3)
    ]
    assert quiet == [True, True, True]
    clock[0] += 61
    later = record("[%s] %s", "a/dev/noisy", "back", source="a/dev/noisy")
    assert limit.filter(later)
    assert later.msg.endswith("[900 messages from a/dev/noisy dropped (over budget)]")


def test_records_without_a_source_are_budgeted_by_logger(clock):
    limit = RepeatLimit(per_minute=20, budget_per_minute=10)
    one = [
        limit.filter(logging.LogRecord("mcp.one", logging.ERROR, "", 1, f"m{n}", None, None))
        for n in range(30)
    ]
    other = logging.LogRecord("mcp.other", logging.ERROR, "", 1, "m0", None, None)
    assert sum(one) == 10
    assert limit.filter(other)
