"""The admin renders a field's help text as HTML (Django marks it safe): a placeholder
written `<id>` is taken for a tag and vanishes from the page ("person:" where
"person:<user id>" was meant). Every model's help texts are plain text, and the call
log's reads as written."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.test import Client
from django.utils import timezone

from calls.models import CallRecord
from toolboxes.models import Tenant

PROJECT_APPS = ("accounts", "calls", "connections", "toolboxes")
TAG_LIKE = re.compile(r"<[A-Za-z/][^>]*>")


def test_no_help_text_reads_like_an_html_tag() -> None:
    found = [
        f"{model._meta.label}.{field.name}: {field.help_text}"
        for app in PROJECT_APPS
        for model in apps.get_app_config(app).get_models()
        for field in model._meta.get_fields()
        if TAG_LIKE.search(str(getattr(field, "help_text", "") or ""))
    ]
    assert found == []


@pytest.mark.django_db
def test_the_call_logs_help_text_is_shown_whole(admin_client: Client) -> None:
    row = CallRecord.objects.create(
        at=timezone.now(),
        tenant=Tenant.objects.create(slug="acme"),
        meta_tool="use_tool",
        duration_ms=1.0,
        outcome="ok",
    )
    page = admin_client.get(f"/admin/calls/callrecord/{row.pk}/change/")
    assert page.status_code == 200
    assert "person:N (N: the member's user id), tenant (shared)" in page.content.decode()
