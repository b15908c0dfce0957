"""The admin's per-tenant scoping: one mixin for every ModelAdmin and inline.

Operators see and change everything. A tenant member sees only the objects of its
tenants: querysets (changelists, change forms, inlines, history, custom views, search),
foreign-key and many-to-many choices, related list filters and actions are all cut to
them, and another tenant's object answers 404 (its existence is not confirmed). Viewers
read; admins of a tenant change its objects. Secret fields are masked wherever a form is
read-only, for everyone. Below every app: the roles are `kernel.roles`, and an app names
its own models' paths to their tenant (`TenantScoped.tenant_path`, `declare_tenant_path`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path
from django.db.models import Model, QuerySet
from django.forms import Field
from django.http import Http404, HttpRequest

from kernel.masking import masked
from kernel.roles import ADMIN, can_manage, can_view, is_operator, tenant_ids

if TYPE_CHECKING:  # a mixin of ModelAdmins is one to the type checker, a plain class at run time
    from django.contrib.admin import ModelAdmin as AdminMixin
else:
    AdminMixin = object

SHARED = None  # a tenant_path of None: one list every member may choose from (a catalog)
# `tenant_path` of models whose admin is not TenantScoped, by label (`declare_tenant_path`).
KNOWN_TENANT_PATHS: dict[str, str | None] = {}
_MASKED: dict[str, Callable[[Any], str]] = {}


def declare_tenant_path(label: str, path: str | None) -> None:
    """Say how a model ("app.Model") leads to its tenant where no TenantScoped admin of it
    says so (its app's admin module declares it as it is imported)."""
    KNOWN_TENANT_PATHS[label] = path


def tenant_path_of(model: type[Model], admin_site: admin.AdminSite) -> str | None:
    """The lookup from `model` to its tenant ("" when nobody but operators may pick it)."""
    model_admin = admin_site._registry.get(model)
    if isinstance(model_admin, TenantScoped):
        return model_admin.tenant_path
    if model._meta.label in KNOWN_TENANT_PATHS:
        return KNOWN_TENANT_PATHS[model._meta.label]
    names = {field.name for field in model._meta.get_fields()}
    if "tenant" in names:
        return "tenant"
    if "toolbox" in names:
        return "toolbox__tenant"
    return ""


def scoped(queryset: QuerySet[Any], path: str | None, ids: Iterable[int]) -> QuerySet[Any]:
    if path is SHARED:
        return queryset
    if not path:
        return queryset.none()
    return queryset.filter(**{f"{path}__in": list(ids)})


def tenant_id_of(obj: Model, path: str | None) -> int | None:
    """Follow `path` ("pk", "tenant", "toolbox__tenant") from an object to its tenant's id."""
    if not path:
        return None
    if path == "pk":
        return obj.pk
    *hops, last = path.split("__")
    for hop in hops:
        obj = getattr(obj, hop, None)
        if obj is None:
            return None
    return getattr(obj, f"{last}_id", None)


def masked_display(field: str) -> Callable[[Any], str]:
    """A read-only column showing a secret map's names, never its values."""
    if field not in _MASKED:

        @admin.display(description=field)
        def show(obj: Any) -> str:
            return masked(getattr(obj, field, None))

        show.__name__ = f"{field}_masked"
        _MASKED[field] = show
    return _MASKED[field]


def _swap(fields: Sequence[Any], secrets: Sequence[str]) -> list[Any]:
    def one(name: Any) -> Any:
        if isinstance(name, (list, tuple)):
            return tuple(one(item) for item in name)
        return masked_display(name) if name in secrets else name

    return [one(name) for name in fields]


class TenantScoped(AdminMixin):
    """Mix into a ModelAdmin or an InlineModelAdmin, before the admin class.

    `tenant_path`: the lookup from this admin's model to its tenant ("pk" for Tenant,
    "tenant", "toolbox__tenant"; None for a shared list every member reads).
    `members_may`: what a tenant admin may do beyond viewing ("add", "change", "delete").
    `operator_fields`: fields only operators may change (read-only for members).
    `secret_fields`: maps of secret values, shown masked on every read-only form.
    """

    tenant_path: str | None = "tenant"
    members_may: frozenset[str] = frozenset({"add", "change", "delete"})
    operator_fields: tuple[str, ...] = ()
    secret_fields: tuple[str, ...] = ()

    # --- whose objects ---------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if is_operator(request.user):
            return queryset
        return scoped(queryset, self.tenant_path, tenant_ids(request.user))

    def _get_obj_does_not_exist_redirect(self, request: HttpRequest, opts: Any, object_id: Any):
        """Django redirects to the index for a missing object; out of scope is missing."""
        raise Http404(f"No {opts.verbose_name} with this ID.")

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        """Out of scope is missing, and missing is 404 before any permission is asked
        (Django would answer 403 to a POST, or redirect to the index)."""
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404(f"No {self.model._meta.verbose_name} with this ID.")
        return obj

    def get_object_or_404(self, request: HttpRequest, object_id: Any) -> Any:
        """For custom views (reveal, revoke): the object if in the user's scope, else 404."""
        return self.get_object(request, str(object_id))

    def _tenant_of(self, obj: Model | None) -> int | None:
        """The tenant an object decision is about: the object's own, or for an inline its
        parent's (`obj` is then the parent)."""
        if obj is None:
            return None
        if isinstance(self, admin.options.InlineModelAdmin):
            return tenant_id_of(obj, tenant_path_of(type(obj), self.admin_site))
        return tenant_id_of(obj, self.tenant_path)

    # --- what they may do ------------------------------------------------------------

    def _member_may(self, request: HttpRequest, what: str, obj: Model | None) -> bool:
        if what not in self.members_may:
            return False
        if obj is None:
            return bool(tenant_ids(request.user, (ADMIN,)))
        return can_manage(request.user, self._tenant_of(obj))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_operator(request.user) or bool(tenant_ids(request.user))

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        if is_operator(request.user):
            return True
        if obj is None:
            return bool(tenant_ids(request.user))
        return can_view(request.user, self._tenant_of(obj))

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        # ModelAdmin passes no object; an inline passes its parent.
        return is_operator(request.user) or self._member_may(request, "add", obj)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return is_operator(request.user) or self._member_may(request, "change", obj)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return is_operator(request.user) or self._member_may(request, "delete", obj)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        """A member's action acts only on the selected objects of tenants it administers."""
        actions = super().get_actions(request)
        if is_operator(request.user):
            return actions
        ids = tenant_ids(request.user, (ADMIN,))

        def within(func: Callable[..., Any]) -> Callable[..., Any]:
            def action(model_admin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
                return func(model_admin, request, scoped(queryset, self.tenant_path, ids))

            return action

        return {
            key: (within(func), name, description)
            for key, (func, name, description) in actions.items()
        }

    # --- what they see in forms and filters ------------------------------------------

    def _read_only(self, request: HttpRequest, obj: Model | None) -> bool:
        return obj is not None and not self.has_change_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        fieldsets = super().get_fieldsets(request, obj)
        if not (self.secret_fields and self._read_only(request, obj)):
            return fieldsets
        return [
            (name, {**options, "fields": _swap(options["fields"], self.secret_fields)})
            for name, options in fieldsets
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        readonly = list(super().get_readonly_fields(request, obj))
        if not is_operator(request.user):
            readonly += [name for name in self.operator_fields if name not in readonly]
        if self.secret_fields and self._read_only(request, obj):
            readonly += [masked_display(name) for name in self.secret_fields]
        return readonly

    def _scope_choices(self, field: Field | None, model: type[Model], request: HttpRequest):
        if field is None or is_operator(request.user) or not hasattr(field, "queryset"):
            return field
        path = tenant_path_of(model, self.admin_site)
        field.queryset = scoped(field.queryset, path, tenant_ids(request.user, (ADMIN,)))
        return field

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        return self._scope_choices(field, db_field.related_model, request)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any):
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        return self._scope_choices(field, db_field.related_model, request)

    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        """Related filters list only what the member's own objects point to."""
        filters = list(super().get_list_filter(request))
        if is_operator(request.user):
            return filters
        return [
            (item, admin.RelatedOnlyFieldListFilter)
            if isinstance(item, str) and get_fields_from_path(self.model, item)[-1].is_relation
            else item
            for item in filters
        ]
