"""The secrets guard end to end, with the SDK's client over HTTP: credentials planted in a
tool's result (an AWS-style key pair, a PEM private key, a GitHub token) and the server's
own env secret are replaced by their markers when the tenant switched the guard on, counted
in the metric and marked in the call log, and reach the client untouched when it is off;
the published servers' ordinary results (mcp-server-git's, server-everything's) go through
the guard unchanged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
from asgiref.sync import sync_to_async
from prometheus_client.parser import text_string_to_metric_families

from calls.models import CallRecord
from tests.harness.live import LiveGateway, running_gateway
from tests.harness.results import text_of, use
from tests.harness.tenant_dirs import tenant_dir
from tests.harness.waits import eventually
from toolboxes.models import PolicyDefaults

pytestmark = pytest.mark.anyio

AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAx7Yf3Hq0pZ0wW1cYc2mJXk6tH9m8r0H0xQ9aGq8jz2KdVn1r\n"
    "t0zA2bq1sYwZtTQm1q8yJ3mW0y5iY8mM0vD1m9x0eQ==\n"
    "-----END RSA PRIVATE KEY-----"
)
STORED = "tenant-stored-secret-7f3a9c"
PLANTED = (
    f"deploy with {AWS_KEY_ID} and aws_secret_access_key = '{AWS_SECRET}'\n"
    f"{PEM}\n"
    f"token: {GITHUB_TOKEN}\n"
    f"and the server's own: {STORED}\n"
    "commit 3f786850e387550fdab836ed7e6dc881de23001b, sha256 "
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)
CLEANED = (
    "deploy with [secret removed: AWS Access Key] and aws_secret_access_key = "
    "'[secret removed: AWS Access Key]'\n"
    "[secret removed: Private Key]\n"
    "token: [secret removed: GitHub Token]\n"
    "and the server's own: [secret removed: stored secret]\n"
    "commit 3f786850e387550fdab836ed7e6dc881de23001b, sha256 "
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)
NODE_BIN = Path(__file__).resolve().parents[1] / "node_modules" / ".bin"


METRICS_TOKEN = "metrics-token-for-the-guard"


@pytest.fixture
def metered_gateway(settings: Any, transactional_db: None) -> Iterator[LiveGateway]:
    """A gateway whose /metrics answers the token."""
    settings.WORKBENCH_METRICS_TOKEN = METRICS_TOKEN
    with running_gateway() as live:
        yield live


def removed(live: LiveGateway, slug: str) -> dict[str, float]:
    """`workbench_secrets_removed_total` of the tenant by kind, as /metrics says."""
    url = live.url.removesuffix("/mcp") + "/metrics"
    response = httpx2.get(url, headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200
    found = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            name, labels = sample.name, sample.labels
            if name == "workbench_secrets_removed_total" and labels["tenant"] == slug:
                found[labels["kind"]] = sample.value
    return found


@pytest.fixture
def planted(make_setup):
    setup = make_setup()
    toolbox = setup.toolbox("dev")
    setup.fixture_server(toolbox, "fixture", env={"SERVICE_TOKEN": STORED})
    return setup


async def test_planted_credentials_are_replaced_when_the_guard_is_on(
    metered_gateway: LiveGateway, planted
):
    setup = planted
    await PolicyDefaults.objects.acreate(tenant=setup.tenant, guard_secrets=True)
    before = await sync_to_async(removed)(metered_gateway, setup.tenant.slug)
    async with metered_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        result = await session.call_tool(
            "use_tool", use("dev", "fixture", "echo", {"text": PLANTED})
        )
        assert not result.is_error
        assert text_of(result) == CLEANED
        environment = text_of(await session.call_tool("use_tool", use("dev", "fixture", "env")))
        assert STORED not in environment
        assert json.loads(environment)["SERVICE_TOKEN"] == "[secret removed: stored secret]"
        # Over 64 KiB of text: scanned in a worker thread, with the same outcome.
        filler = "a line of an ordinary large result\n" * 2000
        large = await session.call_tool(
            "use_tool", use("dev", "fixture", "echo", {"text": f"{filler}{AWS_KEY_ID}"})
        )
        assert text_of(large) == f"{filler}[secret removed: AWS Access Key]"
    after = await sync_to_async(removed)(metered_gateway, setup.tenant.slug)
    added = {kind: count - before.get(kind, 0) for kind, count in after.items()}
    assert added == {
        "AWS Access Key": 3,
        "GitHub Token": 1,
        "Private Key": 1,
        "stored secret": 2,  # the echoed value and the env tool's
    }
    rows = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, tool="echo").order_by("pk")
    await eventually(lambda: _count_is(rows, 2), 15, "the guarded calls' rows in the call log")
    row = await rows.afirst()
    assert row.outcome == "ok"
    assert row.decision == (
        "secrets removed: AWS Access Key (2), GitHub Token (1), Private Key (1), stored secret (1)"
    )


async def test_the_toolbox_endpoints_calls_are_guarded_too(live_gateway: LiveGateway, planted):
    setup = planted
    await PolicyDefaults.objects.acreate(tenant=setup.tenant, guard_secrets=True)
    slug = setup.tenant.slug
    endpoint = replace(live_gateway, url=live_gateway.url.rstrip("/") + f"/t/{slug}/toolboxes/dev")
    async with endpoint.session(setup.key) as session:
        result = await session.call_tool("fixture__echo", {"text": PLANTED})
        assert text_of(result) == CLEANED


async def test_the_result_is_untouched_when_the_guard_is_off(live_gateway: LiveGateway, planted):
    setup = planted
    async with live_gateway.session(setup.key) as session:
        await session.call_tool("open_toolbox", {"toolbox": "dev"})
        result = await session.call_tool(
            "use_tool", use("dev", "fixture", "echo", {"text": PLANTED})
        )
        assert text_of(result) == PLANTED
        environment = text_of(await session.call_tool("use_tool", use("dev", "fixture", "env")))
        assert json.loads(environment)["SERVICE_TOKEN"] == STORED
    rows = CallRecord.objects.filter(key_prefix=setup.api_key.prefix, tool="echo")
    await eventually(rows.aexists, 15, "the call's row in the call log")
    assert (await rows.aget()).decision == ""


def git_repo(slug: str) -> Path:
    repo = tenant_dir(slug) / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("# a repository\n\nwith a line of text\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    (repo / "README.md").write_text("# a repository\n\nchanged\n")
    return repo


PUBLISHED_CALLS = [
    ("git", "git_status", "repo"),
    ("git", "git_log", "repo"),
    ("git", "git_diff_unstaged", "repo"),
    ("git", "git_show", "repo"),
    ("everything", "echo", {"message": "hello from the guard's test"}),
    ("everything", "get-tiny-image", {}),
    ("everything", "get-structured-content", {"location": "Chicago"}),
    ("everything", "get-annotated-message", {"messageType": "success", "includeImage": True}),
    ("everything", "get-resource-reference", {"resourceId": 1}),
    ("everything", "get-resource-links", {"count": 3}),
    ("everything", "get-sum", {"a": 2, "b": 3}),
]


@pytest.mark.once_pg
@pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_BIN / "mcp-server-everything").exists(),
    reason="Node or the npm test servers are missing (npm ci --prefix tests)",
)
async def test_published_servers_results_pass_unchanged(live_gateway: LiveGateway, amake_setup):
    """The same calls for a tenant with the guard off and one with it on: the same results,
    nothing counted."""
    answers = []
    for on in (False, True):
        setup = await amake_setup("guard-on" if on else "guard-off")
        repo = git_repo(setup.tenant.slug)
        toolbox = await setup.atoolbox("dev")
        await toolbox.servers.acreate(
            name="git",
            command=sys.executable,
            args=["-m", "mcp_server_git", "--repository", str(repo)],
            position=0,
        )
        await toolbox.servers.acreate(
            name="everything",
            command=str(NODE_BIN / "mcp-server-everything"),
            args=["stdio"],
            position=1,
        )
        if on:
            await PolicyDefaults.objects.acreate(tenant=setup.tenant, guard_secrets=True)
        got = []
        async with live_gateway.session(setup.key) as session:
            await session.call_tool("open_toolbox", {"toolbox": "dev"})
            for server, tool, arguments in PUBLISHED_CALLS:
                if arguments == "repo":
                    arguments = {"repo_path": str(repo)}
                    if tool == "git_show":
                        arguments["revision"] = "HEAD"
                result = await session.call_tool("use_tool", use("dev", server, tool, arguments))
                assert not result.is_error, (tool, result)
                got.append(result.model_dump(exclude={"meta"}))
        answers.append((setup, got))
    (_, off), (guarded_setup, on) = answers
    for (_, tool, _), plain, seen in zip(PUBLISHED_CALLS, off, on, strict=True):
        # The commits differ by their time and hash, the resource by its time stamp: their
        # rows' empty decisions below say nothing was removed (the guard counts every change).
        if tool in ("git_log", "git_show", "get-resource-reference"):
            continue
        assert seen == plain, tool
    for (_, tool, _), seen in zip(PUBLISHED_CALLS, on, strict=True):
        assert "secret removed" not in json.dumps(seen), tool
    log = on[[tool for _, tool, _ in PUBLISHED_CALLS].index("git_log")]
    assert "first commit" in json.dumps(log)  # a commit's hash and its author went through
    rows = CallRecord.objects.filter(key_prefix=guarded_setup.api_key.prefix, meta_tool="use_tool")
    await eventually(lambda: _count_is(rows, len(PUBLISHED_CALLS)), 15, "the guarded calls' rows")
    assert [row.decision async for row in rows] == [""] * len(PUBLISHED_CALLS)


async def _count_is(rows: Any, count: int) -> bool:
    return await rows.acount() == count
