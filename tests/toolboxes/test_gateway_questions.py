"""The admin's questions of the gateway (toolboxes.gateway_questions): answered once the
site is ready, refused clearly before."""

from __future__ import annotations

import pytest

from toolboxes import gateway_questions
from workbench_site.apps import GATEWAY_ANSWERS


def test_the_site_answers_the_admins_questions_with_the_gateway():
    assert gateway_questions._asked() is GATEWAY_ANSWERS
    assert gateway_questions.tenant_endpoint("https://mcp.example.com/mcp/", "acme") == (
        "https://mcp.example.com/mcp/t/acme"
    )
    assert gateway_questions.toolbox_endpoint("https://mcp.example.com/mcp", "acme", "dev ops") == (
        "https://mcp.example.com/mcp/t/acme/toolboxes/dev%20ops"
    )
    assert gateway_questions.estimated_tokens(9) == 3


def test_a_question_before_the_answers_are_registered_says_so(monkeypatch):
    monkeypatch.setattr(gateway_questions, "_answers", [])
    with pytest.raises(gateway_questions.NotAnswered, match=r"WorkbenchSiteConfig\.ready"):
        gateway_questions.tenant_endpoint("https://mcp.example.com/mcp", "acme")
