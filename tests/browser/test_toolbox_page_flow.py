"""In a real browser: an operator opens a toolbox of four servers (git and memory, as the
quick start makes them, one failing, one whose two tools are held). The page is a line a
server (what it runs, its last check with the failure's incident or the held tools, the
tools exposed), each server's form folded under its line: four servers fit in one screen.
Opened, a form shows a server's arguments whole (git's repository path included), a filter
naming a tool the server does not offer in one compact line beside the tools, and a
failing server's real state instead of "not checked yet"."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.browser.test_tenant_admin_flow import login
from toolboxes.models import Server, Tenant, Toolbox, ToolPin

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
# The old page (every server's form open) was 1,819 px for two servers and 2,581 px for
# four (issue 37); folded, a toolbox of four servers ends within one 900 px screen.
MAX_PAGE_HEIGHT = 900
MISSING_WARNING = "The filter names tools the server does not offer: git_psuh."
FAILING_REASON = "the server could not be reached"
INCIDENT = "5e1f00d2a9b3"


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
    issues = Server.objects.create(
        toolbox=box,
        name="issues",
        position=2,
        transport="streamable-http",
        url="http://127.0.0.1:8931/mcp",
    )
    weather = Server.objects.create(
        toolbox=box, name="weather", position=3, command="uvx", args=["mcp-weather"]
    )
    for server, tools in ((git, GIT_TOOLS), (memory, MEMORY_TOOLS), (weather, WEATHER_TOOLS)):
        Server.objects.filter(pk=server.pk).update(
            last_check_ok=True,
            last_check_at=timezone.now(),
            last_check_ms=812,
            last_check_tools=offered(tools),
        )
    Server.objects.filter(pk=issues.pk).update(
        last_check_ok=False,
        last_check_at=timezone.now(),
        last_check_ms=3,
        last_check_reason=FAILING_REASON,
        last_check_incident=INCIDENT,
        last_check_cause="egress refused: 127.0.0.1 resolves to 127.0.0.1 (loopback)",
    )
    for name in WEATHER_TOOLS:  # both offered after the first trust: held for an admin
        ToolPin.objects.create(
            server=weather, name=name, offered_hash=name, offered_definition={"name": name}
        )
    return box


WEATHER_TOOLS = ["forecast", "alerts"]


def test_the_toolbox_page_is_short_and_shows_whole_arguments(
    chromium, live_gateway, toolbox, plain_http_cookies
):
    base = live_gateway.url.removesuffix("/mcp")
    page = chromium.new_page(base)
    rows = ".wb-servers .inline-related.has_original"

    def open_the_toolbox() -> dict[str, object]:
        login(page, "olga", PASSWORD)
        page.goto(f"/admin/toolboxes/toolbox/{toolbox.pk}/change/")
        lines = page.locator(f"{rows} summary.wb-server-line")
        return {
            # the toolbox's form, to its save buttons (the admin's menu beside it is as
            # long as it is on every page)
            "height": page.locator(".submit-row").evaluate(
                "row => row.getBoundingClientRect().bottom + window.scrollY"
            ),
            "lines": [" ".join(text.split()) for text in lines.all_inner_texts()],
            "forms shown": page.locator(f"{rows} textarea[name$='-args']").evaluate_all(
                "boxes => boxes.filter(box => box.checkVisibility()).length"
            ),
            "held badge": page.locator(f"{rows} a.wb-held-badge").inner_text(),
        }

    seen = chromium.run(open_the_toolbox)
    chromium.shot(page, "toolbox-01-four-servers-folded")
    print(f"toolbox page height for 4 servers: {seen['height']} px")
    assert seen["height"] < MAX_PAGE_HEIGHT
    assert seen["forms shown"] == 0  # every form folded
    git, memory, issues, weather = seen["lines"]
    assert git.startswith("git uvx mcp-server-git --repository /home/workbench/tenants/")
    assert "ok: 12 tools in 812 ms, 0 minutes ago git_psuh ⚠ not offered Open" in git
    assert memory.startswith("memory npx -y @modelcontextprotocol/server-memory ok: 9 tools")
    assert issues.startswith("issues http://127.0.0.1:8931/mcp failing: ")
    assert f"{FAILING_REASON} (0 minutes ago; incident {INCIDENT})" in issues
    assert "ok: 2 tools, 2 held, in 812 ms" in weather and seen["held badge"] == "2 held"

    def open_git() -> dict[str, object]:
        page.locator(f"{rows} summary.wb-server-line").first.click()
        args = page.locator('textarea[name="servers-0-args"]')
        warning = page.locator(".inline-related").first.locator(".wb-missing-note")
        tools = page.locator(".inline-related").first.locator(".wb-tools")
        return {
            "args": args.input_value(),
            # the box shows all it holds: nothing to scroll to, no line hidden
            "args overflow": args.evaluate("box => box.scrollHeight - box.clientHeight"),
            "args wider than shown": args.evaluate("box => box.scrollWidth - box.clientWidth"),
            "warning": warning.inner_text(),
            "warning height": warning.bounding_box()["height"],
            "tools top - warning bottom": tools.bounding_box()["y"]
            - (warning.bounding_box()["y"] + warning.bounding_box()["height"]),
        }

    opened = chromium.run(open_git)
    chromium.shot(page, "toolbox-02-git-opened")
    assert opened["args"] == "\n".join(GIT_ARGS)
    assert opened["args overflow"] <= 0 and opened["args wider than shown"] <= 0
    assert opened["warning"] == MISSING_WARNING
    assert opened["warning height"] < 30  # one line
    assert opened["tools top - warning bottom"] < 20  # right above the ticks

    def open_the_failing_one() -> str:
        page.locator(f"{rows} summary.wb-server-line").nth(2).click()
        other = page.locator(".inline-related").nth(2).locator(".wb-tools p.wb-other")
        return other.inner_text().strip()

    note = chromium.run(open_the_failing_one)
    assert note == (
        f"Its tools are not known: its last check failed ({FAILING_REASON}). "
        "Check it again once fixed, or type names."
    )

    def type_more_arguments() -> int:
        page.locator(f"{rows} summary.wb-server-line").nth(1).click()
        box = page.locator('textarea[name="servers-1-args"]')
        box.fill("\n".join(["-y", "@modelcontextprotocol/server-memory", *"abcdef"]))
        return box.evaluate("box => box.scrollHeight - box.clientHeight")

    assert chromium.run(type_more_arguments) <= 0  # the box grew with its lines
    chromium.shot(page, "toolbox-03-arguments-grow-as-typed")
