"""`add_member <tenant> <username> --role admin|viewer`."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.members import add_member
from kernel.roles import ROLES
from toolboxes.models import Tenant


class Command(BaseCommand):
    help = (
        "Make a user a member of a tenant. A new user is created with a one-time password, "
        "printed alone on the last line; it must be changed at the first login."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant with slug '{options['tenant']}'.")
        added = add_member(tenant, options["username"], options["role"])
        user = added.membership.user.get_username()
        if added.one_time_password is None:
            self.stdout.write(f"{user} is now {options['role']} of {tenant.slug}.")
            return
        self.stdout.write(
            f"Created user {user}, {options['role']} of {tenant.slug}. One-time password "
            "(shown only now; to be changed at the first login):"
        )
        self.stdout.write(added.one_time_password)
