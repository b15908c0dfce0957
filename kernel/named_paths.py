"""What the absolute paths a stdio server's arguments and working directory name would
show it: the rule the admin's server form (said at once) and the gateway's spawns (checked
again, `downstream.sandbox.host_files`) share. Checks only: nothing here binds anything."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernel.tenant_paths import PathRefused, check, inside, outside

# The host's system directories, read-only (symlinks such as /bin -> usr/bin are copied).
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
SCRIPT_SUFFIXES = (".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".sh", ".jar")


def is_protected(path: str, protected: Iterable[str]) -> bool:
    """True when binding `path` would show one of the gateway's own paths."""
    return any(inside(path, item) or inside(item, path) for item in protected)


def contains_protected(path: str, protected: Iterable[str]) -> bool:
    """True when `path` is a directory holding one of the gateway's own paths."""
    return any(inside(item, path) for item in protected)


def environment_root(path: Path) -> Path | None:
    """The virtualenv or node_modules tree a file belongs to, if any."""
    for parent in path.parents:
        if parent.name == "node_modules":
            top = parent
            for above in parent.parents:  # nested node_modules: bind the outermost
                if above.name == "node_modules":
                    top = above
            return top
        if (parent / "pyvenv.cfg").is_file():
            return parent
    return None


def python_home(venv: Path) -> Path | None:
    """The prefix of the interpreter a virtualenv runs (pyvenv.cfg's `home` is its bin)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(value.strip())
            return home.parent if home.name == "bin" else home
    return None


def named_paths(
    args: Sequence[str],
    cwd: str | None,
    protected: Sequence[str],
    *,
    roots: Sequence[str] = (),
    mounts: Sequence[str] = (),
) -> list[str]:
    """What to bind for the absolute paths named in args and cwd; raises PathRefused for
    one that may not be shown.

    A path under the tenant's directories (`roots`: what its admins may name) is checked
    (`tenant_paths`) and bound as it is; one the server's mounts show needs nothing. Any
    other is bound only as the command's own files: a virtualenv or node_modules tree, a
    script or executable (a package's module: its package); the gateway's own files are
    skipped. Anything else is refused: an operator mounts it instead.
    """
    found: list[str] = []
    for text in [*(arg for arg in args if arg.startswith("/")), *([cwd] if cwd else [])]:
        found += [path for path in _named(text, protected, roots, mounts) if path not in found]
    return found


def _named(
    text: str, protected: Sequence[str], roots: Sequence[str], mounts: Sequence[str]
) -> list[str]:
    """What one named path binds (named_paths' rules); a missing one binds nothing."""
    path = os.path.normpath(text)
    if not os.path.exists(path):
        return []
    real = os.path.realpath(path)
    if any(inside(path, root) for root in roots):
        check(text, roots, protected)  # resolves to itself, checked
        return [real]
    if any(inside(real, root) for root in roots):
        check(real, roots, protected)
        return [real]
    if real == "/" or any(inside(real, mount) for mount in mounts):
        return []  # never the root whole; a mount shows it (checked as a mount)
    environment = environment_root(Path(real))
    if environment is not None and not contains_protected(str(environment), protected):
        home = python_home(environment) if (environment / "pyvenv.cfg").is_file() else None
        return [str(environment), *([str(home)] if home else [])]
    is_file = os.path.isfile(real)
    script = is_file and (Path(real).suffix in SCRIPT_SUFFIXES or os.access(real, os.X_OK))
    if is_protected(real, protected) and not script:
        return []  # e.g. the gateway's .env or database named as an argument
    if any(inside(real, item) for item in SYSTEM_DIRS):
        return []  # shown to every sandbox already
    if is_file:
        if Path(real).name == "__main__.py" or (Path(real).parent / "__init__.py").is_file():
            package = Path(real).parent
            while (package.parent / "__init__.py").is_file():
                package = package.parent
            if not is_protected(str(package), protected):
                return [str(package)]
        if script:
            return [real]
    raise PathRefused(outside(text, roots))
