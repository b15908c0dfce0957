"""Every command block of the README and docs/ is run by a test the text beside it names, or
says it is not run by the test suite (issue 37); and the single sign-on examples, which are
env files, are run here: Workbench starts with each."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.keys import TEST_FERNET_KEY
from tests.harness.paths import ROOT
from tests.site.doc_pages import DOCS, PAGES, Block, blocks

# The same whatever the test database (the commands run on SQLite files of their own).
pytestmark = pytest.mark.once

COMMANDS = {"sh", "bash", "shell", "console", "python", "py", "pycon", "yaml", "yml"}
NOT_COMMANDS = {"", "text", "json", "include", "toctree"}  # diagrams, outputs, directives
TEST_ID = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
NOT_RUN = "not run by the test suite"


def command_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.language in COMMANDS]


def test_every_block_has_a_language_this_check_knows() -> None:
    unknown = [
        (b.page.name, b.line, b.language)
        for page in PAGES
        for b in blocks(page)
        if b.language not in COMMANDS | NOT_COMMANDS
    ]
    assert unknown == []


def test_every_command_block_is_run_by_a_named_test_or_says_it_is_not() -> None:
    found = command_blocks()
    assert len(found) >= 10
    unmarked, wrong = [], []
    for b in found:
        beside = f"{b.before} {b.after}"
        named = TEST_ID.findall(beside)
        if not named and NOT_RUN not in beside.lower():
            unmarked.append((b.page.name, b.line))
        for path, name in named:
            source = ROOT / path
            text = source.read_text() if source.exists() else ""
            if not re.search(rf"^(async )?def {name}\(", text, re.M):
                wrong.append((b.page.name, b.line, f"{path}::{name}: no such test"))
            elif b.page.name not in text:
                wrong.append((b.page.name, b.line, f"{path} does not read {b.page.name}"))
    assert unmarked == []
    assert wrong == []


def start_with(env_file: Path, tmp_path: Path) -> subprocess.Popen[str]:
    """`manage.py shell` (the settings, as any start loads them) with this env file alone,
    printing the providers and the group mappings it read."""
    show = (
        "from django.conf import settings; from accounts.sso.providers import all_providers; "
        "print(sorted((p.name, bool(p.client_secret)) for p in all_providers().values()), "
        "len(settings.WORKBENCH_OIDC_GROUP_MAPPINGS))"
    )
    return subprocess.Popen(
        [sys.executable, "manage.py", "shell", "-c", show],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "WORKBENCH_ENV_FILE": str(env_file),
            "SECRET_KEY": "s",
            "ENCRYPTION_KEYS": TEST_FERNET_KEY,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "WORKBENCH_STORE_DIR": str(tmp_path / "store"),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_sso_examples_start_workbench(tmp_path: Path) -> None:
    examples = [b for b in blocks(DOCS / "single-sign-on.md") if b.language == "sh"]
    assert len(examples) == 4
    runs = []
    for index, example in enumerate(examples):
        env_file = tmp_path / f"example{index}.env"
        env_file.write_text(example.code.replace("=...\n", "=a-secret\n"))
        runs.append((example, start_with(env_file, tmp_path / str(index))))
    # The same file without a client id: the start fails, naming the entry and the fault.
    broken = tmp_path / "broken.env"
    broken.write_text(examples[0].code.replace('"client_id": "0oa1b2c3d4", ', ""))
    refused = start_with(broken, tmp_path / "broken")
    for example, run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err[-2000:]
        name = re.search(r'"name": "([\w-]+)"', example.code).group(1)
        secret = f"WORKBENCH_OIDC_{name.upper()}_CLIENT_SECRET" in example.code
        mappings = example.code.count('"group":')
        assert out.strip().splitlines()[-1] == f"[('{name}', {secret})] {mappings}"
    out, err = refused.communicate(timeout=120)
    assert refused.returncode != 0
    assert "WORKBENCH_OIDC_PROVIDERS[0]: client_id is required." in err
