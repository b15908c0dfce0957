"""Every change made through the API in the object's admin history (Django's LogEntry),
with the credential's member as the actor and the credential named in the message."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model

from api.actor import Actor

__all__ = ["ADDITION", "CHANGE", "DELETION", "record"]


def record(actor: Actor, obj: Model, flag: int, message: str = "", fields: Iterable[str] = ()):
    """One history line; `fields` changed are named (never their values)."""
    names = sorted(fields)
    text = message or {ADDITION: "Added", CHANGE: "Changed", DELETION: "Deleted"}[flag]
    if names:
        text += " " + ", ".join(names)
    text += f" ({actor.label})."
    LogEntry.objects.create(
        user_id=actor.user.pk,
        content_type_id=ContentType.objects.get_for_model(type(obj)).pk,
        object_id=str(obj.pk),
        object_repr=str(obj)[:200],
        action_flag=flag,
        change_message=text,
    )
