"""create_tenant, create_api_key, revoke_api_key: good input and bad, nothing changed on
failure."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from toolboxes.models import ApiKey, Tenant, Toolbox


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def tenant(db):
    tenant = Tenant.objects.create(slug="acme")
    Toolbox.objects.create(tenant=tenant, name="dev", description="d")
    Toolbox.objects.create(tenant=tenant, name="prod", description="p")
    return tenant


def test_create_tenant(db):
    assert run("create_tenant", "beta", "--name", "Beta Inc") == "Created tenant 'beta'.\n"
    assert Tenant.objects.get().name == "Beta Inc"


@pytest.mark.parametrize(
    ("slug", "message"),
    [("acme", "slug: Tenant with this Slug already exists."), ("bad slug", "slug: Enter a valid")],
)
def test_create_tenant_refuses(tenant, slug, message):
    with pytest.raises(CommandError, match=message):
        run("create_tenant", slug)
    assert Tenant.objects.count() == 1


def test_create_api_key_prints_the_key_last(tenant):
    output = run("create_api_key", "acme", "--label", "ci", "--toolbox", "dev")
    full_key = output.splitlines()[-1]
    api_key = ApiKey.objects.get()
    assert api_key.matches(full_key)
    assert api_key.label == "ci"
    assert [toolbox.name for toolbox in api_key.toolboxes.all()] == ["dev"]
    assert api_key.limited
    assert "will not be shown again" in output


def test_create_api_key_with_expiry(tenant):
    run("create_api_key", "acme", "--expires-in-days", "7")
    api_key = ApiKey.objects.get()
    assert (api_key.expires_at - api_key.created_at).days in (6, 7)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope",), "Unknown tenant 'nope'. Tenants: acme"),
        (("acme", "--toolbox", "dev", "--toolbox", "qa"), "Unknown toolbox 'qa'"),
        (("acme", "--expires-in-days", "0"), "--expires-in-days must be at least 1."),
    ],
)
def test_create_api_key_refuses(tenant, args, message):
    with pytest.raises(CommandError, match=message):
        run("create_api_key", *args)
    assert ApiKey.objects.count() == 0


def test_revoke_by_prefix_and_by_full_key(tenant):
    first, _ = ApiKey.issue(tenant)
    _, second_key = ApiKey.issue(tenant)
    assert "Revoked" in run("revoke_api_key", first.prefix)
    assert "Revoked" in run("revoke_api_key", second_key)
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 0
    assert "already revoked" in run("revoke_api_key", first.prefix)


def test_revoke_refuses_unknown_and_wrong_keys(tenant):
    api_key, full_key = ApiKey.issue(tenant)
    forged = full_key[:-2] + ("xx" if not full_key.endswith("xx") else "yy")
    for given in ("zzzz9999", forged, "not-a-key"):
        with pytest.raises(CommandError):
            run("revoke_api_key", given)
    api_key.refresh_from_db()
    assert api_key.revoked_at is None


@pytest.mark.parametrize(
    "spelling", ["wb_{prefix}", "wb_{prefix}_…", "wb_{prefix}_...", " wb_{prefix} "]
)
def test_revoke_takes_the_prefix_as_the_admin_and_the_command_show_it(tenant, spelling):
    """The admin's key column reads `wb_hine7dh5_…`, this command's own output `wb_…_…`:
    either, copied as it is, names the key (issue 20)."""
    api_key, _ = ApiKey.issue(tenant)
    given = spelling.format(prefix=api_key.prefix)
    assert run("revoke_api_key", given) == (
        f"Revoked API key wb_{api_key.prefix}_… of tenant 'acme'.\n"
    )
    api_key.refresh_from_db()
    assert api_key.revoked_at is not None


NOT_A_KEY = (
    "Give the key's 8-character prefix (as the admin shows it, wb_xxxxxxxx) or the whole wb_… key."
)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("wb_zzzz9999", "No API key with prefix 'zzzz9999' matches."),
        ("wb_zzzz999", NOT_A_KEY),
        ("wb_ZZZZ9999", NOT_A_KEY),
        ("xx_zzzz9999", NOT_A_KEY),
    ],
)
def test_revoke_refuses_what_names_no_key_saying_why(tenant, given, message):
    api_key, _ = ApiKey.issue(tenant)
    with pytest.raises(CommandError) as refused:
        run("revoke_api_key", given)
    assert str(refused.value) == message
    api_key.refresh_from_db()
    assert api_key.revoked_at is None
