"""Every benchmark, one markdown table: what `make bench` runs.

    .venv/bin/python bench/run_all.py [--quick] [--only SECTION,...] [--output FILE]

Runs each script of bench/ in its own process, one after another (so that they do not
measure each other), joins their rows into one table headed by the machine it ran on,
prints it and writes it to bench/results/latest.md. A script that fails gets a row saying
so and the others still run. `--quick` is the smoke test's size: a few calls per script,
the scripts run side by side, nothing written unless --output is given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (
    BENCH,
    RESULTS,
    ROOT,
    Row,
    database_template,
    in_fastmcp_venv,
    markdown,
)

# (script and its arguments, what it measures)
SCRIPTS: list[tuple[list[str], str]] = [
    (["latency.py"], "1 latency"),
    (["open.py"], "2 open"),
    (["concurrency.py", "--reference"], "3 concurrency"),
    (["memory.py"], "4 memory"),
    (["concurrency.py", "--workers", "1,2", "--redis"], "5 workers"),
    (["store.py"], "6 store"),
    (["levers.py"], "7 levers"),
    (["telemetry.py"], "8 telemetry"),
    (["floor.py"], "9 floor"),
    (["sandbox_network.py"], "10 sandbox network"),
    (["replicas.py"], "11 replicas"),
    (["sandbox_seccomp.py"], "12 sandbox seccomp"),
    (["search_quality.py"], "13 search quality"),
    (["search_speed.py"], "14 search speed"),
    (["search_tokens.py"], "15 search tokens"),
    (["secret_guard.py"], "16 secret guard"),
    (["relay.py"], "17 relay"),
]
SCRIPT_TIMEOUT = 1800.0
# A bound for a loaded machine (the replicas' smoke run took 197 s at a load average of 12).
QUICK_TIMEOUT = 420.0


def run_script(args: list[str], section: str, quick: bool) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="wb-bench-run-") as workdir:
        out = Path(workdir) / "rows.json"
        command = [sys.executable, str(BENCH / args[0]), *args[1:], "--json", str(out)]
        if quick:
            command.append("--quick")
        started = time.monotonic()
        try:
            done = subprocess.run(
                command,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=QUICK_TIMEOUT if quick else SCRIPT_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return [Row(section, " ".join(args), "failed: timed out", "", "ERROR")]
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return [Row(section, " ".join(args), f"failed: {last[:300]}", "", "ERROR")]
        rows = [Row(**row) for row in json.loads(out.read_text())]
        print(f"{' '.join(args)}: {time.monotonic() - started:.0f} s", file=sys.stderr)
        return rows


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _fastmcp_version() -> str:
    done = in_fastmcp_venv("import importlib.metadata as m; print(m.version('fastmcp'))", 60)
    if done is None:
        return "not installed (bench/.fastmcp-venv missing)"
    return done.stdout.strip() or "unknown"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()


def commit() -> str:
    """The commit measured, and whether the work tree differed from it."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def machine() -> str:
    """What the figures depend on: cores, CPU, versions, and how busy the machine was."""
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return (
        f"- machine: {os.cpu_count()} cores (nproc), {model}, {platform.system()} "
        f"{platform.release()}\n"
        f"- Python {platform.python_version()}, mcp {_version('mcp')}, "
        f"uvicorn {_version('uvicorn')}, Django {_version('Django')}, "
        f"FastMCP {_fastmcp_version()}; commit {commit()}\n"
    )


def load_average() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few calls per script")
    parser.add_argument("--output", type=Path, help="default: bench/results/latest.md")
    parser.add_argument(
        "--only", help="comma-separated sections to run (e.g. '1 latency,2 open'); default all"
    )
    options = parser.parse_args()
    wanted = set(options.only.split(",")) if options.only else {s for _, s in SCRIPTS}
    unknown = wanted - {section for _, section in SCRIPTS}
    if unknown:
        parser.error(f"no such section: {', '.join(sorted(unknown))}")
    scripts = [(args, section) for args, section in SCRIPTS if section in wanted]
    output = options.output or (None if options.quick else RESULTS / "latest.md")
    started = datetime.now(UTC)
    load_before = load_average()
    with database_template():
        if options.quick:  # nothing is measured: side by side is fine, and quicker
            with ThreadPoolExecutor(len(scripts)) as pool:
                runs = pool.map(lambda script: run_script(*script, quick=True), scripts)
                rows = [row for run in runs for row in run]
        else:
            rows = [row for args, section in scripts for row in run_script(args, section, False)]
    minutes = (datetime.now(UTC) - started).total_seconds() / 60
    text = (
        f"# Workbench benchmarks{' (--quick: not a measurement)' if options.quick else ''}\n\n"
        f"- run: {started:%Y-%m-%d %H:%M} UTC, {minutes:.1f} min; load average "
        f"(1/5/15 min) before {load_before}, after {load_average()}\n"
        f"{machine()}\n"
        f"{markdown(rows)}\n"
    )
    print(text)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        print(f"written to {output}")


if __name__ == "__main__":
    main()
