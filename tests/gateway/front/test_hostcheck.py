"""The /mcp Host and Origin checks (set lookups) answer what the SDK's pattern scan did,
for the same ALLOWED_HOSTS: every case below is also run through the SDK's own check."""

from __future__ import annotations

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings

from mcp_gateway.front.hostcheck import HostCheck

ALLOWED = ["localhost", "127.0.0.1", "[::1]", "gw.example.com"]
HOSTS = [
    "localhost",
    "localhost:8000",
    "localhost:",
    "localhost:x:y",
    "127.0.0.1:1",
    "[::1]",
    "[::1]:8000",
    "[::1]8000",
    "gw.example.com",
    "gw.example.com:443",
    "evil.example",
    "localhost.evil",
    "evil:localhost",
    "[::2]:80",
    "",
    "LOCALHOST",
]
ORIGINS = [
    "",
    "http://localhost",
    "https://localhost:3000",
    "http://[::1]:9",
    "ftp://localhost",
    "http://evil.example",
    "https://gw.example.com",
    "http://gw.example.com.evil:1",
    "http://localhost.evil",
    "null",
]


def sdk_answer(headers: dict[bytes, bytes]) -> tuple[int, bytes] | None:
    """What the SDK's check (as the gateway configured it before) says."""
    hosts = [h for name in ALLOWED for h in (name, f"{name}:*")]
    origins = [f"{s}://{n}{p}" for n in ALLOWED for s in ("http", "https") for p in ("", ":*")]
    check = TransportSecurityMiddleware(
        TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)
    )
    if not check._validate_host(headers.get(b"host", b"").decode() or None):
        return 421, b"Invalid Host header"
    if not check._validate_origin(headers.get(b"origin", b"").decode() or None):
        return 403, b"Invalid Origin header"
    return None


@pytest.mark.once_pg
@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("host", HOSTS)
def test_the_set_lookup_answers_as_the_sdk_does(host, origin):
    headers = {b"content-type": b"application/json", b"host": host.encode()}
    if origin:
        headers[b"origin"] = origin.encode()
    scope = {"method": "POST"}
    assert HostCheck(ALLOWED).refusal(scope, headers) == sdk_answer(headers)


@pytest.mark.once_pg
def test_a_star_turns_it_off_and_a_wrong_content_type_is_left_to_the_sdk():
    foreign = {b"host": b"evil.example", b"content-type": b"application/json"}
    assert HostCheck(["*"]).refusal({"method": "POST"}, foreign) is None
    assert (
        HostCheck(ALLOWED).refusal({"method": "POST"}, {**foreign, b"content-type": b"text/plain"})
        is None
    )
    assert HostCheck(ALLOWED).refusal({"method": "GET"}, foreign) == (421, b"Invalid Host header")


@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        ([(b"origin", b"http://evil.example"), (b"origin", b"http://localhost")], 403),
        ([(b"origin", b"http://localhost"), (b"origin", b"http://localhost")], 403),
        ([(b"host", b"evil.example"), (b"host", b"localhost")], 421),
        ([(b"host", b"localhost"), (b"host", b"localhost")], 421),
    ],
)
def test_a_header_sent_twice_gets_a_bad_ones_answer(raw, answer):
    """Issue 20: a header mapping keeps the last one, so a good last Origin vouched for a
    bad first one. The same answer as a bad one, whatever the values."""
    raw = [(b"content-type", b"application/json"), *raw]
    if not any(name == b"host" for name, _ in raw[1:]):
        raw.append((b"host", b"localhost"))
    bodies = {421: b"Invalid Host header", 403: b"Invalid Origin header"}
    check = HostCheck(ALLOWED)
    assert check.refusal({"method": "POST", "headers": raw}, dict(raw)) == (answer, bodies[answer])


@pytest.mark.parametrize(
    ("host", "vouched"),
    [
        ("localhost", "localhost"),
        ("localhost:8000", "localhost:8000"),
        ("[::1]:8000", "[::1]:8000"),
        ("gw.example.com", "gw.example.com"),
        ("localhost:", None),
        ("localhost:x:y", None),  # accepted by the Host check (as the SDK's), named never
        ("127.0.0.1:1/evil#", None),
        ("localhost:١٢٣", None),  # digits, but not ASCII ones
        ("localhost:123456", None),
        ("evil.example", None),
        ("", None),
    ],
)
def test_only_an_allowed_host_with_at_most_a_port_is_named_back(host, vouched):
    assert HostCheck(ALLOWED).vouched_host(host) == vouched
    assert HostCheck(["*"]).vouched_host(host) is None  # with the check off, any would do
