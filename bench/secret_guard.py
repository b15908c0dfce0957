"""The secrets guard's cost per call: µs to scan a tool result, off and on.

    .venv/bin/python bench/secret_guard.py [--quick] [--json FILE]

Results recorded once from the published servers, each run over stdio with the SDK's
client (mcp-server-git on a repository of a few commits: git_log, git_show, git_status;
npm's server-everything when Node is present: echo, get-tiny-image, get-structured-content,
get-resource-reference), then a text result of 1 KiB, 10 KiB, 100 KiB and 1 MiB made of
git_log's output repeated, and one 10 KiB result with four credentials planted. Off: the
tenant's switch read, nothing scanned. On: `secret_guard.guard` with the server's stored
secrets (two env values), its median over repeated runs. --quick: a few runs each.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.common import Row, arguments, report
from kernel.redaction import Redactor
from mcp_gateway.metatools.secret_guard import guard

SECTION = "16 secret guard"
EVERYTHING = Path(__file__).resolve().parents[1] / "tests/node_modules/.bin/mcp-server-everything"
STORED = Redactor(["env-secret-value-0123456789", "Bearer header-token-abcdef0123456789"])
PLANTED = (
    "AKIAIOSFODNN7EXAMPLE\n"
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7Yf3Hq0pZ0wW1cYc2mJXk6tH9m8r0H0xQ9a\n"
    "-----END RSA PRIVATE KEY-----\n"
    "ghp_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx\n"
    "env-secret-value-0123456789\n"
)


def repository(path: Path) -> None:
    git = ["git", "-C", str(path), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for number in range(12):
        (path / f"file{number}.txt").write_text(f"line {number}\n" * (number + 1))
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"change number {number}"], check=True)


async def record(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> list:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [(name, await session.call_tool(name, arguments)) for name, arguments in calls]


async def recorded(workdir: Path) -> list[tuple[str, types.CallToolResult]]:
    repo = workdir / "repo"
    repo.mkdir()
    repository(repo)
    at = {"repo_path": str(repo)}
    git = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server_git", "--repository", str(repo)]
    )
    results = [
        (f"git {name}", result)
        for name, result in await record(
            git,
            [
                ("git_log", {**at, "max_count": 10}),
                ("git_show", {**at, "revision": "HEAD"}),
                ("git_status", at),
            ],
        )
    ]
    if shutil.which("node") and EVERYTHING.exists():
        everything = StdioServerParameters(command=str(EVERYTHING), args=["stdio"])
        calls = [
            ("echo", {"message": "hello"}),
            ("get-tiny-image", {}),
            ("get-structured-content", {"location": "Chicago"}),
            ("get-resource-reference", {"resourceId": 1}),
        ]
        results += [(f"everything {n}", r) for n, r in await record(everything, calls)]
    return results


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def size_of(result: types.CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


def timed_us(action: Any, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


def main() -> None:
    options = arguments(__doc__ or "").parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        results = asyncio.run(recorded(Path(workdir)))
    log = next(r for name, r in results if name == "git git_log").content[0].text
    for size in (1 << 10, 10 << 10, 100 << 10, 1 << 20):
        text = (log * (size // len(log) + 1))[:size]
        results.append((f"git_log text, {size >> 10} KiB", text_result(text)))
    filler = (log * (10 * 1024 // len(log) + 1))[: 10 * 1024 - len(PLANTED)]
    results.append(("10 KiB with 4 credentials planted", text_result(filler + PLANTED)))
    rows = []
    on_switch = {"guard_secrets": False}
    for name, result in results:
        size = size_of(result)
        runs = 3 if options.quick else (20 if size > 200_000 else 200)
        off = timed_us(lambda r=result: on_switch["guard_secrets"] and guard(r, [STORED]), runs)
        on = timed_us(lambda result=result: guard(result, [STORED]), runs)
        _, found = guard(result, [STORED])
        removed = f", {found.total} removed" if found else ""
        rows.append(
            Row(SECTION, f"{name} ({size:,} B{removed}): off / on (µs)", f"{off:.1f} / {on:.0f}")
        )
    report(rows, options.json, "Secrets guard: cost per result")


if __name__ == "__main__":
    main()
