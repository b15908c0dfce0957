"""Which host files a sandboxed command is shown: its own (executable, interpreter,
virtualenv or node_modules tree, script or package), the paths its arguments name under its
tenant's directories, never the gateway's own (protected) paths. Checks only: nothing here
binds anything (`argv` does)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernel.classified import ClassifiedFailure
from mcp_gateway.downstream.sandbox import paths as sandbox_paths

# The host's system directories, read-only (symlinks such as /bin -> usr/bin are copied).
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
SCRIPT_SUFFIXES = (".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".sh", ".jar")


def inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def is_protected(path: str, protected: Iterable[str]) -> bool:
    """True when binding `path` would show one of the gateway's own paths."""
    return any(inside(path, item) or inside(item, path) for item in protected)


def parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


def _environment_root(path: Path) -> Path | None:
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


def _python_home(venv: Path) -> Path | None:
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


def _prefix_of(executable: Path) -> Path:
    """A program's installation prefix (`<prefix>/bin/<name>`), or the file itself."""
    if executable.parent.name == "bin" and str(executable.parent.parent) != "/":
        return executable.parent.parent
    return executable


def _shebang(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if words and words[0].startswith("/") else None


def check_mount(path: str, protected: Sequence[str]) -> None:
    """Refuse a mount that now resolves elsewhere than it was validated (a directory
    swapped for a symlink), shows a protected path, or lies below a directory other users
    cannot enter: checked at every spawn, as validation did (toolboxes.validators)."""
    try:
        sandbox_paths.check(path, None, protected)
    except sandbox_paths.PathRefused as exc:
        raise ClassifiedFailure(sandbox_paths.REFUSED, f"mount not bound: {exc}") from None


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
    (sandbox_paths) and bound as it is; one the server's mounts show needs nothing. Any
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
        sandbox_paths.check(text, roots, protected)  # resolves to itself, checked
        return [real]
    if any(inside(real, root) for root in roots):
        sandbox_paths.check(real, roots, protected)
        return [real]
    if real == "/" or any(inside(real, mount) for mount in mounts):
        return []  # never the root whole; a mount shows it (checked as a mount)
    environment = _environment_root(Path(real))
    if environment is not None and not _contains_protected(str(environment), protected):
        home = _python_home(environment) if (environment / "pyvenv.cfg").is_file() else None
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
    raise sandbox_paths.PathRefused(sandbox_paths.outside(text, roots))


def command_files(
    executable: str,
    args: Sequence[str],
    cwd: str | None,
    protected: Sequence[str],
    *,
    roots: Sequence[str] = (),
    mounts: Sequence[str] = (),
) -> list[str]:
    """The host paths a command needs, to bind read-only (never a protected one whole);
    a named path that may not be shown (named_paths) is a ClassifiedFailure naming it."""
    found: list[str] = []

    def add(path: Path) -> None:
        text = str(path)
        system = any(inside(text, item) for item in SYSTEM_DIRS if item != "/etc")
        if text not in found and not system:
            found.append(text)

    def add_program(path: Path, depth: int = 0) -> None:
        """An executable: every hop of its symlinks, its environment and interpreter."""
        hops = [path]
        while hops[-1].is_symlink() and len(hops) < 40:
            hops.append(hops[-1].parent / os.readlink(hops[-1]))
        for hop in hops:
            root = _environment_root(Path(os.path.normpath(hop)))
            if root is not None:
                add(root)
                if (root / "pyvenv.cfg").is_file() and (home := _python_home(root)):
                    add(home)
        real = path.resolve()
        if _environment_root(real) is None:
            prefix = _prefix_of(real)
            if prefix != real and _contains_protected(str(prefix), protected):
                prefix = real  # never a protected directory whole: the program alone
            if prefix.is_dir() or real.suffix in SCRIPT_SUFFIXES or os.access(real, os.X_OK):
                add(prefix)
        interpreter = _shebang(real)
        if interpreter and depth < 4:
            add_program(Path(interpreter), depth + 1)

    add_program(Path(executable))
    try:
        named = named_paths(args, cwd, protected, roots=roots, mounts=mounts)
    except sandbox_paths.PathRefused as exc:
        raise ClassifiedFailure(sandbox_paths.REFUSED, f"not bound: {exc}") from None
    for path in named:
        add(Path(path))
    return [path for path in found if path != "/"]


def _contains_protected(path: str, protected: Iterable[str]) -> bool:
    return any(inside(item, path) for item in protected)
