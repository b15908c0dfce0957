"""What a new user meets first: the contract in the repository, an admin without dead
links, and a demo whose every server can start."""

import importlib.metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_CONTRACT = ROOT.parent / "shared" / "spec" / "meta-tools.md"


def test_the_contract_ships_in_the_repository_and_the_readme_links_it():
    assert "[`docs/contract.md`](docs/contract.md)" in (ROOT / "README.md").read_text()
    assert (ROOT / "docs" / "contract.md").read_text().startswith("# The gateway's MCP contract")


@pytest.mark.skipif(not SHARED_CONTRACT.exists(), reason="no shared/ beside this checkout")
def test_the_repository_contract_is_identical_to_the_shared_one():
    assert (ROOT / "docs" / "contract.md").read_bytes() == SHARED_CONTRACT.read_bytes()


def test_the_admin_has_no_view_site_link_to_a_missing_page(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "View site" not in page


def test_the_demo_extra_installs_every_server_the_demo_runs():
    extras = importlib.metadata.metadata("workbench").get_all("Requires-Dist")
    demo = [line for line in extras if 'extra == "demo"' in line]
    assert any(line.startswith("mcp-server-time") for line in demo)
    assert any(line.startswith("mcp-server-git") for line in demo)


def test_the_deploying_page_names_the_probes():
    deploying = (ROOT / "docs" / "deploying.md").read_text()
    assert "`GET /healthz`" in deploying and "`GET /readyz`" in deploying


def test_the_admin_says_toolboxes(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "Toolboxes" in page
    assert "Toolboxs" not in page
