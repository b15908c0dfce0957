"""Admin forms: write-only secrets and API key scopes within their tenant."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from kernel.masking import MASK
from kernel.named_paths import named_paths
from kernel.pins import TRUST_FIRST
from kernel.tenant_paths import PathRefused, tenant_roots
from toolboxes import key_limits, server_status
from toolboxes.admin.tool_filters import ToolFiltersField
from toolboxes.admin.widgets import LinesField, NameValueRows, ParametersWidget, SecretMapField
from toolboxes.destinations import destination_of, moved, type_again
from toolboxes.models import (
    ApiKey,
    AuthMode,
    CatalogEntry,
    PinningPolicy,
    Server,
    Transport,
    default_tool_filters,
)
from toolboxes.server_fields import ENTRY_ONLY_FIELDS, SECRET_FORM_FIELDS

__all__ = ["ApiKeyForm", "CatalogEntryForm", "ServerForm", "TenantServerForm"]


class SecretMapsForm(forms.ModelForm):
    """Maps of secret values (`secret_maps`), write-only: their names shown with the mask;
    a value posted back as the mask keeps the stored one (`_kept_secrets` names them)."""

    secret_maps: tuple[str, ...] = ()
    _kept_secrets: dict[str, set[str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.secret_maps:
            self.initial[field] = {name: MASK for name in self._stored(field)}
            if field in self.fields:
                self.fields[field].widget.stored = set(self._stored(field))

    def _clean_fields(self) -> None:
        self._kept_secrets = {}
        super()._clean_fields()

    def _stored(self, field: str) -> dict[str, str]:
        if self.instance.pk is None:
            return {}
        return getattr(self.instance, field) or {}

    def _clean_secret(self, field: str) -> dict[str, Any]:
        value = self.cleaned_data.get(field)
        if value in (None, ""):
            return {}
        if not isinstance(value, dict):
            raise ValidationError("Enter a JSON object of names to values.")
        stored = self._stored(field)
        result = {}
        for name, item in value.items():
            if item == MASK:
                if name not in stored:
                    raise ValidationError(f"Enter a value for '{name}'.")
                item = stored[name]
                self._kept_secrets.setdefault(field, set()).add(name)
            result[name] = item
        return result

    def clean_oauth_client(self) -> dict[str, Any]:
        return self._clean_secret("oauth_client")


class CatalogEntryForm(SecretMapsForm):
    """An entry's OAuth client: its secret write-only, as a server's is."""

    secret_maps = ("oauth_client",)
    oauth_client = SecretMapField(
        label="OAuth client", required=False, widget=NameValueRows(name_label="name")
    )

    class Meta:
        model = CatalogEntry
        fields = "__all__"


class ServerForm(SecretMapsForm):
    secret_maps = SECRET_FORM_FIELDS
    # Not required: a form that leaves it out (an older client) keeps the default.
    pinning = forms.TypedChoiceField(
        label="tool pinning",
        choices=PinningPolicy.choices,
        required=False,
        empty_value=TRUST_FIRST,
        help_text="New or changed tool definitions wait for an admin's approval.",
    )
    parameter_values = forms.Field(
        label="parameters",
        required=False,
        widget=ParametersWidget,
        help_text="The catalog entry's parameters. Secret values are never shown.",
    )
    args = LinesField(label="arguments", required=False)
    env = SecretMapField(label="environment", required=False)
    headers = SecretMapField(
        label="headers", required=False, widget=NameValueRows(name_label="header")
    )
    # Not required either: a form without it (an older client) signs in with none (or the
    # headers it gives, which the model calls static headers).
    auth = forms.TypedChoiceField(
        label="sign-in", choices=AuthMode.choices, required=False, empty_value=AuthMode.NONE
    )
    oauth_client = SecretMapField(
        label="OAuth client", required=False, widget=NameValueRows(name_label="name")
    )
    # A new server's form starts from the model's default (all tools): Django takes no
    # initial values from a new instance, and this field replaces the model's own.
    tool_filters = ToolFiltersField(
        label="tools exposed", required=False, initial=default_tool_filters
    )

    class Meta:
        model = Server
        fields = "__all__"
        widgets = {
            "mounts": forms.Textarea(attrs={"rows": 2}),
            "egress_allow": forms.Textarea(attrs={"rows": 1}),
            "host_ports": forms.Textarea(attrs={"rows": 1}),
        }

    class Media:
        js = ["toolboxes/server_form.js", "toolboxes/server_source.js"]
        css = {"all": ["toolboxes/server_form.css"]}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "tool_filters" in self.fields and self.instance.pk is not None:
            known = server_status.offered_names(self.instance) is not None
            widget = self.fields["tool_filters"].widget
            widget.offered = list(self.instance.last_check_tools or []) if known else None
            if self.instance.last_check_ok is False:
                widget.failed_reason = self.instance.last_check_reason
        for field in self.fields.values():  # the help is said once, above the fields
            field.help_text = ""
        self._setup_parameters()

    # Catalog-made servers: the chosen entry's parameters

    def _chosen_entry(self) -> CatalogEntry | None:
        """The entry posted, else the one asked for (`?catalog_entry=`), else the stored one."""
        if self.is_bound:
            chosen = self.data.get(self.add_prefix("catalog_entry"))
            if "catalog_entry" in self.fields and self.fields["catalog_entry"].disabled:
                chosen = self.instance.catalog_entry_id
        else:
            chosen = self.initial.get("catalog_entry", self.instance.catalog_entry_id)
        if isinstance(chosen, CatalogEntry):
            chosen = chosen.pk
        if not chosen:
            return None
        try:
            return CatalogEntry.objects.prefetch_related("parameters").filter(pk=chosen).first()
        except (ValueError, TypeError):
            return None

    def _entry_unchanged(self, entry: CatalogEntry | None) -> bool:
        return (
            entry is not None
            and self.instance.pk is not None
            and (self.instance.catalog_entry_id == entry.pk)
        )

    def _setup_parameters(self) -> None:
        if "parameter_values" not in self.fields:
            return
        self._entry = self._chosen_entry()
        widget = self.fields["parameter_values"].widget
        widget.parameters = list(self._entry.parameters.all()) if self._entry else []
        widget.entry_chosen = self._entry is not None
        # A secret stays with its server only while the server stays on the same entry.
        kept = self.instance.secret_parameters if self._entry_unchanged(self._entry) else {}
        widget.stored_secrets = set(kept or {})
        self.initial["parameter_values"] = dict(self.instance.parameters or {})

    def clean_parameter_values(self) -> dict[str, str]:
        value = self.cleaned_data.get("parameter_values") or {}
        entry = getattr(self, "_entry", None)
        if entry is None:
            return {}
        kept = self.instance.secret_parameters if self._entry_unchanged(entry) else {}
        result = {}
        for parameter in entry.parameters.all():
            given = value.get(parameter.name, "")
            if parameter.secret and not given and parameter.name in (kept or {}):
                given = kept[parameter.name]  # left empty: keep the stored secret
                self._kept_secrets.setdefault("parameter_values", set()).add(parameter.name)
            if given:
                result[parameter.name] = given
        return result

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("catalog_entry"):
            self._drop_own_server(cleaned)
        if "parameter_values" in self.fields:
            entry = cleaned.get("catalog_entry", self.instance.catalog_entry)
            if entry is None:
                self.instance.parameters, self.instance.secret_parameters = {}, {}
            else:
                values = cleaned.get("parameter_values") or {}
                self.instance.parameters = values
                self.instance.secret_parameters = {}
        self._check_named_paths(cleaned)
        return cleaned

    def _drop_own_server(self, cleaned: dict[str, Any]) -> None:
        """A server made from an entry runs the entry: what an operator typed for a server
        of their own (hidden once an entry is picked) is not kept."""
        for field in ENTRY_ONLY_FIELDS:
            value = cleaned.get(field)
            if field in self.fields and value:
                cleaned[field] = type(value)()

    def _check_named_paths(self, cleaned: dict[str, Any]) -> None:
        """A raw server's absolute arguments and working directory are bound only where the
        sandbox may show them (`named_paths`, as each spawn checks): said here, rather than
        by a server that cannot start."""
        if "args" not in self.fields or cleaned.get("catalog_entry"):
            return
        if cleaned.get("transport", Transport.STDIO) != Transport.STDIO:
            return
        toolbox = cleaned.get("toolbox") or getattr(self.instance, "toolbox", None)
        tenant = getattr(toolbox, "tenant", None)
        if tenant is None:
            return
        roots = tenant_roots(tenant.slug)
        mounts = [
            item["path"]
            for item in cleaned.get("mounts") or []
            if isinstance(item, dict) and isinstance(item.get("path"), str)
        ]
        protected = settings.WORKBENCH_SANDBOX_PROTECTED_PATHS
        cwd = cleaned.get("cwd") or ""
        args = [
            arg for arg in cleaned.get("args") or [] if isinstance(arg, str)
        ]  # else: args' own error
        for field, texts in (
            ("args", args),
            ("cwd", [cwd] if isinstance(cwd, str) and cwd else []),
        ):
            try:
                named_paths(texts, None, protected, roots=roots, mounts=mounts)
            except PathRefused as exc:
                self.add_error(field, str(exc))

    def _update_errors(self, errors: ValidationError) -> None:
        """Model errors on fields this form does not show (a tenant admin's form has no
        `command`) are shown on the form; parameter errors beside the parameters."""
        if hasattr(errors, "error_dict"):
            moved: dict[str, list[Any]] = {}
            for field, messages in errors.error_dict.items():
                if field == "parameters" and "parameter_values" in self.fields:
                    target = "parameter_values"
                elif field in self.fields or field == NON_FIELD_ERRORS:
                    target = field
                else:
                    target = NON_FIELD_ERRORS
                moved.setdefault(target, []).extend(messages)
            errors = ValidationError(moved)
        super()._update_errors(errors)

    def clean_env(self) -> dict[str, Any]:
        return self._clean_secret("env")

    def clean_headers(self) -> dict[str, Any]:
        return self._clean_secret("headers")

    # A secret must not follow a server to a new destination (`toolboxes.destinations`):
    # a stored value kept (the mask, an empty secret parameter) while the entry, transport,
    # command, args or URL change must be typed again.
    def _post_clean(self) -> None:
        super()._post_clean()  # the instance as the form would save it
        if self.instance.pk is None or not any(self._kept_secrets.values()):
            return
        stored = Server.objects.select_related("catalog_entry").filter(pk=self.instance.pk)
        before = stored.first()
        what = moved(destination_of(before), destination_of(self.instance)) if before else ""
        if not what:
            return
        for field, names in self._kept_secrets.items():
            for name in sorted(names):
                self.add_error(field, f"'{name}' {type_again(what)}.")


class ApiKeyForm(forms.ModelForm):
    """A key's scope and its own limits; `operator` (set per request by the admin) says
    whether they may be raised above the installation's (`toolboxes.key_limits`)."""

    operator = False

    class Meta:
        model = ApiKey
        fields = ["tenant", "label", "owner", "toolboxes", "expires_at", *key_limits.NAMES]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for limit in key_limits.FIELDS:
            if limit.name in self.fields:
                self.fields[limit.name].help_text = key_limits.help_text(
                    limit, operator=self.operator
                )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        stored = {name: getattr(self.instance, name) for name in key_limits.NAMES}
        refused = key_limits.refusals(cleaned, stored, operator=self.operator)
        for name, message in refused.items():
            self.add_error(name, message)
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        toolboxes = cleaned.get("toolboxes") or []
        foreign = [
            str(toolbox) for toolbox in toolboxes if tenant and toolbox.tenant_id != tenant.pk
        ]
        if foreign:
            self.add_error(
                "toolboxes",
                f"These toolboxes belong to another tenant: {', '.join(foreign)}.",
            )
        return cleaned


class TenantServerForm(ServerForm):
    """A tenant admin's server form: a server comes from the catalog (its entry must be
    chosen); a raw server an operator made keeps its entry field read-only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields.get("catalog_entry")
        if field is None:
            return
        if self.instance.pk is not None and self.instance.catalog_entry_id is None:
            field.disabled = True
            self._setup_parameters()
        else:
            field.required = True
