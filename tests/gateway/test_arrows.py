"""The house plan's arrows: the gateway reads the admins' world (and the people's) only
through its doors, `config` and `auth`; `check` names a model for type hints alone."""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[2] / "mcp_gateway"
DOORS = {"config.py", "auth.py"}
OTHER_WORLDS = ("toolboxes", "accounts", "calls")


def runtime_imports(path: Path) -> set[str]:
    """Modules imported by a file, leaving out `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_gateway_reaches_other_worlds_only_through_its_doors():
    crossings = {
        path.name: sorted(
            name for name in runtime_imports(path) if name.split(".")[0] in OTHER_WORLDS
        )
        for path in sorted(GATEWAY.glob("*.py"))
        if path.name not in DOORS
    }
    assert {name: found for name, found in crossings.items() if found} == {}
