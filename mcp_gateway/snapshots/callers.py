"""Who is calling: an API key's record (or an OAuth grant's, in the same shape) and its
tenant's snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_gateway.snapshots.servers import TenantConfig


@dataclass(frozen=True, slots=True)
class KeyLimits:
    """A key's own limits (`toolboxes.key_limits`); None: the gateway's, a rate of 0: none."""

    rate: float | None = None  # use_tool calls per second
    burst: int | None = None
    open_rate: float | None = None  # open_toolbox
    open_burst: int | None = None


INSTALLATION_LIMITS = KeyLimits()


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What verifying a key needs; the key itself is never kept."""

    key_id: int
    prefix: str
    key_hash: str
    tenant_id: int
    revoked: bool
    expires_at: float | None
    toolboxes: frozenset[str] | None  # None: every toolbox of the tenant
    version: int
    owner_id: int | None = None  # a personal key's member (its calls act as them)
    owner_refusal: str = ""  # why that member may no longer use it (accounts.key_refusals)
    limits: KeyLimits = INSTALLATION_LIMITS  # its own, where an admin set them

    def allows(self, toolbox: str) -> bool:
        return self.toolboxes is None or toolbox in self.toolboxes


@dataclass(frozen=True, slots=True)
class Caller:
    key: KeyRecord  # for an OAuth grant: key_id is the negated grant id, prefix "grant:<id>"
    tenant: TenantConfig
    grant_id: int | None = None  # set when the caller is a member's OAuth sign-in
    person_id: int | None = None  # the member it acts as (a sign-in, a personal key)
    base_url: str = ""  # where Workbench is, as this request reached it (connect links)

    @property
    def owner(self) -> str:
        """Whose open toolboxes these are: the credential's (a key, or a sign-in with every
        token it is refreshed to), shared by all its sessions."""
        if self.grant_id is not None:
            return f"grant:{self.grant_id}"
        return f"key:{self.key.key_id}"

    def visible_toolboxes(self) -> list[str]:
        return [tb.name for tb in self.tenant.toolboxes if self.key.allows(tb.name)]
