"""Directories a tenant's sandboxed servers may be shown, for tests.

pytest's tmp_path lies below a 0700 directory, which the sandbox refuses to show (a bind
would expose what the tenant's uid cannot reach on the host): a test that hands a server a
directory takes one from here, under the tenant's WORKBENCH_SANDBOX_TENANT_ROOT (made per
test run by tests/settings.py, removed when it ends).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kernel.tenant_paths import tenant_roots


def tenant_dir(slug: str) -> Path:
    """A new, empty directory under tenant `slug`'s root, every directory above it
    enterable by other users."""
    [root] = tenant_roots(slug)
    Path(root).mkdir(mode=0o755, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=root))
    path.chmod(0o755)
    return path
