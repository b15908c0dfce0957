"""The documentation's pages (the README and docs/*.md) and their fenced blocks, for the
tests that build the site and run what it prints."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.harness.paths import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^[ \t]*(`{3,})(\S*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text, and the paragraphs just before and after
    it (where the page says which test runs it, or that none does)."""

    page: Path
    language: str
    code: str
    line: int
    before: str
    after: str


def _paragraph(lines: list[str]) -> list[str]:
    """The first paragraph of `lines` (blank lines before it skipped)."""
    taken: list[str] = []
    for line in lines:
        if not line.strip():
            if taken:
                break
            continue
        taken.append(line)
    return taken


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].splitlines()
        after = text[match.end() :].splitlines()[1:]  # past the closing fence's own line
        found.append(
            Block(
                page=page,
                language=match.group(2).strip("{}"),
                code=match.group(3),
                line=text.count("\n", 0, match.start()) + 1,
                before=" ".join(reversed(_paragraph(before[::-1]))),
                after=" ".join(_paragraph(after)),
            )
        )
    return found


def block(page: Path, language: str, containing: str) -> Block:
    """The one block of `page` in `language` whose text contains `containing`."""
    matching = [b for b in blocks(page) if b.language == language and containing in b.code]
    assert len(matching) == 1, (page, language, containing, len(matching))
    return matching[0]
