"""This database's installation: a random id, made on first use, that no other database has.

What outlives a database or is shared beyond it names a database's rows by it: entries of
the shared store (the gateway's `installation_prefix`: a new database whose key 1 is
another tenant's must not find what the old key 1 opened), and the host's claim of a
sandbox uid range (the gateway's uid claims). Made on first use, not by a migration, so
that copies of one freshly migrated database (a template) are installations of their own
until first used.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone


class Installation(models.Model):
    """One row (pk 1) per database."""

    installation_id = models.CharField(max_length=32, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    # The shared store the gateways of this database use (`kernel.store_names.describe_store`),
    # recorded by each gateway at its start: what a command's store is checked against.
    store = models.CharField(max_length=500, blank=True, default="", editable=False)
    store_recorded_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        app_label = "toolboxes"

    def __str__(self) -> str:
        return self.installation_id


# Per database (its settings), as read or made: the id never changes once made, so each
# process asks the database once.
_known: dict[tuple[Any, ...], str] = {}
_lock = threading.Lock()


def _database() -> tuple[Any, ...]:
    settings = connection.settings_dict
    return (connection.vendor, settings["NAME"], settings.get("HOST"), settings.get("PORT"))


def _row(rows: models.QuerySet[Installation]) -> Installation:
    row, _ = rows.get_or_create(pk=1, defaults={"installation_id": uuid.uuid4().hex})
    return row


def installation_id() -> str:
    """This database's id (ORM: call it off the event loop the first time)."""
    database = _database()
    known = _known.get(database)
    if known is None:
        with _lock:
            known = _known.setdefault(database, _row(Installation.objects).installation_id)
    return known


def describe_database() -> str:
    """The database for an operator's eyes (never its password): `sqlite /srv/wb.sqlite3`,
    `postgresql workbench on db.internal:5432`."""
    settings = connection.settings_dict
    where = f" on {settings['HOST']}:{settings.get('PORT') or ''}".rstrip(":")
    return f"{connection.vendor} {settings['NAME']}" + (where if settings.get("HOST") else "")


def database_file() -> str:
    """The SQLite file of this database, resolved ("" for a database server, or in memory):
    a uid claim records it, so that its absence says the installation is gone."""
    settings = connection.settings_dict
    name = str(settings["NAME"] or "")
    if connection.vendor != "sqlite" or not name or name == ":memory:" or name.startswith("file:"):
        return ""
    return str(Path(name).resolve())


def record_store(store: str) -> str | None:
    """A gateway's start: `store` is now the gateways' store. Returns the store recorded
    before when it was another (ORM: off the event loop)."""
    with transaction.atomic():
        row = _row(Installation.objects.select_for_update())
        before = row.store
        row.store, row.store_recorded_at = store, timezone.now()
        row.save(update_fields=["store", "store_recorded_at"])
    return before if before and before != store else None


def recorded_store() -> tuple[str, Any] | None:
    """The gateways' store and when it was recorded; None before any gateway started."""
    row = Installation.objects.filter(pk=1).values_list("store", "store_recorded_at").first()
    return row if row and row[0] else None
