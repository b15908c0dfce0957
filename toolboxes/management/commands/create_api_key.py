"""create_api_key <tenant-slug> [--label L] [--toolbox NAME ...] [--expires-in-days N]
[--user USERNAME]

With --user, a personal key: its calls act as that member (connected accounts), and it
stops working when the membership ends.

The new key is printed alone on the last line of stdout, so scripts can take it with
`tail -n 1`; it is never shown again (only its SHA-256 is stored).
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from toolboxes.models import ApiKey, Tenant


class Command(BaseCommand):
    help = "Create an API key for a tenant; prints the key alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument("--label", default="", help="What the key is for.")
        parser.add_argument(
            "--toolbox",
            action="append",
            default=[],
            metavar="NAME",
            help="Limit the key to this toolbox (repeat for several). Default: all.",
        )
        parser.add_argument("--expires-in-days", type=int, default=None, metavar="N")
        parser.add_argument(
            "--user", default=None, metavar="USERNAME", help="A personal key of this member."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = find_tenant(options["tenant"])
        days = options["expires_in_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-in-days must be at least 1.")
        names = options["toolbox"]
        toolboxes = list(tenant.toolboxes.filter(name__in=names))
        missing = sorted(set(names) - {toolbox.name for toolbox in toolboxes})
        if missing:
            available = ", ".join(tenant.toolboxes.values_list("name", flat=True)) or "(none)"
            raise CommandError(
                f"Unknown toolbox {', '.join(repr(name) for name in missing)} for tenant "
                f"'{tenant.slug}'. Available toolboxes: {available}"
            )
        owner = find_member(tenant, options["user"]) if options["user"] else None
        with transaction.atomic():
            api_key, full_key = ApiKey.issue(
                tenant,
                label=options["label"],
                toolboxes=toolboxes,
                expires_in_days=days,
                owner=owner,
            )
        scope = ", ".join(sorted(names)) if names else "all toolboxes"
        expiry = api_key.expires_at.isoformat() if api_key.expires_at else "never"
        whose = f"personal key of '{owner.get_username()}'" if owner else "API key"
        self.stdout.write(
            f"Created {whose} wb_{api_key.prefix}_… for tenant '{tenant.slug}' "
            f"(scope: {scope}; expires: {expiry}).\n"
            "Copy it now: it will not be shown again."
        )
        self.stdout.write(full_key)


def find_tenant(slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        known = ", ".join(Tenant.objects.values_list("slug", flat=True)) or "(none)"
        raise CommandError(f"Unknown tenant '{slug}'. Tenants: {known}")
    return tenant


def find_member(tenant: Tenant, username: str) -> Any:
    membership = tenant.memberships.filter(user__username=username).select_related("user")
    found = membership.first()
    if found is None:
        raise CommandError(f"'{username}' is not a member of tenant '{tenant.slug}'.")
    return found.user
