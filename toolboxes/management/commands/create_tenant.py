"""create_tenant <slug> [--name NAME]"""

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes.models import Tenant


class Command(BaseCommand):
    help = "Create a tenant."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="Unique short name: letters, digits, '-' and '_'.")
        parser.add_argument("--name", default="", help="Display name.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant(slug=options["slug"], name=options["name"])
        try:
            tenant.full_clean()
        except ValidationError as exc:
            raise CommandError(first_error(exc)) from None
        tenant.save()
        self.stdout.write(f"Created tenant '{tenant.slug}'.")


def first_error(exc: ValidationError) -> str:
    field, messages = next(iter(exc.message_dict.items()))
    return f"{field}: {messages[0]}"
