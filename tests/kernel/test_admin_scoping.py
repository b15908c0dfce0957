"""The admin toolkit's scoping (kernel.admin_kit.scoping): the path from a model to its
tenant, from its TenantScoped admin, from what its app declared, or from its fields."""

from __future__ import annotations

from django.contrib import admin

from accounts.models import Membership
from calls.models import CallRecord
from kernel.admin_kit.scoping import SHARED, tenant_path_of
from toolboxes.models import ApiKey, CatalogEntry, Server, Tenant, ToolPin


def test_each_models_path_to_its_tenant():
    site = admin.site
    assert tenant_path_of(Tenant, site) == "pk"
    assert tenant_path_of(ToolPin, site) == "server__toolbox__tenant"  # its admin says so
    assert tenant_path_of(Server, site) == "toolbox__tenant"
    assert tenant_path_of(Membership, site) == "tenant"
    assert tenant_path_of(CallRecord, site) == "tenant"
    assert tenant_path_of(ApiKey, site) == "tenant"


def test_declared_paths_hold_on_a_site_without_the_apps_admins():
    bare = admin.AdminSite(name="bare")
    assert tenant_path_of(Tenant, bare) == "pk"  # declared by toolboxes.admin.tenants
    assert tenant_path_of(CatalogEntry, bare) is SHARED  # declared by toolboxes.admin.catalog
    assert tenant_path_of(ToolPin, bare) == ""  # no admin, no declaration: operators only
