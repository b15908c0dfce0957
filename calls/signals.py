"""A new pending approval tells its tenant's webhook, once the row is committed (a
rolled-back approval tells nobody)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from calls import webhooks
from calls.models import Approval
from kernel import approvals


@receiver(post_save, sender=Approval, dispatch_uid="calls.approval_webhook")
def approval_requested(sender: Any, instance: Approval, created: bool, **kwargs: Any) -> None:
    if created and instance.status == approvals.PENDING:
        approval_id, tenant_id = instance.pk, instance.tenant_id

        def tell() -> None:
            if webhooks.has_webhook(tenant_id):
                webhooks.deliver_later(approval_id)

        transaction.on_commit(tell)
