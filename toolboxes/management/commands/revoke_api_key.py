"""revoke_api_key <prefix-or-full-key>"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes import keys
from toolboxes.models import ApiKey


class Command(BaseCommand):
    help = "Revoke an API key, given its prefix or the full key. It stops working at once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="The key's 8-character prefix, or the whole key.")

    def handle(self, *args: Any, **options: Any) -> None:
        given: str = options["key"].strip()
        prefix = keys.parse_prefix(given) or (given if keys.PREFIX_RE.match(given) else None)
        if prefix is None:
            raise CommandError("Give the key's 8-character prefix or the whole wb_… key.")
        api_key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        if api_key is None or (given != prefix and not api_key.matches(given)):
            raise CommandError(f"No API key with prefix '{prefix}' matches.")
        if api_key.revoked_at is not None:
            self.stdout.write(f"API key wb_{prefix}_… was already revoked.")
            return
        api_key.revoke()
        self.stdout.write(f"Revoked API key wb_{prefix}_… of tenant '{api_key.tenant.slug}'.")
