"""create_api_token <username> <name> [--tenant SLUG] [--read-only] [--expires-in-days N]

A personal API token for the management API (`/api/v1`), acting with the user's roles.
The token is printed alone on the last line of stdout (`tail -n 1`); it is never shown
again (only its SHA-256 is stored).
"""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiToken
from accounts.models.api_tokens import DEFAULT_DAYS, MAX_DAYS
from toolboxes.models import Tenant


class Command(BaseCommand):
    help = "Create a personal API token for a user; prints the token alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("name", help="What the token is for.")
        parser.add_argument("--tenant", metavar="SLUG", help="Limit the token to this tenant.")
        parser.add_argument("--read-only", action="store_true", help="The token only reads.")
        parser.add_argument("--expires-in-days", type=int, default=DEFAULT_DAYS, metavar="N")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None or not user.is_active:
            raise CommandError(f"No active user '{options['username']}'.")
        days = options["expires_in_days"]
        if not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--expires-in-days must be between 1 and {MAX_DAYS}.")
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant with slug '{options['tenant']}'.")
        token, full = ApiToken.issue(
            user,
            name=options["name"],
            tenant=tenant,
            read_only=options["read_only"],
            expires_in_days=days,
        )
        scope = f"tenant {tenant.slug}" if tenant else "every tenant of the user"
        access = "read-only" if token.read_only else "read and write"
        self.stdout.write(
            f"Created API token {token} for {user.get_username()} ({scope}; {access}; "
            f"expires {token.expires_at.isoformat()}).\n"
            "Copy it now: it will not be shown again."
        )
        self.stdout.write(full)
