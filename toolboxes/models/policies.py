"""Who may call which tool: a tenant's tool policies and its defaults (issue 36).

A rule's scope is the tenant, a toolbox, a server of that toolbox (by name) or a tool (by
name), its subject everyone, a role, an identity provider's group (as the group mappings
name it), a member (their personal keys and OAuth sign-ins) or one API key, its effect
allow or deny. How rules decide a call is `kernel.tool_policy` (the gateway and the admin
ask it); `as_rule` is what it reads of a row.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from kernel import approvals, tool_policy
from kernel.roles import ROLES
from toolboxes.fields import EncryptedStringField
from toolboxes.models.tenants import ApiKey, Tenant, Toolbox

DUPLICATE = "This tenant already has a rule for this scope and subject: change its effect instead."
SERVER_NEEDS_TOOLBOX = "A server is named within a toolbox: choose the toolbox too."
FOREIGN_TOOLBOX = "The toolbox must be one of this tenant's."
FOREIGN_KEY = "The API key must be one of this tenant's."
NOT_A_MEMBER = "The person must be a member of this tenant."
UNKNOWN_SERVER = "Toolbox '{toolbox}' has no server named '{server}'."
NEEDS = {
    tool_policy.ROLE: ("role", "Choose the role this rule is for."),
    tool_policy.GROUP: ("group", "Name the identity provider's group this rule is for."),
    tool_policy.PERSON: ("person", "Choose the member this rule is for."),
    tool_policy.KEY: ("api_key", "Choose the API key this rule is for."),
}
NOT_FOR_KIND = "Leave this empty: the rule is for {kind}."
SUBJECT_FIELDS = ("role", "group", "person", "api_key")
TERMS_NEED_ASK = "Only an ask rule has approval terms: choose the effect ask, or leave this empty."
APPROVERS_NOT_MEMBERS = "Approvers must be members of this tenant: {names}."
WEBHOOK_NEEDS_SECRET = "A webhook needs its signing secret: the receiver checks each POST with it."


class Effect(models.TextChoices):
    ALLOW = tool_policy.ALLOW, "allow"
    DENY = tool_policy.DENY, "deny"
    ASK = tool_policy.ASK, "ask: a person approves each call"


class SubjectKind(models.TextChoices):
    EVERYONE = tool_policy.EVERYONE, "everyone"
    ROLE = tool_policy.ROLE, "a role"
    GROUP = tool_policy.GROUP, "an identity provider's group"
    PERSON = tool_policy.PERSON, "a member (their personal keys and sign-ins)"
    KEY = tool_policy.KEY, "an API key"


class ToolPolicy(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tool_policies")
    toolbox = models.ForeignKey(
        Toolbox,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="tool_policies",
        help_text="Empty: every toolbox of the tenant.",
    )
    server = models.CharField(
        max_length=100, blank=True, help_text="A server's name in the toolbox. Empty: every server."
    )
    tool = models.CharField(
        max_length=200, blank=True, help_text="A tool's name. Empty: every tool."
    )
    subject = models.CharField(
        "for", max_length=10, choices=SubjectKind, default=SubjectKind.EVERYONE
    )
    role = models.CharField(max_length=10, blank=True, choices=[(role, role) for role in ROLES])
    group = models.CharField(
        "group",
        max_length=255,
        blank=True,
        help_text="The group's name as the identity provider sends it (see the group mappings).",
    )
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="tool_policies",
        help_text="A member: their personal API keys and OAuth sign-ins.",
    )
    api_key = models.ForeignKey(
        ApiKey,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="tool_policies",
        verbose_name="API key",
    )
    effect = models.CharField(max_length=10, choices=Effect, default=Effect.DENY)
    # An "ask" rule's terms (kernel.approvals): ignored for allow and deny.
    approval_minutes = models.PositiveSmallIntegerField(
        "approval time (minutes)",
        default=approvals.DEFAULT_MINUTES,
        validators=[MinValueValidator(1), MaxValueValidator(approvals.MAX_MINUTES)],
        help_text="Ask: how long a held call waits for a person's approval.",
    )
    self_approval = models.BooleanField(
        "the caller may approve their own call",
        default=False,
        help_text="Ask: a member calling in person may approve their own call. Off: another "
        "person must (a second pair of eyes).",
    )
    approvers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="tool_policies_to_approve",
        help_text="Ask: members who may approve besides the tenant's admins.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant__slug", "toolbox__name", "server", "tool", "subject", "pk"]
        verbose_name = "tool policy"
        verbose_name_plural = "tool policies"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(effect__in=tool_policy.EFFECTS), name="tool_policy_effect_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(subject__in=tool_policy.SUBJECT_KINDS),
                name="tool_policy_subject_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(server="") | models.Q(toolbox__isnull=False),
                name="tool_policy_server_in_toolbox",
                violation_error_message=SERVER_NEEDS_TOOLBOX,
            ),
        ]

    def __str__(self) -> str:
        return self.as_rule().scope_text() + f", {self.as_rule().subject_text()}: {self.effect}"

    def subject_value(self) -> str:
        if self.subject == tool_policy.ROLE:
            return self.role
        if self.subject == tool_policy.GROUP:
            return self.group
        if self.subject == tool_policy.PERSON:
            return str(self.person_id or "")
        if self.subject == tool_policy.KEY:
            return str(self.api_key_id or "")
        return ""

    def subject_label(self) -> str:
        if self.subject == tool_policy.PERSON and self.person is not None:
            return self.person.get_username()
        if self.subject == tool_policy.KEY and self.api_key is not None:
            return str(self.api_key)
        return ""

    def as_rule(self, toolbox_name: str | None = None) -> tool_policy.Rule:
        """What the decision reads (`toolbox_name`: known already, saves a query)."""
        if toolbox_name is None:
            toolbox_name = self.toolbox.name if self.toolbox_id else ""
        return tool_policy.Rule(
            effect=self.effect,
            subject=self.subject,
            value=self.subject_value(),
            toolbox=toolbox_name,
            server=self.server,
            tool=self.tool,
            label=self.subject_label(),
            rule_id=self.pk or 0,
            terms=self.terms(),
        )

    def terms(self) -> approvals.ApprovalTerms:
        """An "ask" rule's terms (its approvers read from the database: prefetch them)."""
        if self.effect != tool_policy.ASK:
            return approvals.DEFAULT_TERMS
        named = frozenset(user.pk for user in self.approvers.all()) if self.pk else frozenset()
        return approvals.ApprovalTerms(self.approval_minutes, self.self_approval, named)

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}

        def add(field: str, text: str) -> None:
            errors.setdefault(field, []).append(text)

        self.server = self.server.strip()
        self.tool = self.tool.strip()
        self.group = self.group.strip()
        if self.server and self.toolbox_id is None:
            add("server", SERVER_NEEDS_TOOLBOX)
        if self.tenant_id is not None:
            if self.toolbox_id is not None and self.toolbox.tenant_id != self.tenant_id:
                add("toolbox", FOREIGN_TOOLBOX)
            elif (
                self.toolbox_id is not None
                and self.server
                and not self.toolbox.servers.filter(name=self.server).exists()
            ):
                add("server", UNKNOWN_SERVER.format(toolbox=self.toolbox.name, server=self.server))
            if self.api_key_id is not None and self.api_key.tenant_id != self.tenant_id:
                add("api_key", FOREIGN_KEY)
            if (
                self.person_id is not None
                and not self.tenant.memberships.filter(user_id=self.person_id).exists()
            ):
                add("person", NOT_A_MEMBER)
        needed = NEEDS.get(self.subject)
        kind = SubjectKind(self.subject).label if self.subject in SubjectKind.values else ""
        for name in SUBJECT_FIELDS:
            value = getattr(self, f"{name}_id" if name in ("person", "api_key") else name)
            if needed is not None and name == needed[0]:
                if not value:
                    add(name, needed[1])
            elif value:
                add(name, NOT_FOR_KIND.format(kind=kind))
        if self.effect != tool_policy.ASK:
            if self.approval_minutes != approvals.DEFAULT_MINUTES:
                add("approval_minutes", TERMS_NEED_ASK)
            if self.self_approval:
                add("self_approval", TERMS_NEED_ASK)
        if not errors and self.tenant_id is not None and self._duplicates().exists():
            raise ValidationError(DUPLICATE)
        if errors:
            raise ValidationError(errors)

    def _duplicates(self) -> models.QuerySet[ToolPolicy]:
        return ToolPolicy.objects.filter(
            tenant_id=self.tenant_id,
            toolbox_id=self.toolbox_id,
            server=self.server,
            tool=self.tool,
            subject=self.subject,
            role=self.role,
            group=self.group,
            person_id=self.person_id,
            api_key_id=self.api_key_id,
        ).exclude(pk=self.pk)


