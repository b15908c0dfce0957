"""Tiny runs of every benchmark script and of the soak, so that they do not rot (not a
measurement).

`bench/run_all.py --quick --only SECTION` runs a script of bench/ with a few calls (the
FastMCP path skipped); a script that fails shows as an ERROR row. Those marked `bench` run
with `make bench-smoke`, not in `make test`'s passes.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.haproxy import MISSING

ROOT = Path(__file__).resolve().parents[1]
# The scripts make their own SQLite deployments: one run, whatever TEST_DATABASE_URL says
# (`once`: the SQLite pass; `once_pg`: the PostgreSQL one, so that both take about as long).
SECTIONS = (
    "1 latency",
    "2 open",
    "3 concurrency",
    "4 memory",
    "5 workers",
    "6 store",
    "7 levers",
    "8 telemetry",
    "9 floor",
    "10 sandbox network",
    "11 replicas",
    "12 sandbox seccomp",
    "13 search quality",
    "14 search speed",
    "16 secret guard",
    "17 relay",
)


def run_quick(script: str, *args: str) -> None:
    """A bench script in --quick mode, bounded in time; it must exit 0."""
    done = subprocess.run(
        [sys.executable, f"bench/{script}", "--quick", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=480,  # run_all's own bound for a script (420 s), and its start and end
    )
    assert done.returncode == 0, done.stderr


# `make test` runs the latency section (bench/common.py's gateways, sessions and table, which
# every script shares) and the replicas one (the shipped HAProxy configuration at work);
# `make bench-smoke` runs them all: each costs a pass tens of seconds.
@pytest.mark.parametrize(
    "section",
    [
        pytest.param(SECTIONS[0], marks=pytest.mark.once),  # latency
        pytest.param(SECTIONS[10], marks=pytest.mark.once_pg),  # replicas behind HAProxy
        *(
            pytest.param(section, marks=pytest.mark.bench)
            for section in (*SECTIONS[1:10], *SECTIONS[11:])
        ),
    ],
)
def test_every_benchmark_script_runs(tmp_path, section):
    """One section per test, so that the workers share them out."""
    output = tmp_path / "latest.md"
    run_quick("run_all.py", "--only", section, "--output", str(output))
    table = output.read_text()
    assert "| ERROR |" not in table, table
    assert f"| {section} |" in table, f"no rows of {section}:\n{table}"
    if section == "1 latency":
        for path in ("direct stdio (a)", "SDK HTTP (b)", "Workbench"):
            assert f"| 1 latency | {path}: p50" in table
    if section == "10 sandbox network":
        for mode in ("no sandbox", "sandbox, network off", "sandbox, filtered network"):
            assert f"| {section} | use_tool, {mode}: p50" in table
        assert f"| {section} | HTTP GET: sandbox / host |" in table or "not measured" in table
    if section == "11 replicas" and MISSING not in table:
        assert_replicas_rows(table)
    if section == "12 sandbox seccomp":
        for figure in ("empty sandbox, start to exit (ms)", "mcp-server-time, spawn"):
            assert f"| {section} | {figure}" in table
        assert "the filter adds (median)" in table
    if section == "13 search quality":
        for dataset in ("MetaTool", "Gorilla APIBench"):
            assert f"| {section} | {dataset} (" in table
        assert "recall@5 (%), plain BM25 / Workbench" in table
    if section == "14 search speed":
        assert f"| {section} | the next search finds the new tools, not the old | yes |" in table
    assert "2 cores" in table or "cores (nproc)" in table


def row(table: str, start: str) -> str:
    """The table's one row that starts with `start`."""
    [found] = [line for line in table.splitlines() if line.startswith(start)]
    return found


def assert_replicas_rows(table: str) -> None:
    """What holds whatever the machine's load: every phase ran, and the verdicts that
    depend on no timing. Where each tenant's servers run (and so whether a stateful
    server's sessions all saw one process) is the bounded-load hash at work: under load it
    moves a tenant, by design; the full run measures it (bench/replicas.py). The smoke
    run's HAProxy waits for a busy replica's health check (not marked down for being slow)
    and its calls are paced, so that a replica drained, then restarted, loses no call."""
    section = "| 11 replicas |"
    assert f"{section} per-tenant hash: tenants on one replica | " in table  # any count
    if "| server-memory | not measured" not in table:
        assert "server-memory, new sessions that saw the entity | " in table  # any count
    # A rolling restart (drained in HAProxy, then SIGTERM: the replica drains itself).
    restart = row(table, f"{section} rolling restart of 1: calls ok / failed |")
    assert restart.endswith(" / 0 | 0 failed | PASS |"), table
    assert f"{section} kill -9: until haproxy marked it down (s) | " in table
    # A command with another store refuses, and the key still works; with the replicas'
    # store, the revocation reaches them. (The store cut: the full run.)
    refused = "revoke_api_key with another store: refused, naming both (workbench.E001)"
    assert f"{section} {refused} | yes | yes | PASS |" in table, table
    assert f"{section} the key after the refused command | 200 | 200 | PASS |" in table, table
    assert (
        f"{section} revoke_api_key with the replicas' store: until 401 through HAProxy (ms) | "
        in table
    )


@pytest.mark.bench
def test_soak_runs_its_faults_and_leaves_nothing_behind(tmp_path):
    rows_file = tmp_path / "soak.json"
    run_quick("soak.py", "--json", str(rows_file))
    rows = {row["figure"]: row for row in json.loads(rows_file.read_text())}
    assert int(rows["outcome: ok"]["value"]) > 0
    # Faults come in turn every 2.5 s of 12: a second kill fits in when the hang (and,
    # without Redis, no revocation) ends soon enough, which load decides.
    assert int(rows["fault: downstream killed"]["value"]) >= 1
    assert rows["outcome: hang: TIMEOUT"]["value"] == "1"
    assert rows["downstream processes left after shutdown"]["value"] == "0"
