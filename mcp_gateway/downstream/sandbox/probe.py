"""Is the sandbox there? An empty one started once per uid, before the first server."""

from __future__ import annotations

import shutil

import anyio

from kernel.classified import ClassifiedFailure
from mcp_gateway.downstream.sandbox.argv import sandbox_argv, seccomp_file
from mcp_gateway.downstream.sandbox.policy import FIX, SandboxPolicy
from mcp_gateway.snapshots.sandbox import SandboxSpec

_probed: set[tuple[str, int]] = set()


async def probe(policy: SandboxPolicy, owner: int = 0) -> None:
    """Start an empty sandbox once (per uid); raise ClassifiedFailure when it cannot."""
    uid = policy.uid_base + owner
    if (policy.bwrap, uid) in _probed:
        return
    if shutil.which(policy.bwrap) is None:
        raise ClassifiedFailure(
            f"the sandbox could not start: bubblewrap ({policy.bwrap}) is not installed; {FIX}",
            f"{policy.bwrap} not found on PATH",
        )
    spec = SandboxSpec(owner=owner)
    # With the seccomp filter, so that a bubblewrap refusing it shows here.
    argv = sandbox_argv("/bin/true", [], None, spec, policy, binds=[], seccomp=seccomp_file(policy))
    try:
        with anyio.fail_after(10):
            result = await anyio.run_process(argv, check=False, env={"PATH": "/usr/bin:/bin"})
    except (OSError, TimeoutError) as exc:
        raise ClassifiedFailure(f"the sandbox could not start; {FIX}", repr(exc)) from None
    if result.returncode != 0:
        said = result.stderr.decode(errors="replace").strip().splitlines()
        detail = said[-1] if said else f"exit status {result.returncode}"
        raise ClassifiedFailure(f"the sandbox could not start ({detail[:200]}); {FIX}", detail)
    _probed.add((policy.bwrap, uid))
