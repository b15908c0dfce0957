"""Delete call log rows older than the retention (WORKBENCH_CALL_LOG_RETENTION_DAYS)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from calls.models import CallRecord


class Command(BaseCommand):
    help = "Delete call log rows older than the retention (WORKBENCH_CALL_LOG_RETENTION_DAYS)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="Keep this many days instead of the setting.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"]
        days = settings.WORKBENCH_CALL_LOG_RETENTION_DAYS if days is None else days
        cutoff = timezone.now() - timedelta(days=days)
        deleted, _ = CallRecord.objects.filter(at__lt=cutoff).delete()
        self.stdout.write(f"Deleted {deleted} call log rows older than {days} days.")
