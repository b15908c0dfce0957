"""docs/api.md's recipes, run as printed (only the API's address put in) by bash, with curl
and jq, against a live Workbench, as an operator's personal API token: the imperative
recipes, then the declarative round trip (export, plan, apply with If-Match)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from accounts.models import ApiToken
from tests.harness.live import running_gateway
from tests.site.doc_pages import DOCS, block
from toolboxes.catalog.entries import load_default_catalog
from toolboxes.models import Tenant

# What the page prints, whatever the test database: the SQLite pass only.
pytestmark = [
    pytest.mark.once,
    pytest.mark.skipif(
        not (shutil.which("curl") and shutil.which("jq")), reason="the recipes need curl and jq"
    ),
]

PAGE = DOCS / "api.md"
PRINTED_API = "API=https://workbench.example.com/api/v1\n"
PLAN = re.compile(r'\{"applied": false, "version": "(\w+)", "created": \[\], "changed": \[\], ')


def test_the_api_recipes_run_as_printed(transactional_db: None, tmp_path: Path) -> None:
    recipes = block(PAGE, "sh", "$API/me ").code
    declarative = block(PAGE, "sh", "dry_run=true").code
    assert recipes.startswith(PRINTED_API)
    Tenant.objects.create(slug="acme", name="Acme")
    load_default_catalog()  # the recipe makes its server from the shipped catalog's entry
    operator = User.objects.create_superuser("ops", "ops@example.com", "unused-password")
    token = ApiToken.issue(operator, name="recipes")[1]
    (tmp_path / "workbench").mkdir()  # the GitOps repository's folder
    with running_gateway() as live:
        api = live.url.removesuffix("/mcp") + "/api/v1"
        script = recipes.replace(PRINTED_API, f"API={api}\n") + declarative
        done = subprocess.run(
            ["bash", "-c", script + 'echo "ETAG=$ETAG"\n'],
            cwd=tmp_path,
            env={"PATH": os.environ["PATH"], "WORKBENCH_API_TOKEN": token},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert (done.returncode, done.stderr) == (0, "")
    out = done.stdout
    assert '{"username": "ops", "operator": true' in out  # /me
    assert (
        '{"name": "ops", "description": "Operations tools", "offered_alone": true, "servers": []}'
        in out
    )
    assert '{"name": "time", "toolbox": "ops", "position": 0, "transport": "stdio"' in out
    assert re.search(r'\{"ok": (true|false), "milliseconds": \d+, ', out)  # the check
    if '{"ok": true' in out:  # listed by the check: the search finds its clock
        assert "ops/time/get_current_time\nops/time/convert_time\n" in out, out
    key = re.search(r'"prefix": "(\w+)", "label": "ci", .*"key": "wb_\1_', out)
    assert key, out
    assert '{"items": [], "next_cursor": null}' in out  # no call failed yet
    assert f"\n{key.group(1)} ci active\n" in out.replace("}", "}\n")  # the keys, page by page
    exported = json.loads((tmp_path / "workbench" / "acme.json").read_text())
    assert "ops" in json.dumps(exported)
    plans = PLAN.findall(out)  # the dry run's, then the write's: nothing changed
    assert len(plans) == 2 and plans[0] == plans[1]
    assert out.endswith(f'ETAG="{plans[0]}"\n')  # the If-Match sent was the export's ETag
