"""The API's bodies: what it reads and what it answers (pydantic, via django-ninja).

Secrets are write-only: a server's env and header values, its secret catalog parameters,
its OAuth client's secret and a tenant's approval webhook's signing secret are accepted on
input and answered only by name (or, for the client and signing secrets, whether one is
stored).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from accounts.models import ApiToken
from kernel import approvals
from toolboxes.models import ApiKey, Server, Tenant, Toolbox, ToolPolicy

TransportName = Literal["stdio", "streamable-http", "sse"]
PinningName = Literal["trust-first", "approve-all", "off"]
AuthModeName = Literal["none", "headers", "oauth_person", "oauth_shared", "client_credentials"]
OPERATORS_SEE = "How a raw server runs: null unless the token's owner is an operator."
KEEP_SECRET = (
    "Write-only values. The map given replaces the stored one; a name given with null "
    "keeps its stored value; omitted altogether, the stored map stays."
)
RATE = (
    "use_tool calls a second for this key; null: the installation's WORKBENCH_KEY_RATE_LIMIT; "
    "0: no limit."
)
BURST = "use_tool calls at once before the rate applies; null: WORKBENCH_KEY_RATE_BURST."
OPEN_RATE = (
    "open_toolbox calls a second for this key; null: WORKBENCH_OPEN_KEY_RATE_LIMIT; 0: no limit."
)
OPEN_BURST = "open_toolbox calls at once; null: WORKBENCH_OPEN_KEY_RATE_BURST."


class _In(Schema):
    model_config = ConfigDict(extra="forbid")


class TenantOut(Schema):
    slug: str
    name: str
    active: bool
    max_connections: int | None
    created_at: datetime

    @staticmethod
    def of(tenant: Tenant) -> TenantOut:
        return TenantOut(
            slug=tenant.slug,
            name=tenant.name,
            active=tenant.is_active,
            max_connections=tenant.max_connections,
            created_at=tenant.created_at,
        )


class TenantIn(_In):
    slug: str = Field(max_length=64)
    name: str = Field(default="", max_length=200)
    active: bool = True
    max_connections: int | None = Field(default=None, ge=0)


class TenantPatch(_In):
    name: str | None = Field(default=None, max_length=200)
    active: bool | None = None
    max_connections: int | None = Field(default=None, ge=0)


OFFERED_ALONE = (
    "Whether it is served as an MCP server of its own, at "
    "/mcp/t/<tenant>/toolboxes/<toolbox> (on by default; off: that path answers 404 and "
    "its tools are reached through the meta-tools only)."
)


class ToolboxOut(Schema):
    name: str
    description: str
    offered_alone: bool = Field(description=OFFERED_ALONE)
    servers: list[str]

    @staticmethod
    def of(toolbox: Toolbox) -> ToolboxOut:
        names = [server.name for server in toolbox.servers.order_by("position", "pk")]
        return ToolboxOut(
            name=toolbox.name,
            description=toolbox.description,
            offered_alone=toolbox.offered_alone,
            servers=names,
        )


class ToolboxIn(_In):
    name: str = Field(max_length=100)
    description: str
    offered_alone: bool = Field(default=True, description=OFFERED_ALONE)


class ToolboxPatch(_In):
    name: str | None = Field(default=None, max_length=100)
    description: str | None = None
    offered_alone: bool | None = Field(default=None, description=OFFERED_ALONE)


class AuthOut(Schema):
    """How a remote server signs in (`toolboxes.models.sign_in`); the secret write-only."""

    mode: str
    client_id: str
    client_secret_set: bool = Field(description="Whether a client secret is stored.")
    scopes: str

    @staticmethod
    def of(server: Server) -> AuthOut:
        client = server.oauth_client_values()
        return AuthOut(
            mode=server.auth,
            client_id=client.get("client_id", ""),
            client_secret_set=bool(client.get("client_secret")),
            scopes=server.oauth_scopes,
        )


class AuthIn(_In):
    mode: AuthModeName
    client_id: str = Field(default="", max_length=500)
    client_secret: str | None = Field(
        default=None, description="Write-only. null (or left out): the stored one is kept."
    )
    scopes: str = Field(default="", max_length=500)


class ServerOut(Schema):
    name: str
    toolbox: str
    position: int
    transport: str
    command: str | None = Field(description=OPERATORS_SEE)
    args: list[Any] | None = Field(description=OPERATORS_SEE)
    cwd: str | None = Field(description=OPERATORS_SEE)
    url: str | None = Field(description=OPERATORS_SEE)
    auth: AuthOut | None = Field(description=OPERATORS_SEE)
    env_names: list[str] = Field(description="The names of its environment variables.")
    header_names: list[str] = Field(description="The names of its HTTP headers.")
    catalog: str | None
    parameters: dict[str, Any] = Field(description="Its catalog parameters, secret ones left out.")
    secret_parameter_names: list[str]
    tool_filters: list[Any]
    timeout: int
    idle_timeout: int | None
    pinning: str
    enabled: bool
    last_check_ok: bool | None
    last_check_at: datetime | None
    last_check_reason: str
    last_check_incident: str = Field(description="A failed check's incident id in the log.")
    last_check_cause: str | None = Field(
        description="What happened and what to change (operators only; null for others)."
    )

    @staticmethod
    def of(server: Server, operator: bool) -> ServerOut:
        """As the caller may see it: how a raw server runs is for operators' eyes only."""
        return ServerOut(
            name=server.name,
            toolbox=server.toolbox.name,
            position=server.position,
            transport=server.transport,
            command=server.command if operator else None,
            args=list(server.args or []) if operator else None,
            cwd=server.cwd if operator else None,
            url=server.url if operator else None,
            auth=AuthOut.of(server) if operator else None,
            env_names=sorted(server.env or {}),
            header_names=sorted(server.headers or {}),
            catalog=server.catalog_entry.name if server.catalog_entry_id else None,
            parameters=dict(server.parameters or {}),
            secret_parameter_names=sorted(server.secret_parameters or {}),
            tool_filters=list(server.tool_filters or []),
            timeout=server.timeout,
            idle_timeout=server.idle_timeout,
            pinning=server.pinning,
            enabled=server.enabled,
            last_check_ok=server.last_check_ok,
            last_check_at=server.last_check_at,
            last_check_reason=server.last_check_reason,
            last_check_incident=server.last_check_incident,
            last_check_cause=server.last_check_cause if operator else None,
        )


