"""A short soak, so that bench/soak.py does not rot (not a measurement)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_soak_runs_its_faults_and_leaves_nothing_behind(tmp_path):
    rows_file = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, "bench/soak.py", "--quick", "--json", str(rows_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    rows = {row["figure"]: row for row in json.loads(rows_file.read_text())}
    assert int(rows["outcome: ok"]["value"]) > 0
    assert rows["fault: downstream killed"]["value"] == "1"
    assert rows["outcome: hang: TIMEOUT"]["value"] == "1"
    assert rows["downstream processes left after shutdown"]["value"] == "0"
