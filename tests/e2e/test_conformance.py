"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/package.json) against `/mcp/t/<slug>` and a toolbox endpoint (server-everything and
the fixture server), each scenario that applies at each protocol generation it covers.

What is judged not applicable, and why, is in docs/clients.md ("Protocol conformance"):
in short, the scenarios that call the suite's reference server's own tools, resources and
prompts (`test_*`, `test://`), which neither endpoint can offer by those names; those of a
capability the endpoint does not declare; and the extensions (tasks, skills). A check of an
applicable scenario may be judged not applicable on the same grounds: `NOT_APPLICABLE`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.conformance import auth_proxy, run_scenario, suite_available
from tests.harness.toolbox_world import make_world, needs_node

pytestmark = [
    pytest.mark.once_pg,
    pytest.mark.xdist_group("conformance"),
    needs_node,
    pytest.mark.skipif(
        not suite_available(), reason="the conformance suite is missing (npm ci --prefix tests)"
    ),
]

LEGACY, MODERN = "2025-11-25", "2026-07-28"
TENANT, TOOLBOX = "/mcp/t/acme", "/mcp/t/acme/toolboxes/dev"
BOTH = ("tools-list", "server-sse-multiple-streams", "dns-rebinding-protection")
APPLICABLE: dict[tuple[str, str], tuple[str, ...]] = {
    (TENANT, LEGACY): (
        "server-initialize",
        "server-session-lifecycle",
        "ping",
        "server-sse-polling",
        *BOTH,
    ),
    (TENANT, MODERN): (
        "server-stateless",
        "sep-2164-resource-not-found",
        "caching",
        "http-header-validation",
        *BOTH,
    ),
}
# A toolbox endpoint offers resources and prompts besides (server-everything's).
APPLICABLE[(TOOLBOX, LEGACY)] = (*APPLICABLE[(TENANT, LEGACY)], "resources-list", "prompts-list")
APPLICABLE[(TOOLBOX, MODERN)] = (*APPLICABLE[(TENANT, MODERN)], "resources-list", "prompts-list")

FIXTURE_TOOL = "asks for the reference server's own diagnostic tool (test_missing_capability)"
NO_RESOURCES = "the tenant endpoint declares no resources nor prompts (the meta-tools only)"
RECONNECTION_TOOL = (
    "calls the reference server's own tool test_reconnection (a stream it closes mid-call); "
    "a session that declared elicitation gets its call as a stream, so the unknown tool's "
    "error result is scored"
)
NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("server-sse-polling", "incoming-sse-event"): RECONNECTION_TOOL,
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): FIXTURE_TOOL,
    ("server-stateless", "sep-2575-missing-capability-http-400"): FIXTURE_TOOL,
}
NOT_DECLARED_ON_TENANT: dict[tuple[str, str], str] = {
    ("caching", "sep-2549-prompts-list-caching-hints"): NO_RESOURCES,
    ("caching", "sep-2549-resources-list-caching-hints"): NO_RESOURCES,
    ("caching", "sep-2549-resources-templates-list-caching-hints"): NO_RESOURCES,
}


@pytest.fixture(scope="module")
def world(module_db):
    return make_world()


@pytest.fixture(scope="module")
def proxy(module_gateway, world) -> Iterator[str]:
    """The suite sends no credential: a proxy adds acme's."""
    base = module_gateway.url.rsplit("/mcp", 1)[0]
    with auth_proxy(base, world[0].new_key().key) as url:
        yield url


@pytest.mark.parametrize(("path", "generation"), sorted(APPLICABLE), ids=lambda v: v)
def test_the_applicable_scenarios_pass(proxy, path, generation):
    judged = {**NOT_APPLICABLE, **(NOT_DECLARED_ON_TENANT if path == TENANT else {})}
    failed = {}
    for scenario in APPLICABLE[(path, generation)]:
        result = run_scenario(proxy + path, scenario, generation)
        unexpected = [
            failure
            for failure in result.failures
            if (scenario, failure.split(":", 1)[0]) not in judged
        ]
        if result.checks == 0 or unexpected:
            failed[scenario] = unexpected or ["no checks ran (not run at this generation?)"]
    assert failed == {}
