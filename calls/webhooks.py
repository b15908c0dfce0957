"""Approvers told of a held call by their tenant's webhook (issue 36): a signed JSON POST
to chat or paging for each new pending approval, off the request's path.

The body names the call (tenant, toolbox, server, tool, the caller's label, the rule that
asked), the approval page's full URL and when it expires; never the arguments (even
masked: a chat channel is not the approval page). The signature, as Stripe and Slack sign
theirs, is the header

    Workbench-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>

which a receiver checks (`verify`) and whose timestamp it holds to a few minutes against
replays. Every POST goes through the egress policy every outbound request shares
(`kernel.egress`: no loopback, metadata or private address unless the operator allows it),
follows no redirect and is bounded in time; a failure is logged (the webhook's host,
never its path, which for chat services is itself a secret) and never raised.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from django.conf import settings
from django.db import connection

from calls.models import Approval
from kernel import approvals
from kernel.egress import EgressPolicy, PinnedTransport
from toolboxes.models import PolicyDefaults

logger = logging.getLogger("workbench.approvals")

EVENT = "approval.requested"
HEADER = "Workbench-Signature"
TIMEOUT_SECONDS = 10.0
TOLERANCE_SECONDS = 300  # how old a signed timestamp a receiver should accept
_sending: set[str] = set()  # the webhook URLs being posted to now (kept out of httpx2's log)


class _HideWebhookUrls(logging.Filter):
    """httpx2 logs each request's full URL at INFO; a webhook's path is a secret of chat
    services (Slack's, for one): its line is left out, `deliver` logs the host instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(str(arg) in _sending for arg in args)


logging.getLogger("httpx2").addFilter(_HideWebhookUrls())
# A few threads of the process's own: a slow receiver never holds a request or the gateway.
_senders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="approval-webhook")


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The header's value for `body` sent at `timestamp`."""
    signed = f"{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: str, header: str, body: bytes, now: float | None = None) -> bool:
    """A receiver's check: the header signs this body with this secret, recently."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs((now if now is not None else time.time()) - timestamp) > TOLERANCE_SECONDS:
        return False
    expected = signature(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


def page_url(approval: Approval) -> str:
    """The approval page's full URL (WORKBENCH_PUBLIC_URL's origin; unset: the path)."""
    base = settings.WORKBENCH_PUBLIC_URL.rstrip("/").removesuffix("/mcp")
    return base + approvals.PAGE_PATH.format(public_id=approval.public_id)


def payload(approval: Approval) -> dict[str, Any]:
    """What the POST says of a held call: never its arguments."""
    return {
        "event": EVENT,
        "tenant": approval.tenant.slug,
        "toolbox": approval.toolbox,
        "server": approval.server,
        "tool": approval.tool,
        "caller": approval.caller_label,
        "reason": approval.reason,
        "approval_url": page_url(approval),
        "expires_at": approval.expires_at.isoformat(),
    }


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    transport = PinnedTransport(EgressPolicy.from_settings())
    async with httpx2.AsyncClient(
        transport=transport, timeout=TIMEOUT_SECONDS, follow_redirects=False
    ) as client:
        response = await client.post(url, content=body, headers=headers)
        return response.status_code


def deliver(approval_id: int) -> bool:
    """POST the approval's event to its tenant's webhook, if it has one (True: a 2xx)."""
    approval = Approval.objects.select_related("tenant").filter(pk=approval_id).first()
    if approval is None or approval.status != approvals.PENDING:
        return False
    defaults = PolicyDefaults.objects.filter(tenant_id=approval.tenant_id).first()
    if defaults is None or not defaults.approval_webhook_url:
        return False
    url, secret = defaults.approval_webhook_url, defaults.approval_webhook_secret
    body = json.dumps(payload(approval), separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        HEADER: signature(secret, int(time.time()), body),
        "User-Agent": "Workbench approvals",
    }
    _sending.add(url)
    try:
        status = anyio.run(_post, url, body, headers)
    except Exception as exc:  # refused by the egress policy, DNS, connect, timeout
        detail = getattr(exc, "detail", "") or f"{type(exc).__name__}: {exc}"
        logger.warning("approval webhook to %s failed: %s", _where(url), detail)
        return False
    finally:
        _sending.discard(url)
    logger.info("approval webhook to %s answered %s", _where(url), status)
    if not 200 <= status < 300:
        logger.warning("approval webhook to %s was refused (%s)", _where(url), status)
        return False
    return True


def has_webhook(tenant_id: int) -> bool:
    """Whether the tenant's approvers are told by a webhook (no thread is started else)."""
    told = PolicyDefaults.objects.filter(tenant_id=tenant_id).exclude(approval_webhook_url="")
    return told.exists()


def _deliver_logged(approval_id: int) -> bool:
    try:
        return deliver(approval_id)
    except Exception:  # the database, mostly: logged, never raised into a thread pool
        logger.exception("approval webhook for approval %s not sent", approval_id)
        return False
    finally:
        connection.close()  # a sender's thread keeps no connection


def deliver_later(approval_id: int) -> Future[bool]:
    """`deliver` on a sender's thread (the caller never waits for the receiver)."""
    return _senders.submit(_deliver_logged, approval_id)
