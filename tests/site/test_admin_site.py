"""The admin's frame: Workbench's own sections first on its home page, and a favicon that
no admin page's visit logs as missing."""

from __future__ import annotations

import logging
import re

import pytest

pytestmark = pytest.mark.once  # no database rows of its own: one pass is enough


def test_workbench_sections_come_first_on_the_home_page(admin_client):
    html = admin_client.get("/admin/").content.decode()
    sections = re.findall(r'<caption>\s*<a href="[^"]+" class="section"[^>]*>([^<]+)</a>', html)
    assert sections[:3] == ["Workbench configuration", "People and access", "Calls"]
    assert "Authentication and Authorization" in sections[3:]
    assert sections[3:] == sorted(sections[3:])  # the others: Django's alphabetical order


def test_the_favicon_is_answered_and_nothing_is_logged(client, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        missing = client.get("/no-such-page")
        response = client.get("/favicon.ico")
    assert (missing.status_code, response.status_code) == (404, 204)
    assert response["Cache-Control"] == "public, max-age=86400"
    assert [record.getMessage() for record in caplog.records] == ["Not Found: /no-such-page"]
