"""Re-check every person due at a provider with `recheck_seconds` (accounts.sso.recheck):
for people who use only a connector, whose admin requests never trigger it. Run it from
cron as often as the shortest interval."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from accounts.models import SsoIdentity
from accounts.sso.recheck import check, due


class Command(BaseCommand):
    help = "Re-check people signed in through identity providers without back-channel logout."

    def handle(self, *args: Any, **options: Any) -> None:
        outcomes: dict[str, int] = {}
        people = SsoIdentity.objects.select_related("user").exclude(access_token="")
        for identity in people.filter(logged_out_at__isnull=True):
            if due(identity):
                outcome = check(identity)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
        summary = ", ".join(f"{count} {name}" for name, count in sorted(outcomes.items()))
        self.stdout.write(f"Re-checked: {summary or 'nobody was due'}.")
