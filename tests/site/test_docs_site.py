"""The documentation site (docs/, the README its home page) builds with Sphinx and MyST,
warnings as errors: a link to a page, a heading's anchor or a repository file that is not
there fails the build. External links are not checked (no network here). The build command
is the one docs/development.md prints."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.paths import ROOT
from tests.site.doc_pages import DOCS, PAGES, block

# The same whatever the test database (it uses none): the SQLite pass only.
pytestmark = pytest.mark.once

BUILD_SECONDS = 180


def build_command(out: Path, source: Path = DOCS, conf: Path | None = None) -> list[str]:
    """docs/development.md's command, with this Python, into `out` (from `source`)."""
    printed = block(DOCS / "development.md", "sh", "-m sphinx").code.strip()
    argv = shlex.split(printed)
    assert argv[:3] == [".venv/bin/python", "-m", "sphinx"] and argv[-2:] == ["docs", "build/site"]
    assert "-W" in argv  # warnings are errors: a broken link fails
    argv = [sys.executable, *argv[1:-2], str(source), str(out)]
    return argv if conf is None else [*argv[:-2], "-c", str(conf), *argv[-2:]]


def test_the_site_builds_with_every_internal_link_resolved(tmp_path: Path) -> None:
    done = subprocess.run(
        build_command(tmp_path / "site"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    home = (tmp_path / "site" / "index.html").read_text()
    assert "Workbench is a multi-tenant" in home  # the README is the home page
    for page in DOCS.glob("*.md"):
        assert (tmp_path / "site" / f"{page.stem}.html").exists(), page.name
    # The README's links to docs/ pages lead to the site's pages, anchors included.
    assert 'href="clients.html#which-versions-each-client-needs"' in home


def test_a_missing_page_anchor_or_file_fails_the_build(tmp_path: Path) -> None:
    """The site's own configuration, on two pages whose links lead nowhere."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "index.md").write_text("# Home\n\n```{toctree}\nother\n```\n")
    (source / "other.md").write_text(
        "# Other\n\n## A heading\n\n"
        "[ok](#a-heading), [ok](index.md#home), [a](#no-heading), [b](index.md#nowhere), "
        "[c](missing.md), [d](../no-such-file.cfg)\n"
    )
    done = subprocess.run(
        build_command(tmp_path / "site", source=source, conf=DOCS),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
    )
    assert done.returncode != 0
    for target in ("'no-heading'", "'nowhere'", "missing", "no-such-file.cfg"):
        assert re.search(rf"other\.md:\d+: WARNING: .*{re.escape(target)}", done.stderr), (
            target,
            done.stderr,
        )
    assert "a-heading" not in done.stderr and "'home'" not in done.stderr


# `<word>` outside code is an HTML tag to Markdown: the page would show nothing there.
TAG = re.compile(r"(?<!\\)<(?!https?://)[A-Za-z/][^>\n]*>")


def test_no_placeholder_in_the_text_is_taken_for_html() -> None:
    found = []
    for page in PAGES:
        text = re.sub(r"^[ \t]*(`{3,}).*?^[ \t]*\1[ \t]*$", "", page.read_text(), flags=re.M | re.S)
        text = re.sub(r"(`+)(?!`).+?(?<!`)\1(?!`)", "", text, flags=re.S)  # code spans
        found += [(page.name, tag) for tag in TAG.findall(text)]
    assert found == []


def test_the_readme_is_a_front_door_to_every_page() -> None:
    """The two commands first, then what it is, a client, and where to read on: every page
    of the site is one link away (issue 37: the README had grown to 1,244 lines)."""
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("# Workbench\n\n```sh\nmake run ")
    assert len(readme.splitlines()) <= 300
    headings = [line for line in readme.splitlines() if line.startswith("## ")]
    wanted = ["## What `make run` gives you", "## Connect a client", "## Where to read on"]
    assert [h for h in headings if h in wanted] == wanted
    read_on = readme.split("## Where to read on\n", 1)[1]
    pages = [page.name for page in DOCS.glob("*.md") if page.name != "index.md"]
    assert [name for name in pages if f"(docs/{name})" not in read_on] == []
