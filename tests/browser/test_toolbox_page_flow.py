"""In a real browser: an operator opens a toolbox of two checked servers (git and memory,
as the quick start makes them). The page stays short, a server's arguments show whole (git's
repository path included), and a filter naming a tool the server does not offer is said in
one compact line beside the tools, not a box that pushes them aside."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.browser.test_tenant_admin_flow import login
from toolboxes.models import Server, Tenant, Toolbox

# The admin in Chromium: the same flows whatever the test database (tests/accounts checks
# every admin path on both), so one pass runs them: the SQLite one.
pytestmark = pytest.mark.once

PASSWORD = "pw-operator-toolbox-1"
REPOSITORY = "/home/workbench/tenants/acme/repositories/customer-portal-backend-service"
GIT_ARGS = ["mcp-server-git", "--repository", REPOSITORY]
GIT_TOOLS = [
    "git_status",
    "git_diff_unstaged",
    "git_diff_staged",
    "git_diff",
    "git_commit",
    "git_add",
    "git_reset",
    "git_log",
    "git_create_branch",
    "git_checkout",
    "git_show",
    "git_branch",
]
MEMORY_TOOLS = [
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
]
# The old page (every group open, a tall warning box, three-line arguments) was 2,535 px
# for two servers; the bound is well under it.
MAX_PAGE_HEIGHT = 1900
MISSING_WARNING = "The filter names tools the server does not offer: git_psuh."


def offered(names: list[str]) -> list[dict[str, str]]:
    return [{"name": name, "description": f"{name.replace('_', ' ')}."} for name in names]


@pytest.fixture
def toolbox(transactional_db) -> Toolbox:
    User.objects.create_superuser("olga", password=PASSWORD)
    box = Toolbox.objects.create(
        tenant=Tenant.objects.create(slug="acme", name="Acme"), name="desk", description="Desk"
    )
    git = Server.objects.create(
        toolbox=box, name="git", command="uvx", args=GIT_ARGS, tool_filters=["git_psuh"]
    )
    memory = Server.objects.create(
        toolbox=box,
        name="memory",
        position=1,
        command="npx",
        args=["-y", "@modelcontextprotocol/server-memory"],
    )
    for server, tools in ((git, GIT_TOOLS), (memory, MEMORY_TOOLS)):
        Server.objects.filter(pk=server.pk).update(
            last_check_ok=True,
            last_check_at=timezone.now(),
            last_check_ms=812,
            last_check_tools=offered(tools),
        )
    return box


def test_the_toolbox_page_is_short_and_shows_whole_arguments(
    chromium, live_gateway, toolbox, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)

    def open_the_toolbox() -> dict[str, object]:
        login(page, "olga", PASSWORD)
        page.goto(f"/admin/toolboxes/toolbox/{toolbox.pk}/change/")
        args = page.locator('textarea[name="servers-0-args"]')
        warning = page.locator(".inline-related").first.locator(".wb-missing-note")
        tools = page.locator(".inline-related").first.locator(".wb-tools")
        return {
            "height": page.evaluate("document.documentElement.scrollHeight"),
            "args": args.input_value(),
            # the box shows all it holds: nothing to scroll to, no line hidden
            "args overflow": args.evaluate("box => box.scrollHeight - box.clientHeight"),
            "args wider than shown": args.evaluate("box => box.scrollWidth - box.clientWidth"),
            "warning": warning.inner_text(),
            "warning height": warning.bounding_box()["height"],
            "warning left of tools": warning.bounding_box()["x"] <= tools.bounding_box()["x"],
            "tools top - warning bottom": tools.bounding_box()["y"]
            - (warning.bounding_box()["y"] + warning.bounding_box()["height"]),
        }

    seen = chromium.run(open_the_toolbox)
    chromium.shot(page, "toolbox-01-two-servers")
    print(f"toolbox page height for 2 servers: {seen['height']} px")
    assert seen["args"] == "\n".join(GIT_ARGS)
    assert seen["args overflow"] <= 0 and seen["args wider than shown"] <= 0
    assert seen["warning"] == MISSING_WARNING
    assert seen["warning height"] < 30  # one line
    assert seen["tools top - warning bottom"] < 20  # right above the ticks, not pushing them
    assert seen["height"] < MAX_PAGE_HEIGHT

    def type_more_arguments() -> int:
        box = page.locator('textarea[name="servers-1-args"]')
        box.fill("\n".join(["-y", "@modelcontextprotocol/server-memory", *"abcdef"]))
        return box.evaluate("box => box.scrollHeight - box.clientHeight")

    assert chromium.run(type_more_arguments) <= 0  # the box grew with its lines
    chromium.shot(page, "toolbox-02-arguments-grow-as-typed")
