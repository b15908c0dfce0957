"""The performance figures (docs/performance.md, once the README's) are one run's: the last
`make bench`, whose table is bench/results/latest.md (issue 26: a table and a paragraph from
two runs disagreed); the tool search's section, its own run of its two benchmarks
(bench/results/issue33.md); the secrets guard's, its own (bench/results/issue36-secret-guard.md);
the relay's and the toolbox endpoint's, one run of theirs (bench/results/issue34-35.md)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
# The tool search's section is one run of its own two benchmarks (issue 33).
SEARCH_SECTION = "\n## Tool search"
# The secrets guard's section, its own run of its benchmark (issue 36).
GUARD_SECTION = "\n## The secrets guard"
# The relay's and the toolbox endpoint's section, one run of three benchmarks (issues 34, 35).
RELAY_SECTION = "\n## The relay and the toolbox endpoint"


def figures_of_its_run(page: str, results: str) -> tuple[list[float], list[str]]:
    """The figures of the run in `bench/results/<results>`, once `page` is seen to name that
    run (its date, time and commit); and the page's measured column, header left out."""
    run_file = (ROOT / "bench" / "results" / results).read_text()
    run = re.search(r"- run: (\d{4}-\d\d-\d\d) (\d\d:\d\d) UTC", run_file)
    commit = re.search(r"commit (\w+)", run_file).group(1)
    assert f"run on {run.group(1)} at {run.group(2)} UTC" in page.replace("\n", " ")
    assert f"commit `{commit}`" in page
    measured = [float(n.replace(",", "")) for n in NUMBER.findall(run_file)]
    rows = [line for line in page.splitlines() if line.startswith("| ") and "---" not in line]
    return measured, [row.split(" | ")[1] for row in rows[1:]]


def test_every_performance_figure_is_in_the_latest_run():
    page = (ROOT / "docs" / "performance.md").read_text().split(SEARCH_SECTION, 1)[0]
    measured, cells = figures_of_its_run(page, "latest.md")
    paragraph = page.split("What limits it on this machine", 1)[1]
    for text in [*cells, paragraph]:
        for figure in NUMBER.findall(text.replace("1.6\N{MULTIPLICATION SIGN}", "")):
            value = float(figure.replace(",", ""))
            places = len(figure.partition(".")[2])
            if value in (2, 4, 15, 20, 100, 500, 1000):  # counts and targets, not figures
                continue
            assert any(round(m, places) == value for m in measured), (figure, text)


def test_every_tool_search_figure_is_in_its_run():
    page = (ROOT / "docs" / "performance.md").read_text().split(SEARCH_SECTION, 1)[1]
    page = page.split(GUARD_SECTION, 1)[0]
    measured, cells = figures_of_its_run(page, "issue33.md")
    for cell in cells:
        for figure in NUMBER.findall(cell):
            places = len(figure.partition(".")[2])
            value = float(figure.replace(",", ""))
            assert any(round(m, places) == value for m in measured), (figure, cell)


def test_every_secrets_guard_figure_is_in_its_run():
    page = (ROOT / "docs" / "performance.md").read_text().split(GUARD_SECTION, 1)[1]
    page = page.split(RELAY_SECTION, 1)[0]
    measured, cells = figures_of_its_run(page, "issue36-secret-guard.md")
    assert cells
    for cell in cells:
        for figure in NUMBER.findall(cell):
            assert float(figure.replace(",", "")) in measured, (figure, cell)


def test_every_relay_and_toolbox_endpoint_figure_is_in_its_run():
    page = (ROOT / "docs" / "performance.md").read_text().split(RELAY_SECTION, 1)[1]
    measured, cells = figures_of_its_run(page, "issue34-35.md")
    assert cells
    for cell in cells:
        for figure in NUMBER.findall(cell):
            places = len(figure.partition(".")[2])
            value = float(figure.replace(",", ""))
            assert any(round(m, places) == value for m in measured), (figure, cell)