class ServerFields(_In):
    transport: TransportName | None = None
    command: str | None = Field(default=None, max_length=1000)
    args: list[str] | None = None
    env: dict[str, str | None] | None = Field(default=None, description=KEEP_SECRET)
    cwd: str | None = Field(default=None, max_length=1000)
    url: str | None = Field(default=None, max_length=2000)
    headers: dict[str, str | None] | None = Field(default=None, description=KEEP_SECRET)
    auth: AuthIn | None = Field(default=None, description="Its sign-in, replaced whole.")
    catalog: str | None = Field(default=None, description="A catalog entry's name.")
    parameters: dict[str, str | None] | None = Field(default=None, description=KEEP_SECRET)
    tool_filters: list[str] | None = None
    timeout: int | None = Field(default=None, ge=1)
    idle_timeout: int | None = Field(default=None, ge=1)
    pinning: PinningName | None = None
    enabled: bool | None = None


class ServerIn(ServerFields):
    name: str = Field(max_length=100)


class ServerPatch(ServerFields):
    name: str | None = Field(default=None, max_length=100)


class ToolFiltersIn(_In):
    tool_filters: list[str] = Field(description='["*"] all tools, a list of names, [] none.')


class KeyOut(Schema):
    prefix: str
    label: str
    status: str
    toolboxes: list[str] | None = Field(description="null: every toolbox of the tenant.")
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    rate_limit: float | None = Field(description=RATE)
    rate_burst: int | None = Field(description=BURST)
    open_rate_limit: float | None = Field(description=OPEN_RATE)
    open_rate_burst: int | None = Field(description=OPEN_BURST)

    @staticmethod
    def of(key: ApiKey) -> KeyOut:
        limited = key.limited or key.toolboxes.exists()
        return KeyOut(
            prefix=key.prefix,
            label=key.label,
            status=key.status,
            toolboxes=sorted(t.name for t in key.toolboxes.all()) if limited else None,
            created_at=key.created_at,
            expires_at=key.expires_at,
            last_used_at=key.last_used_at,
            revoked_at=key.revoked_at,
            rate_limit=key.rate_limit,
            rate_burst=key.rate_burst,
            open_rate_limit=key.open_rate_limit,
            open_rate_burst=key.open_rate_burst,
        )


