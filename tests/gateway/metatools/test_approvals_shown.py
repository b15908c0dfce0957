"""What approvers see of a held call's arguments (`metatools.approvals.shown`): JSON, with
the server's stored secret values and the credentials the secrets guard detects masked,
capped; and the approval page's link, where the caller reached Workbench."""

from __future__ import annotations

import json

from kernel.redaction import Redactor
from mcp_gateway.metatools.approvals import SHOWN_CHARS, approval_url, shown
from mcp_gateway.snapshots.callers import Caller, KeyRecord
from mcp_gateway.snapshots.servers import TenantConfig

GITHUB_TOKEN = "ghp_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"
STORED = "s3cr3t-database-password"


def test_credentials_and_stored_secrets_are_masked():
    arguments = {"path": "/srv/x", "token": GITHUB_TOKEN, "dsn": f"postgres://u:{STORED}@db/x"}
    text = shown(arguments, (Redactor([STORED]),))
    assert GITHUB_TOKEN not in text and STORED not in text
    assert json.loads(text) == {
        "dsn": "postgres://u:[secret removed: stored secret]@db/x",
        "path": "/srv/x",
        "token": "[secret removed: GitHub Token]",
    }


def test_long_arguments_are_capped():
    text = shown({"text": "x" * 10_000}, ())
    assert len(text) == SHOWN_CHARS and text.endswith("…")
    assert shown(None, ()) == "{}"


def test_the_link_is_where_the_caller_reached_workbench():
    key = KeyRecord(1, "abcdefgh", "hash", 1, False, None, None, 1)
    tenant = TenantConfig(1, "acme", True, 1, ())
    caller = Caller(key, tenant, base_url="https://wb.example/")
    assert approval_url(caller, "Ab_9") == "https://wb.example/approvals/Ab_9/"
