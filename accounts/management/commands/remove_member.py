"""`remove_member <tenant> <username>`."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.members import remove_member
from accounts.models import Membership


class Command(BaseCommand):
    help = "Remove a user from a tenant (a user left in no tenant loses the admin login)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        slug, username = options["tenant"], options["username"]
        membership = (
            Membership.objects.select_related("user", "tenant")
            .filter(tenant__slug=slug, user__username=username)
            .first()
        )
        if membership is None:
            raise CommandError(f"'{username}' is not a member of tenant '{slug}'.")
        remove_member(membership)
        self.stdout.write(f"{username} is no longer a member of {slug}.")