class KeyLimitsIn(_In):
    """A key's own limits (null: the installation's); above the installation's: operators."""

    rate_limit: float | None = Field(default=None, ge=0, description=RATE)
    rate_burst: int | None = Field(default=None, ge=1, description=BURST)
    open_rate_limit: float | None = Field(default=None, ge=0, description=OPEN_RATE)
    open_rate_burst: int | None = Field(default=None, ge=1, description=OPEN_BURST)


class KeyIn(KeyLimitsIn):
    label: str = Field(default="", max_length=200)
    toolboxes: list[str] = Field(default_factory=list, description="Empty: every toolbox.")
    expires_in_days: int | None = Field(default=None, ge=1, le=3650)


class KeyPatch(KeyLimitsIn):
    label: str | None = Field(default=None, max_length=200)


class KeyCreated(KeyOut):
    key: str = Field(description="The key itself, shown this once.")


class CallOut(Schema):
    id: int
    at: datetime
    meta_tool: str
    toolbox: str
    server: str
    tool: str
    outcome: str
    error_code: str
    duration_ms: float
    key_prefix: str
    member: str
    client_name: str


class TokenOut(Schema):
    prefix: str
    name: str
    tenant: str | None
    read_only: bool
    expires_at: datetime
    last_used_at: datetime | None

    @staticmethod
    def of(token: ApiToken) -> TokenOut:
        return TokenOut(
            prefix=token.prefix,
            name=token.name,
            tenant=token.tenant.slug if token.tenant_id else None,
            read_only=token.read_only,
            expires_at=token.expires_at,
            last_used_at=token.last_used_at,
        )


class WhoAmI(Schema):
    username: str
    operator: bool
    roles: dict[str, str] = Field(description="Tenant slug -> role, as this credential sees them.")
    credential: str = Field(description="The API token, or the OAuth sign-in, calling.")
    token: TokenOut | None = Field(description="The personal API token calling (null: OAuth).")


# Tool policies (api.routes.policies; the rules: toolboxes.models.policies)

PolicySubject = Literal["everyone", "role", "group", "person", "key"]
PolicyEffect = Literal["allow", "deny", "ask"]


class PolicyOut(Schema):
    id: int
    toolbox: str | None = Field(description="null: every toolbox of the tenant")
    server: str = Field(description="empty: every server")
    tool: str = Field(description="empty: every tool")
    subject: PolicySubject
    role: str
    group: str
    person: str | None = Field(description="a member's username (subject person)")
    key: str | None = Field(description="an API key's prefix (subject key)")
    effect: PolicyEffect
    approval_minutes: int = Field(description="ask: how long a held call waits for a person")
    self_approval: bool = Field(description="ask: a member calling in person may approve it")
    approvers: list[str] = Field(description="ask: members who may approve besides the admins")
    explained: str = Field(description="the rule as a decision names it")

    @staticmethod
    def of(rule: ToolPolicy) -> PolicyOut:
        read = rule.as_rule()
        return PolicyOut(
            id=rule.pk,
            toolbox=rule.toolbox.name if rule.toolbox_id else None,
            server=rule.server,
            tool=rule.tool,
            subject=rule.subject,
            role=rule.role,
            group=rule.group,
            person=rule.person.get_username() if rule.person_id else None,
            key=rule.api_key.prefix if rule.api_key_id else None,
            effect=rule.effect,
            approval_minutes=rule.approval_minutes,
            self_approval=rule.self_approval,
            approvers=sorted(person.get_username() for person in rule.approvers.all()),
            explained=f"{read.scope_text()}, {read.subject_text()}: {rule.effect}",
        )


