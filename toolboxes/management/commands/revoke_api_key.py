"""revoke_api_key <prefix-or-full-key>"""

import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from toolboxes import keys
from toolboxes.models import ApiKey

# The prefix alone, or as the admin shows it (`wb_hine7dh5_…`) and this command prints it,
# copied whole or in part: `wb_hine7dh5`, `wb_hine7dh5_…`, `wb_hine7dh5_...`.
SHOWN_PREFIX_RE = re.compile(r"^(?:wb_)?([a-z0-9]{8})(?:_(?:…|\.\.\.))?$")
NOT_A_KEY = (
    "Give the key's 8-character prefix (as the admin shows it, wb_xxxxxxxx) or the whole wb_… key."
)


def prefix_of(given: str) -> str | None:
    """The prefix that `given` names: a whole key's, or one spelled as shown."""
    shown = SHOWN_PREFIX_RE.match(given)
    return keys.API_KEY.parse_prefix(given) or (shown.group(1) if shown else None)


class Command(BaseCommand):
    help = "Revoke an API key, given its prefix or the full key. It stops working at once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "key", help="The key's 8-character prefix (wb_xxxxxxxx, as shown), or the whole key."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        given: str = options["key"].strip()
        prefix = prefix_of(given)
        if prefix is None:
            raise CommandError(NOT_A_KEY)
        whole = keys.API_KEY.parse_prefix(given) is not None
        api_key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        if api_key is None or (whole and not api_key.matches(given)):
            raise CommandError(f"No API key with prefix '{prefix}' matches.")
        if api_key.revoked_at is not None:
            self.stdout.write(f"API key wb_{prefix}_… was already revoked.")
            return
        api_key.revoke()
        self.stdout.write(f"Revoked API key wb_{prefix}_… of tenant '{api_key.tenant.slug}'.")