def approvers_problem(tenant: Tenant, effect: str, people: list[Any]) -> str | None:
    """What is wrong with a rule's named approvers (None: nothing): the admin's form, the
    API and the configuration document ask it before setting them (a many-to-many the
    model's `clean` cannot see)."""
    if not people:
        return None
    if effect != tool_policy.ASK:
        return TERMS_NEED_ASK
    members = set(
        tenant.memberships.filter(user__in=[person.pk for person in people]).values_list(
            "user_id", flat=True
        )
    )
    strangers = sorted(person.get_username() for person in people if person.pk not in members)
    return APPROVERS_NOT_MEMBERS.format(names=", ".join(strangers)) if strangers else None


class PolicyDefaults(models.Model):
    """A tenant's one-click defaults from the tools' annotations (the servers' claims: an
    admin's rule for the tool overrides them)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="policy_defaults")
    deny_destructive_to_keys = models.BooleanField(
        "deny destructive tools to tenant keys",
        default=False,
        help_text="A tool whose server marks it destructive (destructiveHint) is refused to "
        "the tenant's API keys (not to members' personal keys or sign-ins), unless a rule "
        "for that tool allows it.",
    )
    ask_destructive = models.BooleanField(
        "ask before every destructive tool",
        default=False,
        help_text="Each call of a tool whose server marks it destructive (destructiveHint) "
        "waits for a person's approval (a tenant admin's; not the caller's own), unless a "
        "rule for that tool says otherwise.",
    )
    approval_webhook_url = models.URLField(
        "approval webhook",
        max_length=500,
        blank=True,
        help_text="Told of each call waiting for an approval: a signed JSON POST (chat, "
        "paging). Empty: approvers see the admin's queue only.",
    )
    approval_webhook_secret = EncryptedStringField(
        "webhook signing secret",
        blank=True,
        help_text="Signs each POST (the Workbench-Signature header: HMAC-SHA256 of the "
        "timestamp and the body); encrypted at rest, never shown again.",
    )
    guard_secrets = models.BooleanField(
        "remove secrets from tool results",
        default=False,
        help_text="Credentials found in a tool's result (private keys, cloud provider keys, "
        "vendors' tokens, the server's own secret values) are replaced by a marker before "
        "the client gets it.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "tool policy defaults"
        verbose_name_plural = "tool policy defaults"

    def __str__(self) -> str:
        return f"{self.tenant.slug}: tool policy defaults"

    def clean(self) -> None:
        if self.approval_webhook_url and not self.approval_webhook_secret:
            raise ValidationError({"approval_webhook_secret": WEBHOOK_NEEDS_SECRET})

    def as_defaults(self) -> tool_policy.Defaults:
        return tool_policy.Defaults(
            deny_destructive_to_keys=self.deny_destructive_to_keys,
            ask_destructive=self.ask_destructive,
        )