class PolicyIn(_In):
    toolbox: str | None = Field(default=None, max_length=100)
    server: str = Field(default="", max_length=100)
    tool: str = Field(default="", max_length=200)
    subject: PolicySubject = "everyone"
    role: str = Field(default="", max_length=10)
    group: str = Field(default="", max_length=255)
    person: str | None = Field(default=None, description="a member's username")
    key: str | None = Field(default=None, description="an API key's prefix")
    effect: PolicyEffect = "deny"
    approval_minutes: int = Field(
        default=approvals.DEFAULT_MINUTES,
        ge=1,
        le=approvals.MAX_MINUTES,
        description="ask: how long a held call waits for a person's approval",
    )
    self_approval: bool = Field(
        default=False, description="ask: a member calling in person may approve their own call"
    )
    approvers: list[str] = Field(
        default_factory=list,
        description="ask: usernames of members who may approve besides the tenant's admins",
    )


class PolicyPatch(_In):
    """Fields left out are kept; `toolbox`, `person` and `key` may be set to null."""

    toolbox: str | None = Field(default=None, max_length=100)
    server: str | None = Field(default=None, max_length=100)
    tool: str | None = Field(default=None, max_length=200)
    subject: PolicySubject | None = None
    role: str | None = Field(default=None, max_length=10)
    group: str | None = Field(default=None, max_length=255)
    person: str | None = None
    key: str | None = None
    effect: PolicyEffect | None = None
    approval_minutes: int | None = Field(default=None, ge=1, le=approvals.MAX_MINUTES)
    self_approval: bool | None = None
    approvers: list[str] | None = None


class PolicyDefaultsBody(_In):
    deny_destructive_to_keys: bool = Field(
        description="A tool its server marks destructive is refused to the tenant's API keys "
        "unless a rule for that tool allows it."
    )
    ask_destructive: bool = Field(
        default=False,
        description="Each call of a tool its server marks destructive waits for a person's "
        "approval (a tenant admin's) unless a rule for that tool says otherwise.",
    )
    guard_secrets: bool = Field(
        default=False,
        description="Credentials found in a tool's result (private keys, cloud provider keys, "
        "vendors' tokens, the server's own secret values) are replaced by a marker such as "
        "`[secret removed: AWS Access Key]` before the client gets it.",
    )
    approval_webhook_url: str = Field(
        default="",
        max_length=500,
        description="Told of each call waiting for an approval by a signed JSON POST (the "
        "Workbench-Signature header). Empty: no webhook.",
    )
    approval_webhook_secret: str | None = Field(
        default=None,
        max_length=500,
        description="The webhook's signing secret. Write-only. null (or left out): the "
        "stored one is kept.",
    )


class PolicyDefaultsOut(Schema):
    deny_destructive_to_keys: bool
    ask_destructive: bool
    guard_secrets: bool
    approval_webhook_url: str
    approval_webhook_secret_set: bool = Field(description="Whether a signing secret is stored.")

    @staticmethod
    def of(row: Any) -> PolicyDefaultsOut:
        """A tenant's defaults (None: all off)."""
        return PolicyDefaultsOut(
            deny_destructive_to_keys=bool(row and row.deny_destructive_to_keys),
            ask_destructive=bool(row and row.ask_destructive),
            guard_secrets=bool(row and row.guard_secrets),
            approval_webhook_url=row.approval_webhook_url if row else "",
            approval_webhook_secret_set=bool(row and row.approval_webhook_secret),
        )
