"""The performance figures (docs/performance.md, once the README's) are one run's: the last
`make bench`, whose table is bench/results/latest.md (issue 26: a table and a paragraph from
two runs disagreed)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def test_every_performance_figure_is_in_the_latest_run():
    page = (ROOT / "docs" / "performance.md").read_text()
    latest = (ROOT / "bench" / "results" / "latest.md").read_text()
    run = re.search(r"- run: (\d{4}-\d\d-\d\d) (\d\d:\d\d) UTC", latest)
    commit = re.search(r"commit (\w+)", latest).group(1)
    assert f"run on {run.group(1)} at {run.group(2)} UTC" in page.replace("\n", " ")
    assert f"commit `{commit}`" in page
    measured = [float(n.replace(",", "")) for n in NUMBER.findall(latest)]
    rows = [line for line in page.splitlines() if line.startswith("| ") and "---" not in line]
    paragraph = page.split("What limits it on this machine", 1)[1]
    cells = [row.split(" | ")[1] for row in rows[1:]]  # the measured column
    for text in [*cells, paragraph]:
        for figure in NUMBER.findall(text.replace("1.6\N{MULTIPLICATION SIGN}", "")):
            value = float(figure.replace(",", ""))
            places = len(figure.partition(".")[2])
            if value in (2, 4, 15, 20, 100, 500, 1000):  # counts and targets, not figures
                continue
            assert any(round(m, places) == value for m in measured), (figure, text)
