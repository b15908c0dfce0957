"""Which host files a sandboxed command is shown: its own (executable, interpreter,
virtualenv or node_modules tree, script or package), the paths its arguments name under its
tenant's directories (the kernel's `named_paths`, the rule the admin's form shares), never
the gateway's own (protected) paths. Checks only: nothing here binds anything (`argv` does)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kernel.classified import ClassifiedFailure
from kernel.named_paths import (
    SCRIPT_SUFFIXES,
    SYSTEM_DIRS,
    contains_protected,
    environment_root,
    named_paths,
    python_home,
)
from kernel.tenant_paths import PathRefused, check, inside
from mcp_gateway.downstream.sandbox.paths import REFUSED


def parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


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
        check(path, None, protected)
    except PathRefused as exc:
        raise ClassifiedFailure(REFUSED, f"mount not bound: {exc}") from None


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
            root = environment_root(Path(os.path.normpath(hop)))
            if root is not None:
                add(root)
                if (root / "pyvenv.cfg").is_file() and (home := python_home(root)):
                    add(home)
        real = path.resolve()
        if environment_root(real) is None:
            prefix = _prefix_of(real)
            if prefix != real and contains_protected(str(prefix), protected):
                prefix = real  # never a protected directory whole: the program alone
            if prefix.is_dir() or real.suffix in SCRIPT_SUFFIXES or os.access(real, os.X_OK):
                add(prefix)
        interpreter = _shebang(real)
        if interpreter and depth < 4:
            add_program(Path(interpreter), depth + 1)

    add_program(Path(executable))
    try:
        named = named_paths(args, cwd, protected, roots=roots, mounts=mounts)
    except PathRefused as exc:
        raise ClassifiedFailure(REFUSED, f"not bound: {exc}") from None
    for path in named:
        add(Path(path))
    return [path for path in found if path != "/"]
