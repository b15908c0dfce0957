"""The approvals' webhook (issue 36): a real HTTP server on loopback receives the signed
POST for each new pending approval, checks its signature as a receiver would, and finds
the call named without its arguments; a receiver that cannot be reached, refuses, or is
refused by the egress policy is logged, never raised; the secret is stored encrypted."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from calls import webhooks
from calls.models import Approval
from kernel import approvals
from toolboxes.models import PolicyDefaults, Tenant
from toolboxes.models import policies as texts

SECRET = "whsec-test-0123456789abcdef"
WAIT_SECONDS = 30.0


class Receiver:
    """A local webhook receiver: what it was sent, and the status it answers."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.arrived = threading.Event()
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.end_headers()
                receiver.arrived.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/secret-path"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.fixture
def acme(db: None, receiver: Receiver) -> Tenant:
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    PolicyDefaults.objects.create(
        tenant=tenant, approval_webhook_url=receiver.url, approval_webhook_secret=SECRET
    )
    return tenant


def held(tenant: Tenant) -> Approval:
    return Approval.objects.create(
        tenant=tenant,
        caller="key:1",
        caller_label="wb_ab12cd34 (ci)",
        toolbox="dev",
        server="filesystem",
        tool="delete_file",
        arguments_digest=approvals.arguments_digest({"path": "/srv/prod.db"}),
        arguments_shown='{"path": "/srv/prod.db", "token": "••••••"}',
        reason="approval required by: toolbox 'dev', tool 'delete_file', everyone",
        expires_at=timezone.now() + timedelta(minutes=10),
    )


@pytest.mark.django_db(transaction=True)  # the sender's thread reads the committed row
def test_a_new_approval_is_posted_signed_without_its_arguments(
    acme: Tenant, receiver: Receiver, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.WORKBENCH_PUBLIC_URL = "https://wb.example.org/mcp"
    with caplog.at_level(logging.INFO):
        approval = held(acme)  # committed: the webhook is told
    assert receiver.arrived.wait(WAIT_SECONDS), "the webhook was not called"
    headers, body = receiver.received[0]
    assert headers["Content-Type"] == "application/json"
    assert webhooks.verify(SECRET, headers[webhooks.HEADER], body)
    assert not webhooks.verify("another secret", headers[webhooks.HEADER], body)
    assert not webhooks.verify(SECRET, headers[webhooks.HEADER], body + b" ")
    assert json.loads(body) == {
        "event": "approval.requested",
        "tenant": "acme",
        "toolbox": "dev",
        "server": "filesystem",
        "tool": "delete_file",
        "caller": "wb_ab12cd34 (ci)",
        "reason": "approval required by: toolbox 'dev', tool 'delete_file', everyone",
        "approval_url": f"https://wb.example.org/approvals/{approval.public_id}/",
        "expires_at": approval.expires_at.isoformat(),
    }
    assert b"/srv/prod.db" not in body and "••••••".encode() not in body
    assert "secret-path" not in caplog.text  # httpx2's own line names the whole URL


def test_the_signature_format_and_its_age() -> None:
    header = webhooks.signature("s3cret", 1_700_000_000, b'{"a":1}')
    assert header == (
        "t=1700000000,v1="
        + __import__("hmac").new(b"s3cret", b'1700000000.{"a":1}', "sha256").hexdigest()
    )
    assert webhooks.verify("s3cret", header, b'{"a":1}', now=1_700_000_000 + 299)
    assert not webhooks.verify("s3cret", header, b'{"a":1}', now=1_700_000_000 + 301)
    assert not webhooks.verify("s3cret", "v1=abc", b'{"a":1}', now=1_700_000_000)


def test_a_tenant_without_a_webhook_starts_no_sender(
    db: None, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    monkeypatch.setattr(webhooks, "deliver_later", started.append)
    with django_capture_on_commit_callbacks(execute=True):
        held(Tenant.objects.create(slug="quiet"))
    assert started == []


def test_failures_are_logged_not_raised(
    acme: Tenant, receiver: Receiver, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    approval = held(acme)
    receiver.status = 500
    with caplog.at_level(logging.WARNING, "workbench.approvals"):
        assert webhooks.deliver(approval.pk) is False
    host = receiver.url.split("/hooks")[0]
    assert f"approval webhook to {host} was refused (500)" in caplog.text
    settings.WORKBENCH_EGRESS_ALLOW = []
    caplog.clear()
    with caplog.at_level(logging.WARNING, "workbench.approvals"):
        assert webhooks.deliver(approval.pk) is False
    assert f"approval webhook to {host} failed: egress refused: 127.0.0.1 resolves to" in (
        caplog.text
    )
    assert "secret-path" not in caplog.text and SECRET not in caplog.text
    receiver.close()
    settings.WORKBENCH_EGRESS_ALLOW = ["127.0.0.0/8"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, "workbench.approvals"):
        assert webhooks.deliver(approval.pk) is False
    assert f"approval webhook to {host} failed: " in caplog.text


def test_the_secret_is_encrypted_at_rest_and_required_with_a_url(acme: Tenant) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT approval_webhook_secret FROM toolboxes_policydefaults")
        stored = cursor.fetchone()[0]
    assert stored and SECRET not in stored
    assert PolicyDefaults.objects.get(tenant=acme).approval_webhook_secret == SECRET
    row = PolicyDefaults(
        tenant=Tenant.objects.create(slug="b"), approval_webhook_url="https://x.example/"
    )
    with pytest.raises(Exception) as error:
        row.full_clean()
    assert texts.WEBHOOK_NEEDS_SECRET in str(error.value)
