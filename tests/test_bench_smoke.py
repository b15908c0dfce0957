"""A few calls through each benchmark script, so that they do not rot (not a measurement)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_latency_benchmark_runs():
    done = subprocess.run(
        [sys.executable, "bench/latency.py", "--calls", "5", "--warmup", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "| through Workbench |" in done.stdout
    assert "| direct stdio |" in done.stdout
