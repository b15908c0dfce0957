"""A tiny run of every benchmark script, so that they do not rot (not a measurement).

`bench/run_all.py --quick` runs each script of bench/ with a few calls (side by side, the
FastMCP path skipped), and joins their rows; a script that fails shows as an ERROR row.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("1 latency", "2 open", "3 concurrency", "4 memory", "5 workers")


def test_every_benchmark_script_runs(tmp_path):
    output = tmp_path / "latest.md"
    done = subprocess.run(
        [sys.executable, "bench/run_all.py", "--quick", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    table = output.read_text()
    assert "| ERROR |" not in table, table
    for section in SECTIONS:
        assert f"| {section} |" in table, f"no rows of {section}:\n{table}"
    for path in ("direct stdio (a)", "SDK HTTP (b)", "Workbench"):
        assert f"| 1 latency | {path}: p50" in table
    assert "2 cores" in table or "cores (nproc)" in table
