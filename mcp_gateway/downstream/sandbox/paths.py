"""What a client hears when a spawn refuses a host path (the log gets the reason). The
rules themselves are the kernel's (`kernel.tenant_paths`, `kernel.named_paths`): the
admin's validation and each spawn check a path by the same ones."""

from __future__ import annotations

from mcp_gateway.downstream.failures import SANDBOX_FAILED

REFUSED = f"{SANDBOX_FAILED}: a host path it would show was refused"
