"""A server's secret values, as its connection's redactor knows them, are replaced in every
spelling text gives them and in every log record made while the server's task runs,
whichever logger makes it and whichever handler reads it; stderr lines are redacted whole
before they are cut (issue 20)."""

from __future__ import annotations

import asyncio
import logging
import os

import httpx2
import pytest

from kernel.redaction import Redactor, current_redactor, redact_log_records
from mcp_gateway.downstream.stderr import HOLD_BYTES, MAX_LINE, StderrPipe

SECRET = "p@ss w/rd+1&x"


def test_a_secret_is_redacted_as_a_url_or_json_spells_it() -> None:
    redact = Redactor([SECRET, 'say "hi"\\now'])
    in_url = str(httpx2.URL(f"http://h/mcp?key={SECRET}"))
    in_params = str(httpx2.URL("http://h/mcp", params={"key": SECRET}))
    assert in_url == "http://h/mcp?key=p@ss%20w/rd+1&x"
    assert in_params == "http://h/mcp?key=p%40ss+w%2Frd%2B1%26x"
    assert redact(in_url) == redact(in_params) == "http://h/mcp?key=[redacted]"
    assert redact('{"text": "say \\"hi\\"\\\\now"}') == '{"text": "[redacted]"}'


def test_records_made_in_a_servers_task_are_redacted_for_every_logger_and_handler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """httpcore's and the SDK's loggers are children no filter on `httpx2` reaches, and
    caplog is a handler no filter on the console handler reaches."""
    caplog.set_level(logging.DEBUG)
    redact_log_records()
    token = current_redactor.set(Redactor([SECRET]))
    try:
        logging.getLogger("httpcore2.http11").debug("response headers=%r", [("x", SECRET)])
        try:
            raise ValueError(f"bad URL ?key={SECRET}")
        except ValueError:
            logging.getLogger("mcp.client.streamable_http").exception("Error in post_writer")
    finally:
        current_redactor.reset(token)
    headers, error = caplog.records
    assert headers.getMessage() == "response headers=[('x', '[redacted]')]"
    assert error.getMessage().startswith("Error in post_writer\nTraceback (most recent call")
    assert error.getMessage().endswith("ValueError: bad URL ?key=[redacted]")
    assert error.exc_info is None  # folded into the message, redacted
    assert SECRET not in caplog.text


def test_installing_twice_redacts_once() -> None:
    redact_log_records()
    make = logging.getLogRecordFactory()
    redact_log_records()
    assert logging.getLogRecordFactory() is make


async def stderr_lines(
    data: bytes, redact: Redactor, caplog: pytest.LogCaptureFixture
) -> tuple[list[str], list[str]]:
    """What a StderrPipe logs of `data` written by a child, and its tail."""
    caplog.set_level(logging.INFO, logger="workbench.downstream.stderr")
    pipe = StderrPipe("t/dev/s", redact)
    # From a thread: more than a pipe holds waits for the loop to read it.
    await asyncio.to_thread(os.write, pipe.writer.fileno(), data)
    pipe.child_started()
    await asyncio.wait_for(pipe.ended.wait(), 10)
    logged = [r.getMessage() for r in caplog.records if r.name == "workbench.downstream.stderr"]
    return logged, list(pipe.tail)


@pytest.mark.anyio
async def test_a_stderr_line_is_redacted_whole_before_it_is_cut(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "z" * 40
    before_cut = "a" * (MAX_LINE - 10)  # the secret spans the cut at MAX_LINE
    data = f"{before_cut}{secret} and more\nnext {secret}\n".encode()
    logged, tail = await stderr_lines(data, Redactor([secret]), caplog)
    assert logged == [f"[t/dev/s] {before_cut}[redacted]", "[t/dev/s] next [redacted]"]
    assert tail[-1] == "next [redacted]"


@pytest.mark.anyio
async def test_a_line_with_no_end_is_logged_cut_and_its_rest_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past HOLD_BYTES with no newline, the line's start is logged; what follows up to its
    newline is dropped, not logged as a line of its own that starts mid-secret."""
    secret = "s" * 100
    head = "h" * (HOLD_BYTES - 50)
    data = f"{head}{secret}".encode() + b"t" * 70_000 + f"{secret} tail\nafter\n".encode()
    logged, _ = await stderr_lines(data, Redactor([secret]), caplog)
    assert logged == [f"[t/dev/s] {head[:MAX_LINE]}", "[t/dev/s] after"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
