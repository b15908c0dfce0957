"""Which host paths a sandboxed server may be shown (README, "Security model"): the rules
the admin's validation and the gateway's spawns share.

A bind shows its source whatever the directories above it allow, and bubblewrap follows
a symlink as it is when the sandbox starts. So a path is checked where it is configured
(the admin's forms, import_config) and again at every spawn (the gateway's sandbox), by
the same rules:

- a path a tenant admin names (a catalog parameter filling an argument) lies under one of
  the tenant's directories: WORKBENCH_SANDBOX_TENANT_ROOT, `{tenant}` its slug (an
  operator's mounts may lie anywhere else);
- it resolves to itself: no symlink and no `..` on the way, so a directory swapped for a
  symlink after it was checked is refused, not followed;
- it shows none of the gateway's own paths (WORKBENCH_SANDBOX_PROTECTED);
- every directory above it can be entered by other users (o+x): the tenant's uid is no
  owner of the host's directories, and a bind would show a file below one it cannot enter
  (`/root`, mode 0700) that it could not read on the host.

Nothing here binds anything: these are checks, and their reasons name the path. What a
client hears when a spawn refuses one is the gateway's (`downstream.sandbox.paths`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

TENANT = "{tenant}"
SETTING = "WORKBENCH_SANDBOX_TENANT_ROOT"


class PathRefused(Exception):
    """A path that may not be shown to a sandboxed server; the message says why."""


def inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def root_pattern(value: str) -> str:
    """The WORKBENCH_SANDBOX_TENANT_ROOT setting, checked: empty or an absolute path."""
    value = value.strip()
    if value and not value.startswith("/"):
        raise ImproperlyConfigured(
            f"{SETTING} must be an absolute path (with {TENANT} for the tenant's slug), "
            f"not {value!r}"
        )
    return value


def tenant_roots(slug: str, pattern: str | None = None) -> tuple[str, ...]:
    """The host directories tenant `slug`'s admins may name, resolved; none when the
    setting is empty (the default)."""
    if pattern is None:
        pattern = settings.WORKBENCH_SANDBOX_TENANT_ROOT
    if not pattern:
        return ()
    return (os.path.realpath(pattern.replace(TENANT, slug)),)


def closed_parent(path: str) -> tuple[str, int] | None:
    """The first directory above `path` that other users cannot enter, with its mode."""
    parts = path.strip("/").split("/")[:-1]
    for depth in range(len(parts) + 1):
        parent = "/" + "/".join(parts[:depth])
        try:
            mode = os.stat(parent).st_mode
        except OSError:
            return None  # not there: nothing below it is either
        if not mode & stat.S_IXOTH:
            return parent, stat.S_IMODE(mode)
    return None


def outside(path: str, roots: Sequence[str]) -> str:
    """The reason a path outside the tenant's directories is refused, naming them."""
    where = ", ".join(roots) if roots else f"none ({SETTING} is not set)"
    return f"{path} is outside the directories this tenant's servers may be shown: {where}"


def problem(path: str, roots: Sequence[str] | None, protected: Iterable[str]) -> str | None:
    """Why `path` may not be bound, or None. `roots`: the directories it must lie under
    (None: anywhere, for an operator's mount)."""
    normal = os.path.normpath(path)
    real = os.path.realpath(normal)
    if real != normal:
        return f"{path} resolves to {real}: name the real path, without symlinks"
    if roots is not None and not any(inside(real, root) for root in roots):
        return outside(path, roots)
    for item in protected:
        if inside(real, item) or inside(item, real):
            return f"{path} would show the gateway's own files ({item})"
    closed = closed_parent(real)
    if closed:
        return f"{path} is below {closed[0]}, which other users cannot enter (mode {closed[1]:04o})"
    return None


def check(path: str, roots: Sequence[str] | None, protected: Iterable[str]) -> None:
    """Raise PathRefused naming why `path` may not be bound."""
    reason = problem(path, roots, protected)
    if reason:
        raise PathRefused(reason)
