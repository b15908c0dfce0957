"""Re-encrypt every stored secret under the first of ENCRYPTION_KEYS.

Rotation: put a new key first in ENCRYPTION_KEYS (keep the old one after it), run this,
then remove the old key.
"""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from toolboxes.models import CatalogEntry, Server


class Command(BaseCommand):
    help = "Re-encrypt server env and header values with the first ENCRYPTION_KEYS key."

    def handle(self, *args: Any, **options: Any) -> None:
        count = 0
        with transaction.atomic():
            # Loading decrypts with any configured key; saving encrypts with the first.
            for server in Server.objects.select_for_update():
                if server.env or server.headers or server.secret_parameters:
                    server.save(update_fields=["env", "headers", "secret_parameters"])
                    count += 1
            for entry in CatalogEntry.objects.select_for_update():  # the catalog's own
                if entry.env or entry.headers:
                    entry.save(update_fields=["env", "headers"])
        self.stdout.write(f"Re-encrypted the secrets of {count} server(s).")
