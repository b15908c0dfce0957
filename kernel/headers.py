"""HTTP header rules every side applies: the admin's validation and the gateway's requests."""

# Headers the gateway owns on every request (framing, routing, hop-by-hop: RFC 9110
# 7.6.1): a configured value would smuggle requests or redirect them. Lower case.
UNCONFIGURABLE_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
