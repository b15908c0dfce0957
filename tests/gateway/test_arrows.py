"""The house plan's arrows (docs/architecture.md), computed from the code's own imports:

- the gateway reads and writes the admins' world (and the people's) only through its doors:
  `database` (snapshots read, records written) and `front/auth` (credentials);
- no module outside the gateway imports a gateway module: other apps use its public face,
  the names `mcp_gateway/__init__.py` re-exports;
- the shared kernel imports no app;
- no import circle among the product's modules;
- between apps, only the arrows the apps diagram draws ("## The apps"), each down the order
  of the apps, and never two apps importing each other.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import mcp_gateway

ROOT = Path(__file__).resolve().parents[2]
GATEWAY = ROOT / "mcp_gateway"
DOORS = {"database/reads.py", "database/records.py", "front/auth.py"}
OTHER_WORLDS = ("toolboxes", "accounts", "calls", "api", "connections")
APPS = ("mcp_gateway", *OTHER_WORLDS, "workbench_site", "bench")
PRODUCT = ("kernel", "mcp_gateway", *OTHER_WORLDS, "workbench_site")
# Turns the gateway's speed levers off by patching its internals (bench/levers.py): a
# measurement of the inside, not a user of the gateway; and times the secrets guard's scan of
# a result alone (bench/secret_guard.py).
INSIDE_MEASUREMENTS = {"bench/lever_off.py", "bench/secret_guard.py"}


def _typing_only(tree: ast.Module) -> set[int]:
    return {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }


def imports(path: Path, *, typing: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """A file's import statements (those under `if TYPE_CHECKING:` only when `typing`)."""
    tree = ast.parse(path.read_text())
    skipped = set() if typing else _typing_only(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
            yield node


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names: `from a import b` names `a.b` when `b` is a
    module, else `a`; a name of the gateway's face, the module that defines it."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module_of(path).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    found = []
    for alias in node.names:
        if base == "mcp_gateway" and alias.name in mcp_gateway._PUBLIC:
            found.append(mcp_gateway._PUBLIC[alias.name][0])
        elif is_module(f"{base}.{alias.name}"):
            found.append(f"{base}.{alias.name}")
        else:
            found.append(base)
    return found


def is_module(name: str) -> bool:
    top = name.split(".")[0]
    if top not in (*PRODUCT, "bench"):
        return False
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def files(*packages: str) -> list[Path]:
    return sorted(
        path
        for package in packages
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_the_gateway_reaches_other_worlds_only_through_its_doors():
    crossings = {
        str(path.relative_to(GATEWAY)): sorted(
            name
            for node in imports(path)
            for name in imported(path, node)
            if name.split(".")[0] in OTHER_WORLDS
        )
        for path in files("mcp_gateway")
        if str(path.relative_to(GATEWAY)) not in DOORS
    }
    assert {name: found for name, found in crossings.items() if found} == {}


def test_other_apps_use_the_gateways_public_face_only():
    inside = {}
    for path in files(*OTHER_WORLDS, "workbench_site", "bench", "kernel"):
        if str(path.relative_to(ROOT)) in INSIDE_MEASUREMENTS:
            continue
        for node in imports(path, typing=True):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                face = node.module == "mcp_gateway"
                names = [
                    node.module or ""
                    if not face or alias.name in mcp_gateway.__all__
                    else f"mcp_gateway.{alias.name}"
                    for alias in node.names
                ]
            for name in names:
                if name.startswith("mcp_gateway."):
                    inside.setdefault(str(path.relative_to(ROOT)), []).append(name)
    assert inside == {}


def test_the_face_names_what_it_imports():
    assert set(mcp_gateway.__all__) == {"__version__", *mcp_gateway._PUBLIC}
    for name, (module, attribute) in mcp_gateway._PUBLIC.items():
        assert importlib.util.find_spec(module) is not None, name
        assert getattr(mcp_gateway, name) is getattr(importlib.import_module(module), attribute)


def test_the_kernel_imports_no_app():
    found = {
        str(path.relative_to(ROOT)): name
        for path in files("kernel")
        for node in imports(path, typing=True)
        for name in imported(path, node)
        if name.split(".")[0] in APPS
    }
    assert found == {}


def import_graph() -> dict[str, set[str]]:
    """Product module -> the product modules it imports (inside functions too)."""
    graph: dict[str, set[str]] = {}
    for path in files(*PRODUCT):
        module = module_of(path)
        targets = graph.setdefault(module, set())
        for node in imports(path):
            targets.update(
                name
                for name in imported(path, node)
                if name != module and name.split(".")[0] in PRODUCT and is_module(name)
            )
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_among_product_modules():
    assert circles(import_graph()) == []


# The apps, bottom to top: an app imports only apps below it (docs/architecture.md).
ORDER = (
    "kernel",
    "toolboxes",
    "accounts",
    "calls",
    "connections",
    "mcp_gateway",
    "api",
    "workbench_site",
)
DIAGRAM = ROOT / "docs" / "architecture.md"
Arrow = tuple[str, str]
_ROW = re.compile(r"^\s*([a-z_]+)\s*(?:──▶\s*([a-z_, ]*[a-z_]))?\s*(?:\(.*\))?$")


def drawn_apps() -> tuple[list[str], set[Arrow]]:
    """The apps diagram: its rows top to bottom, and its arrows (app, app it imports)."""
    text = DIAGRAM.read_text()
    block = text.split("\n## The apps\n", 1)[1].split("```\n", 2)[1]
    rows: list[str] = []
    arrows: set[Arrow] = set()
    for line in block.splitlines():
        found = _ROW.match(line)
        assert found, f"a line of the apps diagram this test cannot read: {line!r}"
        rows.append(found[1])
        arrows |= {(found[1], target.strip()) for target in (found[2] or "").split(",") if target}
    return rows, arrows


def app_arrows() -> dict[Arrow, list[str]]:
    """Every import from one app into another, with the files that make it: inside functions
    and under `if TYPE_CHECKING` too, and the gateway's face's lazy names (its `_PUBLIC`
    table) as arrows into the modules they name."""
    found: dict[Arrow, list[str]] = {}

    def add(path: Path, names: Iterable[str]) -> None:
        app = module_of(path).split(".")[0]
        for name in names:
            target = name.split(".")[0]
            if target in ORDER and target != app:
                found.setdefault((app, target), []).append(str(path.relative_to(ROOT)))

    for path in files(*ORDER):
        for node in imports(path, typing=True):
            add(path, imported(path, node))
    add(GATEWAY / "__init__.py", (module for module, _ in mcp_gateway._PUBLIC.values()))
    return found


def arrow_problems(found: dict[Arrow, list[str]], rows: list[str], drawn: set[Arrow]) -> list[str]:
    """What breaks the order: an arrow the diagram does not draw, two apps importing each
    other, a drawn arrow no import makes or that goes up, rows not in the apps' order."""
    problems = []
    if rows != list(reversed(ORDER)):
        problems.append(f"the diagram's rows are {rows}, not the apps top to bottom")
    position = {app: index for index, app in enumerate(rows)}
    for source, target in sorted(drawn):
        if position.get(source, 0) >= position.get(target, 0):
            problems.append(f"the diagram draws {source} -> {target}, which goes up")
    for arrow, where in sorted(found.items()):
        if arrow not in drawn:
            problems.append(f"{arrow[0]} -> {arrow[1]} is not in the diagram ({where[0]})")
    counted = set(found)
    for source, target in sorted(counted):
        if (target, source) in counted and source < target:
            problems.append(f"{source} and {target} import each other")
    for source, target in sorted(drawn - set(found)):
        problems.append(f"the diagram draws {source} -> {target}, which no import makes")
    return problems


def test_the_apps_import_each_other_only_as_the_diagram_draws():
    rows, drawn = drawn_apps()
    assert arrow_problems(app_arrows(), rows, drawn) == []


def test_an_arrow_the_diagram_does_not_draw_fails_naming_it():
    rows, drawn = drawn_apps()
    found = app_arrows()
    extra = {**found, ("calls", "connections"): ["calls/synthetic.py"]}
    assert arrow_problems(extra, rows, drawn) == [
        "calls -> connections is not in the diagram (calls/synthetic.py)"
    ]
    both = {**found, ("kernel", "toolboxes"): ["kernel/synthetic.py"]}
    assert arrow_problems(both, rows, drawn) == [
        "kernel -> toolboxes is not in the diagram (kernel/synthetic.py)",
        "kernel and toolboxes import each other",
    ]
    upward = drawn | {("kernel", "toolboxes")}
    assert arrow_problems(both, rows, upward) == [
        "the diagram draws kernel -> toolboxes, which goes up",
        "kernel and toolboxes import each other",
    ]
