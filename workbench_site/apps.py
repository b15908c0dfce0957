"""The site as an app: the composition root, where the apps below meet.

`ready` answers the admins' world's questions of the gateway (`toolboxes.gateway_questions`)
with the gateway's face: each answer imports its gateway module when first asked, so that a
manage.py command that asks nothing loads neither the SDK nor the gateway's own modules.
The site's commands (`make run`, `make reset`, the operator's) live here too: they reach
every app.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

import mcp_gateway
from toolboxes import gateway_questions

if TYPE_CHECKING:
    from kernel.check_results import CheckResult
    from toolboxes.models import Server


def _check_servers(servers: Sequence[Server]) -> list[CheckResult]:
    return mcp_gateway.check_servers(servers)


def _key_sees(
    prefix: str, offered: dict[int, list[dict[str, Any]]]
) -> gateway_questions.KeySees | None:
    return mcp_gateway.key_sees(prefix, offered)


def _estimated_tokens(size: int) -> int:
    return mcp_gateway.estimated_tokens(size)


def _find_tools(
    tenant_id: int, query: str, toolbox: str | None, limit: int
) -> gateway_questions.ToolSearch | None:
    return mcp_gateway.find_tools(tenant_id, query, toolbox, limit)


def _tenant_endpoint(mcp_url: str, slug: str) -> str:
    return mcp_gateway.tenant_endpoint(mcp_url, slug)


def _toolbox_endpoint(mcp_url: str, slug: str, toolbox: str) -> str:
    return mcp_gateway.toolbox_endpoint(mcp_url, slug, toolbox)


def _endpoint_left_out(tenant_id: int, toolbox: str) -> list[str]:
    return mcp_gateway.endpoint_left_out(tenant_id, toolbox)


GATEWAY_ANSWERS = gateway_questions.Answers(
    check_servers=_check_servers,
    key_sees=_key_sees,
    estimated_tokens=_estimated_tokens,
    find_tools=_find_tools,
    tenant_endpoint=_tenant_endpoint,
    toolbox_endpoint=_toolbox_endpoint,
    endpoint_left_out=_endpoint_left_out,
)


class WorkbenchSiteConfig(AppConfig):
    name = "workbench_site"
    verbose_name = "Workbench site"

    def ready(self) -> None:
        gateway_questions.answer_with(GATEWAY_ANSWERS)
